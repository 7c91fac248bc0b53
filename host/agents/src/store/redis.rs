//! Session state in Redis (or a server that speaks its protocol, such as
//! Valkey), shared by every instance of a deployment.
//!
//! A session is two keys, with its name in braces so a cluster keeps them
//! on one node: `hookbox:session:{NAME}` holds its state (JSON: the stack
//! it is pinned to and each plugin's scratchpad) and `...:lock` the token
//! of the call that holds it. Each call is two round trips, each one Lua
//! script that Redis runs atomically:
//!
//! 1. take: `SET lock TOKEN NX PX LEASE` (or find TOKEN there already)
//!    and, if so, `GET state`;
//!    otherwise the lock's remaining lease, and the call waits and tries
//!    again (for at most a lease);
//! 2. give back: only if the lock still holds this call's token, write the
//!    state (`SET ... PX MAX_AGE`, or only `PEXPIRE` when it is unchanged)
//!    and delete the lock. A call whose lease ran out (it took longer than
//!    the lease, or Redis lost the lock) writes nothing and fails: its
//!    update is refused, never lost silently, and the call blocks.
//!
//! So calls of one session take turns across every instance and none
//! loses another's update; a session idle past the age limit expires with
//! its key. Every command has a deadline ([`RedisStore::with_timeout`]):
//! a Redis that is down, slow or answering garbage is an error, and the
//! hook is blocked, never answered as if the session were new.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use redis::{Connection, Script, Value};

use super::{Saved, SessionBackend, SessionHold, StoreError, session_name};
use crate::Session;

/// Sessions' state in Redis.
#[derive(Clone)]
pub struct RedisStore {
    inner: Arc<Inner>,
}

#[derive(Clone)]
struct Inner {
    client: redis::Client,
    /// Where, without a password.
    place: String,
    /// Connections not in use.
    idle: Arc<Mutex<Vec<Connection>>>,
    timeout: Duration,
    lease: Duration,
    max_age: Duration,
    take: Script,
    give_back: Script,
    release: Script,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("place", &self.inner.place)
            .finish()
    }
}

/// The key whose presence says the store still holds what hookbox wrote
/// ([`RedisStore::init`]).
pub const EPOCH_KEY: &str = "hookbox:epoch";

const TAKE: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) or redis.call('GET', KEYS[1]) == ARGV[1] then
  return {1, redis.call('GET', KEYS[2])}
end
return {0, redis.call('PTTL', KEYS[1])}
";

const GIVE_BACK: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
if ARGV[2] == 'set' then
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[3])
else
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
end
redis.call('DEL', KEYS[1])
return 1
";

const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
";

impl RedisStore {
    /// How long one command may take, connecting included.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
    /// How long a call may hold its session; one that holds it longer
    /// loses it, and its save fails. A call waits for another call of its
    /// session at most this and one deadline.
    pub const DEFAULT_LEASE: Duration = Duration::from_secs(10);

    /// The store at `url`: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]`, or
    /// `rediss://` for TLS (verified against the system's roots, or
    /// `SSL_CERT_FILE`). Nothing is sent until a session is asked for.
    ///
    /// # Errors
    /// [`StoreError`] when the URL is not a Redis URL.
    pub fn open(url: &str) -> Result<RedisStore, StoreError> {
        RedisStore::open_with(url, None)
    }

