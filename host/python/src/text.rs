//! A Python `str` as Rust text. A `str` can hold what UTF-8 cannot: a lone
//! surrogate (a file name that was not UTF-8, decoded with
//! `surrogateescape`). No guard could read such text, so it is refused as
//! `InvalidEvent`, naming what carried it, rather than a bare
//! `UnicodeEncodeError` out of the conversion.

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::errors;

/// `value`, a `str`, as text; `what` names it in the error.
///
/// # Errors
/// `TypeError` for a value that is not a `str`; `InvalidEvent` for one
/// that holds a lone surrogate.
pub fn text(value: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    let py = value.py();
    let string = value.cast::<PyString>()?;
    string.to_str().map(str::to_owned).map_err(|_| {
        errors::invalid(
            py,
            format!(
                "{what} holds text that is not valid Unicode (a lone surrogate, such as a file name that was not UTF-8), which no guard could read; decode it with errors='replace' first"
            ),
        )
    })
}

/// An argument that must be text: `str`, refused as [`text`] says.
pub struct Text(pub String);

impl<'py> FromPyObject<'_, 'py> for Text {
    type Error = PyErr;

    fn extract(value: Borrowed<'_, 'py, PyAny>) -> PyResult<Text> {
        text(&value, "a text argument").map(Text)
    }
}
