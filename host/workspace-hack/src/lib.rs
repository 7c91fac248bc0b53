//! Nothing: this crate's dependencies, with the union of the features any
//! build of the workspace turns on, are the point (docs/ci.md).