    /// The store at `url`, authenticating with `password` (kept out of
    /// the URL, which a process's command line shows every local user):
    /// it takes the place of any password the URL has.
    ///
    /// # Errors
    /// [`StoreError`] when the URL is not a Redis URL.
    pub fn open_with(url: &str, password: Option<&str>) -> Result<RedisStore, StoreError> {
        if url.starts_with("rediss://") {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let not_redis = |e: redis::RedisError| StoreError {
            place: "redis".into(),
            reason: format!(
                "{e}; give a URL such as redis://:PASSWORD@HOST:6379/0 or rediss://HOST:6380"
            ),
        };
        let info = redis::IntoConnectionInfo::into_connection_info(url).map_err(not_redis)?;
        // No `CLIENT SETINFO` on connecting: its replies are waited for one
        // deadline each, and ignored; a connection then costs a round trip
        // only where one is needed (AUTH, SELECT).
        let mut settings = info.redis_settings().clone().set_skip_set_lib_name();
        if let Some(password) = password {
            settings = settings.set_password(password);
        }
        let info = info.set_redis_settings(settings);
        let client = redis::Client::open(info).map_err(not_redis)?;
        let info = client.get_connection_info();
        let scheme = if url.starts_with("rediss://") {
            "rediss"
        } else {
            "redis"
        };
        let place = format!("{scheme}://{}/{}", info.addr(), info.redis_settings().db());
        Ok(RedisStore {
            inner: Arc::new(Inner {
                client,
                place,
                idle: Arc::default(),
                timeout: Self::DEFAULT_TIMEOUT,
                lease: Self::DEFAULT_LEASE,
                max_age: super::DEFAULT_MAX_AGE,
                take: Script::new(TAKE),
                give_back: Script::new(GIVE_BACK),
                release: Script::new(RELEASE),
            }),
        })
    }

    /// The same store with another deadline per command.
    pub fn with_timeout(self, timeout: Duration) -> RedisStore {
        self.with(|inner| inner.timeout = timeout)
    }

    /// The same store with another lease per call.
    pub fn with_lease(self, lease: Duration) -> RedisStore {
        self.with(|inner| inner.lease = lease)
    }

    /// The same store with another age limit.
    pub fn with_max_age(self, max_age: Duration) -> RedisStore {
        self.with(|inner| inner.max_age = max_age)
    }

    fn with(mut self, change: impl FnOnce(&mut Inner)) -> RedisStore {
        change(Arc::make_mut(&mut self.inner));
        self
    }

    /// The host, when the store is reached in the clear (`redis://`) at
    /// an address other than this machine's: its password and every
    /// session's state then cross the network readable.
    pub fn in_the_clear(&self) -> Option<String> {
        match self.inner.client.get_connection_info().addr() {
            redis::ConnectionAddr::Tcp(host, _) => {
                let bare = host.trim_start_matches('[').trim_end_matches(']');
                let loopback = bare.eq_ignore_ascii_case("localhost")
                    || bare
                        .parse::<std::net::IpAddr>()
                        .is_ok_and(|ip| ip.is_loopback());
                (!loopback).then(|| host.clone())
            }
            _ => None,
        }
    }

    /// Marks the store as hookbox's, with an epoch of its own, unless it
    /// has one: `true` when this made it. A store without one takes no
    /// new session ([`SessionBackend::lock`] refuses), so that one which
    /// lost its data (restarted without persistence, flushed, its keys
    /// evicted) never starts its sessions again from nothing unnoticed.
    ///
    /// # Errors
    /// [`StoreError`] when Redis cannot be reached.
    pub fn init(&self) -> Result<bool, StoreError> {
        let token = token().ok_or_else(|| {
            self.inner
                .failure("the system has no randomness for an epoch; retry later".into())
        })?;
        let set: Value = self.inner.call(|con| {
            redis::cmd("SET")
                .arg(EPOCH_KEY)
                .arg(&token)
                .arg("NX")
                .query(con)
        })?;
        Ok(matches!(set, Value::Okay))
    }

    /// That the store has its epoch ([`RedisStore::init`]).
    fn epoch(&self) -> Result<(), StoreError> {
        let epoch: Value = self
            .inner
            .call(|con| redis::cmd("GET").arg(EPOCH_KEY).query(con))?;
        match epoch {
            Value::BulkString(_) => Ok(()),
            _ => Err(self.inner.failure(format!(
                "it holds no hookbox epoch ({EPOCH_KEY}): it is new, or it lost its data (a restart without persistence, a flush, an eviction), and every session would start again from nothing. No session is taken until an operator runs `hookbox state init --state URL` (with persistence on: appendonly yes, maxmemory-policy noeviction)"
            ))),
        }
    }

    /// Asks the server for `PONG`, within the deadline.
    ///
    /// # Errors
    /// [`StoreError`] saying why it cannot be reached.
    pub fn ping(&self) -> Result<(), StoreError> {
        self.inner
            .call(|con| redis::cmd("PING").query::<String>(con))?;
        Ok(())
    }
}

impl Inner {
    /// Runs `command` on an idle connection (or a new one), which goes
    /// back to the idle ones only if the command succeeded. A failure
    /// drops every idle connection (after a restart of Redis, all of them
    /// are dead); one on a connection that had been idle, other than a
    /// timeout, is tried once more on a new connection. Taking is safe to
    /// run twice (a session its caller holds already is taken); giving
    /// back twice finds the lock gone and fails the hook, a block, never
    /// a lost update.
    ///
    /// One deadline covers it all, connecting (and the client's own
    /// greeting) included: a Redis that accepts connections and never
    /// answers blocks the hook after the deadline the error names, not
    /// after a deadline per step.
    fn call<T>(
        &self,
        mut command: impl FnMut(&mut Connection) -> redis::RedisResult<T>,
    ) -> Result<T, StoreError> {
        let deadline = Instant::now() + self.timeout;
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let reused = idle.is_some();
        let mut con = match idle {
            Some(con) => con,
            None => self.connect(deadline)?,
        };
        self.bound(&con, deadline)?;
        let answer = match command(&mut con) {
            Ok(answer) => answer,
            Err(e) => {
                self.idle.lock().unwrap_or_else(|p| p.into_inner()).clear();
                let stale = e.is_io_error() || e.is_connection_dropped();
                if !(reused && stale && !e.is_timeout()) {
                    return Err(self.error(&e));
                }
                con = self.connect(deadline)?;
                self.bound(&con, deadline)?;
                command(&mut con).map_err(|e| self.error(&e))?
            }
        };
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(con);
        Ok(answer)
    }

