//! hookbox's integration tests: one binary, one module per feature.

mod support;
mod wat;

mod audit;
mod browser;
mod cache;
mod cases;
mod conformance;
mod directory;
mod examples;
mod fail_closed;
mod guest_memory;
mod isolation;
mod loading;
mod matchers;
mod openai;
mod pins;
mod properties;
mod reload;
mod runner;
mod secrets;
mod serve;
mod shadow;
mod slots;
