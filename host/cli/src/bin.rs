//! The `hookbox` command; see the `hookbox_cli` library.

fn main() -> std::process::ExitCode {
    hookbox_cli::main(std::env::args_os())
}