    /// A new connection, made before `deadline`.
    fn connect(&self, deadline: Instant) -> Result<Connection, StoreError> {
        self.client
            .get_connection_with_timeout(self.left(deadline)?)
            .map_err(|e| self.error(&e))
    }

    /// `con`'s reads and writes bounded by what is left until `deadline`.
    fn bound(&self, con: &Connection, deadline: Instant) -> Result<(), StoreError> {
        let left = self.left(deadline)?;
        con.set_read_timeout(Some(left))
            .and_then(|()| con.set_write_timeout(Some(left)))
            .map_err(|e| self.error(&e))
    }

    /// The time left until `deadline`; none left is the deadline's error.
    fn left(&self, deadline: Instant) -> Result<Duration, StoreError> {
        match deadline.checked_duration_since(Instant::now()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => Err(self.failure(format!("no answer within {:?}", self.timeout))),
        }
    }

    fn error(&self, e: &redis::RedisError) -> StoreError {
        let hint = if e.is_timeout() {
            format!("no answer within {:?}", self.timeout)
        } else if e.is_io_error() || e.is_connection_refusal() || e.is_connection_dropped() {
            "cannot reach it; is it running, and is the URL right?".to_owned()
        } else {
            "is this a Redis server?".to_owned()
        };
        self.failure(format!("{e} ({hint})"))
    }

