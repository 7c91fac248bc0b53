//! hookbox's integration tests: one binary, one module per feature.

mod support;
mod wat;

mod fail_closed;
mod loading;
mod isolation;
mod examples;
