//! The host imports: `log`, `config` and `scratchpad`, the only capabilities
//! a guest gets, plus an empty WASI so guests built for wasm32-wasip2 link.

use wasmtime::StoreContextMut;
use wasmtime::component::{ComponentType, Lift, Linker, Lower};

use crate::error::Cause;
use crate::limits::LimitExceeded;
use crate::state::{LOG_LINE_COST, PluginState, entry_cost, one_line};

/// Package and version of the contract's interfaces.
const CONFIG: &str = "hookbox:hook/config@0.1.0";
const SCRATCHPAD: &str = "hookbox:hook/scratchpad@0.1.0";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ComponentType, Lift, Lower)]
#[component(enum)]
#[repr(u8)]
#[allow(dead_code, reason = "variants are made by lifting a guest's value")]
pub enum LogLevel {
    #[component(name = "trace")]
    Trace,
    #[component(name = "debug")]
    Debug,
    #[component(name = "info")]
    Info,
    #[component(name = "warn")]
    Warn,
    #[component(name = "error")]
    Error,
}

type Ctx<'a> = StoreContextMut<'a, PluginState>;

pub(crate) fn add_to_linker(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    linker.root().func_wrap(
        "log",
        |mut store: Ctx<'_>, (level, message): (LogLevel, String)| {
            log(store.data_mut(), level, &message)
        },
    )?;

    let mut config = linker.instance(CONFIG)?;
    config.func_wrap("get", |store: Ctx<'_>, (key,): (String,)| {
        Ok((store.data().config.get(&key).cloned(),))
    })?;
    config.func_wrap("entries", |store: Ctx<'_>, (): ()| {
        let entries: Vec<(String, String)> = store
            .data()
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok((entries,))
    })?;

    let mut scratchpad = linker.instance(SCRATCHPAD)?;
    scratchpad.func_wrap("get", |store: Ctx<'_>, (key,): (String,)| {
        Ok((store.data().scratchpad.get(&key).cloned(),))
    })?;
    scratchpad.func_wrap(
        "set",
        |mut store: Ctx<'_>, (key, value): (String, String)| {
            scratchpad_set(store.data_mut(), key, value)
        },
    )?;
    scratchpad.func_wrap("remove", |mut store: Ctx<'_>, (key,): (String,)| {
        let state = store.data_mut();
        if let Some(old) = state.scratchpad.remove(&key) {
            state.scratchpad_used -= entry_cost(&key, &old);
        }
        Ok(())
    })?;

    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    Ok(())
}

fn log(state: &mut PluginState, level: LogLevel, message: &str) -> wasmtime::Result<()> {
    if !state.charge_log(message.len()) {
        return Err(wasmtime::Error::new(LimitExceeded::new(
            Cause::Limit,
            format!(
                "logged more than {} bytes in one run (each line counts {LOG_LINE_COST} bytes more than it prints)",
                state.log_limit
            ),
        )));
    }
    let message = one_line(truncate(message, state.log_message_bytes));
    let plugin = &*state.name;
    let run = &*state.run_id;
    match level {
        LogLevel::Trace => tracing::trace!(target: "hookbox::guest", plugin, run, "{message}"),
        LogLevel::Debug => tracing::debug!(target: "hookbox::guest", plugin, run, "{message}"),
        LogLevel::Info => tracing::info!(target: "hookbox::guest", plugin, run, "{message}"),
        LogLevel::Warn => tracing::warn!(target: "hookbox::guest", plugin, run, "{message}"),
        LogLevel::Error => tracing::error!(target: "hookbox::guest", plugin, run, "{message}"),
    }
    Ok(())
}

fn scratchpad_set(state: &mut PluginState, key: String, value: String) -> wasmtime::Result<()> {
    let freed = state
        .scratchpad
        .get(&key)
        .map_or(0, |old| entry_cost(&key, old));
    let used = state.scratchpad_used - freed + entry_cost(&key, &value);
    if used > state.scratchpad_limit {
        return Err(wasmtime::Error::new(LimitExceeded::new(
            Cause::Limit,
            format!(
                "scratchpad would hold {used} bytes, past its quota of {} bytes",
                state.scratchpad_limit
            ),
        )));
    }
    state.scratchpad_used = used;
    state.scratchpad.insert(key, value);
    Ok(())
}

/// The longest prefix of `text` within `max` bytes that ends on a character
/// boundary.
fn truncate(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::truncate;
    use crate::state::one_line;

    #[test]
    fn a_message_stays_one_line_and_cannot_drive_the_terminal() {
        assert_eq!(one_line("plain\ttext"), "plain\ttext");
        assert_eq!(one_line("a\nforged line\r"), "a\\nforged line\\r");
        assert_eq!(one_line("\u{1b}]0;title\u{7}"), "\\u{1b}]0;title\\u{7}");
    }

    #[test]
    fn truncation_never_splits_a_character() {
        assert_eq!(truncate("héllo", 2), "h");
        assert_eq!(truncate("héllo", 3), "hé");
        assert_eq!(truncate("hi", 10), "hi");
    }
}