    fn failure(&self, reason: String) -> StoreError {
        StoreError {
            place: self.place.clone(),
            reason,
        }
    }
}

impl SessionBackend for RedisStore {
    fn lock(&self, agent: &str, session: &Session) -> Result<Box<dyn SessionHold>, StoreError> {
        let inner = &self.inner;
        let name = session_name(agent, session);
        let state_key = format!("hookbox:session:{{{name}}}");
        let lock_key = format!("{state_key}:lock");
        let token = token().ok_or_else(|| {
            inner.failure("the system has no randomness for a lock token; retry later".into())
        })?;
        let lease_ms = u64::try_from(inner.lease.as_millis()).unwrap_or(u64::MAX);
        let started = Instant::now();
        let mut pause = Duration::from_millis(1);
        loop {
            let answer: Value = inner.call(|con| {
                inner
                    .take
                    .key(&lock_key)
                    .key(&state_key)
                    .arg(&token)
                    .arg(lease_ms)
                    .invoke(con)
            })?;
            let held_for = match answer {
                Value::Array(parts) => match parts.as_slice() {
                    [Value::Int(1), Value::Nil] => {
                        let hold = RedisHold::new(self, state_key, lock_key, token, None);
                        // A session with no state: new, or lost with the
                        // store's data. The epoch tells (dropping the hold
                        // gives the session back).
                        self.epoch()?;
                        return Ok(Box::new(hold));
                    }
                    [Value::Int(1), Value::BulkString(bytes)] => {
                        let read = Some(bytes.clone());
                        return Ok(Box::new(RedisHold::new(
                            self, state_key, lock_key, token, read,
                        )));
                    }
                    [Value::Int(0), Value::Int(left)] => *left,
                    _ => return Err(garbage(inner, &parts)),
                },
                other => return Err(garbage(inner, &other)),
            };
            // A lease and a deadline: the lock of a call that died (or
            // of one whose take Redis ran after it gave up) is gone by then.
            if started.elapsed() >= inner.lease + inner.timeout {
                return Err(inner.failure(format!(
                    "another call of this session has held it for longer than the lease ({:?}); retry, or raise the lease if guards take that long",
                    inner.lease
                )));
            }
            // Wait for the holder: a little longer each time, never past
            // its lease.
            let left = Duration::from_millis(u64::try_from(held_for).unwrap_or(1).max(1));
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    fn describe(&self) -> String {
        self.inner.place.clone()
    }

    fn shared(&self) -> bool {
        true
    }
}

fn garbage(inner: &Inner, answer: &dyn std::fmt::Debug) -> StoreError {
    let mut shown = format!("{answer:?}");
    shown.truncate(200);
    inner.failure(format!(
        "answered {shown} where a session lock was asked for (is this a Redis server?)"
    ))
}

/// 128 random bits in hex: no other call holds the same token.
fn token() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// One session taken in Redis.
struct RedisHold {
    inner: Arc<Inner>,
    state_key: String,
    lock_key: String,
    token: String,
    /// The state as read, to tell an unchanged save.
    read: Option<Vec<u8>>,
    /// Still holding the lock (not saved yet).
    held: bool,
}

impl RedisHold {
    fn new(
        store: &RedisStore,
        state_key: String,
        lock_key: String,
        token: String,
        read: Option<Vec<u8>>,
    ) -> RedisHold {
        RedisHold {
            inner: store.inner.clone(),
            state_key,
            lock_key,
            token,
            read,
            held: true,
        }
    }
}

impl SessionHold for RedisHold {
    fn load(&mut self) -> Result<Saved, StoreError> {
        match &self.read {
            None => Ok(Saved::default()),
            Some(bytes) => serde_json::from_slice(bytes).map_err(|e| {
                self.inner.failure(format!(
                    "{} does not hold a hookbox session's state ({e}); delete that key to start the session afresh",
                    self.state_key
                ))
            }),
        }
    }

    fn save(&mut self, saved: &Saved) -> Result<(), StoreError> {
        let text = serde_json::to_vec(saved).unwrap_or_default();
        let how = if self.read.as_deref() == Some(text.as_slice()) {
            "touch"
        } else {
            "set"
        };
        let max_age_ms = u64::try_from(self.inner.max_age.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        let inner = &self.inner;
        let kept: Value = inner.call(|con| {
            inner
                .give_back
                .key(&self.lock_key)
                .key(&self.state_key)
                .arg(&self.token)
                .arg(how)
                .arg(max_age_ms)
                .arg(text.as_slice())
                .invoke(con)
        })?;
        match kept {
            Value::Int(1) => {
                self.held = false;
                self.read = Some(text);
                Ok(())
            }
            Value::Int(0) => {
                self.held = false;
                Err(inner.failure(format!(
                    "this call held the session past its lease of {:?} and another call took it; this call's update is dropped and its hook blocked",
                    inner.lease
                )))
            }
            other => Err(garbage(inner, &other)),
        }
    }
}

impl Drop for RedisHold {
    /// A call that did not save gives the session back at once (if Redis
    /// cannot be reached, the lease ends it).
    fn drop(&mut self) {
        if self.held {
            let inner = &self.inner;
            let _ = inner.call(|con| {
                inner
                    .release
                    .key(&self.lock_key)
                    .arg(&self.token)
                    .invoke::<i64>(con)
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A server that takes connections and never answers (the kernel
    /// accepts them; nothing reads): the hook is blocked within the one
    /// deadline its error names, the client's greeting on connecting
    /// included, not after a deadline per step.
    #[test]
    fn a_server_that_never_answers_fails_within_the_one_deadline() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let timeout = Duration::from_millis(800);
        let store = RedisStore::open(&format!("redis://{addr}"))
            .unwrap()
            .with_timeout(timeout);
        let started = Instant::now();
        let failure = store.ping().unwrap_err();
        let took = started.elapsed();
        assert!(failure.reason.contains("800ms"), "{failure}");
        assert!(
            took < timeout * 3 / 2,
            "{took:?} for a deadline of {timeout:?}"
        );
        drop(listener);
    }
}
