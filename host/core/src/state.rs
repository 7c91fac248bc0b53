//! What a guest's store holds for one run: its limiter, its config, the
//! run-scoped scratchpad, its log budget, and (built on first use) an empty
//! WASI whose stdout and stderr go to the log. The host imports
//! ([`crate::imports`]) read and write it; nothing else does. What an
//! entry and a log line cost is counted here, where it is kept.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use wasmtime::component::ResourceTable;
use wasmtime_wasi::p2::pipe::MemoryOutputPipe;
use wasmtime_wasi::{
    HostMonotonicClock, HostWallClock, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView,
};

use crate::clock::CallClock;
use crate::limits::{Counts, Limiter, Limits};

/// What a scratchpad entry costs beyond its key and value: the host's own
/// bookkeeping per entry, so many tiny keys cannot cost the host far more
/// memory than the quota says.
pub(crate) const SCRATCHPAD_ENTRY_COST: usize = 64;

/// What an entry counts against the scratchpad quota: its key and value as
/// a session store writes them (JSON strings, escapes and quotes counted),
/// and its bookkeeping. The quota is then the one bound on what a plugin
/// keeps, in memory and on disk alike: a session store never holds more
/// than its plugins' quotas allowed them to write.
pub(crate) fn entry_cost(key: &str, value: &str) -> usize {
    stored_len(key) + stored_len(value) + SCRATCHPAD_ENTRY_COST
}

/// The bytes `text` takes as a JSON string, quotes included, as serde_json
/// writes it: `"` and `\` and the five short escapes take two bytes, the
/// other control characters six (`\u0001`).
fn stored_len(text: &str) -> usize {
    let escaped: usize = text
        .bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum();
    escaped + 2
}

/// What a log line costs beyond its text: an empty message is not free.
pub(crate) const LOG_LINE_COST: usize = 64;

/// `text` as one line that is safe to print: line breaks and every other
/// control character but tab escaped (`\n`, `\u{1b}`), so a guest can
/// neither forge a log line nor drive the terminal.
pub(crate) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(|c| c.is_control() && c != '\t') {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push('\t'),
            c if c.is_control() => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out.into()
}

/// What a guest's store holds: its limits, its config and run-scoped state.
pub(crate) struct PluginState {
    limiter: Limiter,
    pub(crate) name: Arc<str>,
    pub(crate) run_id: Box<str>,
    pub(crate) config: Arc<BTreeMap<String, String>>,
    pub(crate) scratchpad: HashMap<String, String>,
    pub(crate) scratchpad_used: usize,
    pub(crate) scratchpad_limit: usize,
    pub(crate) log_used: usize,
    pub(crate) log_limit: usize,
    pub(crate) log_message_bytes: usize,
    /// When the call into the guest now running began (its deadline's
    /// clock).
    pub(crate) call: CallClock,
    /// Built on first use: guests without WASI imports never pay for it.
    wasi: Option<Box<WasiState>>,
}

/// WASI's clocks for guests: they stand still at zero, so a guest learns
/// nothing of the host's time and cannot time anything (a timing channel
/// the fewer). Deadlines are the host's, on the epoch, not these clocks.
struct FrozenClock;

impl HostWallClock for FrozenClock {
    fn resolution(&self) -> std::time::Duration {
        std::time::Duration::from_secs(1)
    }
    fn now(&self) -> std::time::Duration {
        std::time::Duration::ZERO
    }
}

impl HostMonotonicClock for FrozenClock {
    fn resolution(&self) -> u64 {
        1_000_000_000
    }
    fn now(&self) -> u64 {
        0
    }
}

struct WasiState {
    ctx: WasiCtx,
    table: ResourceTable,
    stdout: MemoryOutputPipe,
    stderr: MemoryOutputPipe,
    /// Bytes of stdout and stderr already sent to the log.
    logged: [usize; 2],
}

