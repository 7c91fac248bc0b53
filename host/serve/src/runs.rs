//! The live runs: random ids, each bound to the client that made it, idle
//! ones expired.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hookbox::audit::DecisionLog;
use hookbox::watch::Snapshot;
use hookbox_adapter::Door;

use crate::auth::Client;
use crate::metrics::{Metrics, RunObserver};

/// One live run (its instances and its context, behind the adapter
/// layer's [`Door`]), and when it was last used.
pub(crate) struct LiveRun {
    pub door: Door,
    pub generation: u64,
    /// The instance slots it holds: one per plugin of its snapshot.
    instances: usize,
    last_used: Mutex<Instant>,
    /// The run's span, open while the run lives: each decision's span is a
    /// child of it.
    pub span: tracing::Span,
}

impl LiveRun {
    /// A run on `snapshot`, holding an instance slot per plugin.
    ///
    /// # Errors
    /// Why not ([`hookbox::Busy`]: the runtime's instance slots are taken).
    fn new(snapshot: &Snapshot, id: &str, watch: &Watch) -> Result<Arc<LiveRun>, String> {
        let mut run = snapshot
            .stack
            .try_start_run(id)
            .map_err(|e| e.to_string())?;
        // Every answer of every plugin: per-plugin metrics, and the
        // decision log if there is one.
        let log = watch
            .log
            .as_ref()
            .map(|log| log.for_run(snapshot.generation, snapshot.digests.clone()));
        run.observe(Arc::new(RunObserver::new(watch.metrics.clone(), log)));
        let span = tracing::info_span!(
            parent: None,
            "hookbox.run",
            otel.name = "hookbox.run",
            otel.kind = "server",
            gen_ai.conversation.id = id,
            hookbox.surface = "serve",
            hookbox.generation = snapshot.generation,
        );
        Ok(Arc::new(LiveRun {
            door: Door::around(run, snapshot.stack.subscriptions()),
            generation: snapshot.generation,
            instances: snapshot.stack.instances_per_run(),
            last_used: Mutex::new(Instant::now()),
            span,
        }))
    }

    /// Marks the run used now.
    pub fn touch(&self) {
        if let Ok(mut last) = self.last_used.lock() {
            *last = Instant::now();
        }
    }
}

/// Live runs by client and id: a client sees only its own.
pub(crate) struct Runs {
    table: Mutex<HashMap<(Client, String), Arc<LiveRun>>>,
    watch: Watch,
    /// The most live runs one client may have: its share of the server's.
    share: usize,
    /// How many clients share the server (tokens, or the one without).
    clients: usize,
}

/// Who is told of every answer in a run.
struct Watch {
    metrics: Arc<Metrics>,
    log: Option<Arc<DecisionLog>>,
}

impl Runs {
    /// No runs yet; each run to come reports its answers to `metrics` and
    /// `log`. Each of `clients` keeps an equal share of the server's `max_runs`
    /// runs and of the runtime's instance slots.
    pub fn new(
        metrics: Arc<Metrics>,
        log: Option<Arc<DecisionLog>>,
        max_runs: usize,
        clients: usize,
    ) -> Runs {
        let clients = clients.max(1);
        Runs {
            table: Mutex::default(),
            watch: Watch { metrics, log },
            share: (max_runs / clients).max(1),
            clients,
        }
    }

    /// Why `client` may not start one more run on `snapshot` in `table`:
    /// the server's `max` runs, or the client's share of the runs or of
    /// the instance slots.
    fn full(
        &self,
        table: &HashMap<(Client, String), Arc<LiveRun>>,
        client: &Client,
        snapshot: &Snapshot,
        max: usize,
    ) -> Option<String> {
        if table.len() >= max {
            return Some(format!(
                "{} runs are live, the most this server keeps; end some (DELETE /runs/ID) or retry later",
                table.len()
            ));
        }
        let own = table.iter().filter(|((c, _), _)| c == client);
        let (runs, instances) = own.fold((0, 0), |(n, i), (_, run)| (n + 1, i + run.instances));
        if runs >= self.share {
            return Some(format!(
                "this client has {runs} live runs, its share of the server's {max} (each token has an equal share); end some (DELETE /runs/ID) or retry later"
            ));
        }
        let needed = snapshot.stack.instances_per_run();
        let share = self.instance_share(snapshot);
        (instances + needed > share).then(|| {
            format!(
                "this client's runs hold {instances} plugin instances and a new run needs {needed}, past its share of {share} instance slots (each token has an equal share); end some runs (DELETE /runs/ID), retry later, or raise --max-instances"
            )
        })
    }

