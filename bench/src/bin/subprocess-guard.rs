//! The benchmarks' guard as a command hook: an event (JSON) on stdin, the
//! flow (JSON) on stdout.

fn main() -> anyhow::Result<()> {
    hookbox_bench::subprocess_main()
}
