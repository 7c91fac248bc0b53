// A build script, so that cargo takes the `[build-dependencies]` into
// account too.
fn main() {}
