//! `hookbox._native`: the extension module under the `hookbox` Python
//! package. A thin skin over the core and the adapter layer; the Python
//! package around it (`python/hookbox`) adds the framework guards, whose
//! only own code is the mapping into each framework's terms.
//!
//! | Python | Rust underneath |
//! |---|---|
//! | `Stack.from_directory(dir)` | [`hookbox_adapter::binding::Stack::directory`]: hot-reloaded, each run pinned to the snapshot it started on |
//! | `Stack.from_files(paths)` | [`hookbox_adapter::binding::Stack::files`]: one fixed stack |
//! | `stack.start_run()` | [`hookbox_adapter::binding::Stack::start_run`]: a session on the newest snapshot |
//! | `run.send(event)` | [`hookbox_adapter::Door::decide`], the GIL released; a fail-closed raises `FailedClosed` |
//! | `run.tool_call(...)` | [`hookbox_adapter::Door::tool_call`]; a stop raises `FailedClosed` or `Terminated` |
//! | `run.tool_result(...)` | [`hookbox_adapter::Door::tool_result`]: a result of any shape, the rewrite in that shape |
//! | `run.completion_call(...)` | [`hookbox_adapter::Door::completion_call`]; the verdict's `system()` and `require_only()` are [`hookbox_adapter::verdict::Request`]'s |
//! | `run.end(...)` | [`hookbox_adapter::Door::end`]: a stop the framework guard decides, replayed like a guard's |
//!
//! Every guest call releases the GIL, so Python threads (and `asyncio`,
//! through `asyncio.to_thread`) drive runs at once. A guest call is bounded
//! by its plugin's deadline, so Ctrl-C is seen as soon as the call returns.

mod errors;
mod finite;
mod run;
mod stack;
mod text;

use pyo3::prelude::*;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<stack::Stack>()?;
    m.add_class::<run::Run>()?;
    m.add_class::<run::Decision>()?;
    m.add_class::<run::ToolCallVerdict>()?;
    m.add_class::<run::ToolResultVerdict>()?;
    m.add_class::<run::RequestVerdict>()?;
    m.add("HOST", hookbox::HOST)?;
    Ok(())
}
