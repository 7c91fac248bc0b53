module hookbox.dev/toolguard

go 1.24