impl PluginState {
    /// A fresh state for one run of plugin `name`, its scratchpad holding
    /// `seed` (what the plugin kept earlier in a session that spans
    /// processes).
    ///
    /// # Errors
    /// The size of `seed` when it is past the plugin's scratchpad quota.
    pub(crate) fn new(
        name: &Arc<str>,
        run_id: &str,
        config: &Arc<BTreeMap<String, String>>,
        (limits, counts): (&Limits, Counts),
        seed: BTreeMap<String, String>,
    ) -> Result<PluginState, usize> {
        let scratchpad_used: usize = seed.iter().map(|(k, v)| entry_cost(k, v)).sum();
        if scratchpad_used > limits.scratchpad_bytes {
            return Err(scratchpad_used);
        }
        Ok(PluginState {
            limiter: Limiter::new(limits, counts),
            config: config.clone(),
            run_id: run_id.into(),
            name: name.clone(),
            scratchpad: seed.into_iter().collect(),
            scratchpad_used,
            scratchpad_limit: limits.scratchpad_bytes,
            log_used: 0,
            log_limit: limits.log_bytes_per_run,
            log_message_bytes: limits.log_message_bytes,
            call: CallClock::start(),
            wasi: None,
        })
    }

    /// The store's resource limiter (for `Store::limiter`).
    pub(crate) fn limiter(&mut self) -> &mut Limiter {
        &mut self.limiter
    }

    /// What the guest keeps in its scratchpad so far, by key.
    pub(crate) fn scratchpad(&self) -> BTreeMap<String, String> {
        self.scratchpad
            .iter()
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect()
    }

    /// Charges a log line of `bytes` to the run's log budget (its text plus
    /// [`LOG_LINE_COST`]); false when the budget is spent.
    pub(crate) fn charge_log(&mut self, bytes: usize) -> bool {
        self.log_used = self
            .log_used
            .saturating_add(bytes)
            .saturating_add(LOG_LINE_COST);
        self.log_used <= self.log_limit
    }

    /// Sends what the guest wrote to stdout/stderr since the last call to the
    /// log, each line charged like a `log` call; returns whether the guest
    /// spent its log budget (or filled a pipe).
    pub(crate) fn drain_output(&mut self) -> bool {
        let Some(wasi) = self.wasi.as_deref_mut() else {
            return false;
        };
        let mut spent = false;
        let mut lines = Vec::new();
        for (i, pipe) in [&wasi.stdout, &wasi.stderr].into_iter().enumerate() {
            let contents = pipe.contents();
            spent |= contents.len() >= self.log_limit;
            if contents.len() > wasi.logged[i] {
                let text = String::from_utf8_lossy(&contents[wasi.logged[i]..]).into_owned();
                lines.push((if i == 0 { "stdout" } else { "stderr" }, text));
                wasi.logged[i] = contents.len();
            }
        }
        for (stream, text) in lines {
            for line in text.lines() {
                if !self.charge_log(line.len()) {
                    return true;
                }
                let line = one_line(line);
                tracing::info!(target: "hookbox::guest", plugin = &*self.name, stream, "{line}");
            }
        }
        spent
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        let limit = self.log_limit;
        let wasi = self.wasi.get_or_insert_with(|| {
            let stdout = MemoryOutputPipe::new(limit);
            let stderr = MemoryOutputPipe::new(limit);
            // Present but empty: no preopens, no environment, no arguments,
            // no network; stdio goes to the log.
            let ctx = WasiCtxBuilder::new()
                .stdout(stdout.clone())
                .stderr(stderr.clone())
                .allow_tcp(false)
                .allow_udp(false)
                .allow_ip_name_lookup(false)
                .wall_clock(FrozenClock)
                .monotonic_clock(FrozenClock)
                .build();
            Box::new(WasiState {
                ctx,
                table: ResourceTable::new(),
                stdout,
                stderr,
                logged: [0, 0],
            })
        });
        WasiCtxView {
            ctx: &mut wasi.ctx,
            table: &mut wasi.table,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_costs_what_serde_json_writes_of_it() {
        let every_byte: String = (0u8..0x80).map(char::from).collect();
        for text in [
            "",
            "plain",
            "\"\\",
            "\u{1}\u{1f}\u{7f}",
            "é→😀",
            &every_byte,
        ] {
            let written = serde_json::to_string(text).unwrap().len();
            assert_eq!(stored_len(text), written, "{text:?}");
        }
        // A session store writes `"key":"value"` and a comma: well within
        // the entry's bookkeeping.
        let pad = BTreeMap::from([("k\n".to_owned(), "\u{1}".to_owned())]);
        let written = serde_json::to_string(&pad).unwrap().len();
        assert!(written <= entry_cost("k\n", "\u{1}"));
    }
}
