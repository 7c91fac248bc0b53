//! The `hookbox` command; see [`hookbox::cli`].

fn main() -> std::process::ExitCode {
    hookbox::cli::main(std::env::args_os())
}