    /// The most live runs one client may have.
    pub fn share(&self) -> usize {
        self.share
    }

    /// The most instance slots one client's runs may hold on `snapshot`'s
    /// runtime.
    pub fn instance_share(&self, snapshot: &Snapshot) -> usize {
        (snapshot.stack.instance_slots().1 / self.clients).max(1)
    }

    /// Live runs and the instance slots they hold, by client number.
    pub fn per_client(&self) -> std::collections::BTreeMap<usize, (usize, usize)> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let mut counts = std::collections::BTreeMap::<usize, (usize, usize)>::new();
        for ((client, _), run) in table.iter() {
            let entry = counts.entry(client.0).or_default();
            entry.0 += 1;
            entry.1 += run.instances;
        }
        counts
    }

    /// A new run with a random id on `snapshot`.
    ///
    /// # Errors
    /// Why not, for the client.
    pub fn create(
        &self,
        client: &Client,
        snapshot: &Snapshot,
        max: usize,
    ) -> Result<String, String> {
        let id = random_id().ok_or("the system has no randomness for a run id; retry later")?;
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(why) = self.full(&table, client, snapshot, max) {
            return Err(why);
        }
        table.insert(
            (*client, id.clone()),
            LiveRun::new(snapshot, &id, &self.watch)?,
        );
        Ok(id)
    }

    /// A run on `snapshot` that no table keeps: one hook's, with a shared
    /// session store. Its answers are observed as every run's are.
    ///
    /// # Errors
    /// Why not (the runtime's instance slots are taken, or no id can be
    /// made).
    pub fn one_off(&self, snapshot: &Snapshot) -> Result<Arc<LiveRun>, String> {
        let id = random_id().ok_or("the system has no randomness for a run id; retry later")?;
        LiveRun::new(snapshot, &id, &self.watch)
    }

    /// The run `id` of `client`.
    pub fn get(&self, client: &Client, id: &str) -> Option<Arc<LiveRun>> {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.get(&(*client, id.to_owned())).cloned()
    }

    /// The run of `client`'s session `key` (and whether it is new), started
    /// on `snapshot` if there is none, or if `renew` and the session's run is
    /// on an older generation than the snapshot's.
    ///
    /// # Errors
    /// Why a new one cannot start: it would be one past `max`, the
    /// runtime's instance slots are taken, or no id can be made.
    pub fn session(
        &self,
        client: &Client,
        key: &str,
        snapshot: Arc<Snapshot>,
        renew: bool,
        max: usize,
    ) -> Result<(Arc<LiveRun>, bool), String> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let slot = (*client, key.to_owned());
        match table.get(&slot) {
            Some(live) if !(renew && live.generation != snapshot.generation) => {
                return Ok((live.clone(), false));
            }
            Some(_) => {
                table.remove(&slot);
            }
            None => {}
        }
        if let Some(why) = self.full(&table, client, &snapshot, max) {
            return Err(why);
        }
        let id = random_id().ok_or("the system has no randomness for a run id; retry later")?;
        let live = LiveRun::new(&snapshot, &id, &self.watch)?;
        table.insert(slot, live.clone());
        Ok((live, true))
    }

    /// Ends the run `id` of `client`.
    pub fn remove(&self, client: &Client, id: &str) -> Option<Arc<LiveRun>> {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        table.remove(&(*client, id.to_owned()))
    }

    /// Ends the runs idle for `ttl`; returns how many.
    pub fn expire(&self, ttl: Duration) -> usize {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let before = table.len();
        table.retain(|_, run| run.last_used.lock().is_ok_and(|t| t.elapsed() < ttl));
        before - table.len()
    }

    /// Live runs, and how many of them are on another generation than
    /// `generation`.
    pub fn counts(&self, generation: u64) -> (usize, usize) {
        let table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        let older = table
            .values()
            .filter(|r| r.generation != generation)
            .count();
        (table.len(), older)
    }
}

/// `run-` and 128 random bits in hex: nobody guesses another client's run.
/// `None` when the system has no randomness (no id then, rather than a
/// guessable one).
fn random_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("run-{hex}"))
}
