//! The Python exceptions hookbox raises, defined in `hookbox/errors.py`
//! (with their docstrings) and raised from here with their fields set.

use hookbox::{FailClosed, Stopped};
use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `hookbox.errors.<class>(message, **fields)` as a Python exception.
fn raise(py: Python<'_>, class: &str, message: String, fields: &[(&str, String)]) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let class = py.import("hookbox.errors")?.getattr(class)?;
        let kwargs = PyDict::new(py);
        for (name, value) in fields {
            kwargs.set_item(name, value)?;
        }
        Ok(PyErr::from_value(class.call((message,), Some(&kwargs))?))
    })();
    made.unwrap_or_else(|e| e)
}

/// A run that failed closed: `FailedClosed(plugin, cause, detail)`.
pub fn failed_closed(py: Python<'_>, failure: &FailClosed) -> PyErr {
    raise(
        py,
        "FailedClosed",
        Stopped::FailedClosed(failure.clone()).reason(),
        &[
            ("plugin", failure.plugin.to_string()),
            ("cause", failure.cause.to_string()),
            ("detail", failure.detail.clone()),
        ],
    )
}

/// A run that ended: `FailedClosed`, or `Terminated(plugin, event, reason)`.
pub fn stopped(py: Python<'_>, stop: &Stopped) -> PyErr {
    match stop {
        Stopped::FailedClosed(failure) => failed_closed(py, failure),
        Stopped::Terminated {
            plugin,
            event,
            reason,
        } => raise(
            py,
            "Terminated",
            stop.reason(),
            &[
                ("plugin", plugin.clone()),
                ("event", event.name().to_owned()),
                ("reason", reason.clone()),
            ],
        ),
    }
}

/// Input hookbox cannot take: `InvalidEvent`, a `ValueError`.
pub fn invalid(py: Python<'_>, message: String) -> PyErr {
    raise(py, "InvalidEvent", message, &[])
}

/// A stack that could not load: `LoadError`.
pub fn load(py: Python<'_>, message: String) -> PyErr {
    raise(py, "LoadError", message, &[])
}
