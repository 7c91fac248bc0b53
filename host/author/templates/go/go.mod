module {{name}}

go 1.24
