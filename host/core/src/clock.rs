//! What a guest's deadline counts: the CPU time of the thread that calls
//! into it, so a busy host does not fail a guest closed for time it spent
//! waiting for a core. The wall clock still bounds every call, at
//! [`WALL_FACTOR`] times the deadline, so a call on a thread that is starved
//! or blocked in a host import ends too.
//!
//! The epoch ticker wakes a call when its deadline's worth of wall time has
//! passed; [`Deadline::check`] then says how much longer the call may run,
//! or that it is over. Where the thread's CPU clock cannot be read, the CPU
//! time is the wall time, which is what the deadline counted before.
//!
//! Reading the thread's CPU clock is a system call (about 0.7 µs here, as
//! much as a whole call into a small guest), so a call does not read it
//! when it starts within [`CPU_READ_EVERY`] of the thread's last reading:
//! it takes that reading plus the wall time since, which is at least the
//! CPU time the thread has now. A call is so given at most
//! [`CPU_READ_EVERY`] of CPU time beyond its deadline, never less than it.

use std::cell::Cell;
use std::time::{Duration, Instant};

use wasmtime::{Trap, UpdateDeadline};

use crate::error::Cause;
use crate::limits::LimitExceeded;

/// How many deadlines of wall time one call may take, however little CPU
/// time it used.
pub(crate) const WALL_FACTOR: u32 = 10;

/// How old a reading of the thread's CPU clock a call may start from.
pub(crate) const CPU_READ_EVERY: Duration = Duration::from_millis(1);

thread_local! {
    /// This thread's CPU clock when last read, and when that was.
    static LAST_READING: Cell<Option<(Instant, Duration)>> = const { Cell::new(None) };
}

/// The thread's CPU time now, read and remembered.
fn read_cpu(now: Instant) -> Option<Duration> {
    let cpu = thread_cpu_time();
    if let Some(cpu) = cpu {
        LAST_READING.with(|last| last.set(Some((now, cpu))));
    }
    cpu
}

/// When one call into a guest began, on both clocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallClock {
    cpu: Option<Duration>,
    wall: Instant,
}

impl CallClock {
    /// The clocks now, on this thread: the CPU clock as last read if that
    /// was within [`CPU_READ_EVERY`], plus the wall time since (no less
    /// than the thread's CPU time now).
    pub(crate) fn start() -> CallClock {
        let wall = Instant::now();
        let recent = LAST_READING.with(Cell::get).and_then(|(at, cpu)| {
            let since = wall.saturating_duration_since(at);
            (since < CPU_READ_EVERY).then_some(cpu + since)
        });
        CallClock {
            cpu: recent.or_else(|| read_cpu(wall)),
            wall,
        }
    }

    /// CPU time this thread spent since [`CallClock::start`] (wall time
    /// where the CPU clock cannot be read).
    fn cpu_used(&self) -> Duration {
        match (self.cpu, read_cpu(Instant::now())) {
            (Some(then), Some(now)) => now.saturating_sub(then),
            _ => self.wall.elapsed(),
        }
    }
}

/// A plugin's deadline as the epoch callback applies it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Deadline {
    /// The CPU time one call may use.
    pub budget: Duration,
    /// How long one epoch tick is.
    pub tick: Duration,
}

impl Deadline {
    /// What a call that began at `clock` does now that its epoch deadline
    /// came: run on for the ticks its budget has left, or stop, with
    /// [`Trap::Interrupt`] when the budget is spent and [`Cause::Deadline`]
    /// naming the wall clock when that bound is.
    pub(crate) fn check(&self, clock: &CallClock) -> wasmtime::Result<UpdateDeadline> {
        let wall_bound = self.budget.saturating_mul(WALL_FACTOR);
        let wall_left = wall_bound.saturating_sub(clock.wall.elapsed());
        if wall_left.is_zero() {
            return Err(LimitExceeded::new(
                Cause::Deadline,
                format!(
                    "still running after {wall_bound:?} of wall time, {WALL_FACTOR} times its deadline of {:?}, having used {:?} of CPU time (the host is overloaded, or the guest waited on a host call)",
                    self.budget,
                    clock.cpu_used()
                ),
            )
            .into());
        }
        let cpu_left = self.budget.saturating_sub(clock.cpu_used());
        if cpu_left.is_zero() {
            return Err(Trap::Interrupt.into());
        }
        let ticks = cpu_left
            .min(wall_left)
            .as_nanos()
            .div_ceil(self.tick.as_nanos().max(1));
        Ok(UpdateDeadline::Continue(
            u64::try_from(ticks).unwrap_or(u64::MAX).max(1),
        ))
    }
}

/// The CPU time this thread has used, user and system.
#[cfg(unix)]
fn thread_cpu_time() -> Option<Duration> {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec; the call only writes it.
    let read = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    (read == 0).then(|| {
        Duration::new(
            u64::try_from(now.tv_sec).unwrap_or(0),
            u32::try_from(now.tv_nsec).unwrap_or(0),
        )
    })
}

#[cfg(not(unix))]
fn thread_cpu_time() -> Option<Duration> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Deadline = Deadline {
        budget: Duration::from_millis(100),
        tick: Duration::from_millis(1),
    };

    fn spin(until: impl Fn() -> bool) {
        while !until() {
            std::hint::black_box(0u64);
        }
    }

    #[test]
    fn a_call_that_waited_rather_than_ran_is_given_the_rest_of_its_budget() {
        let clock = CallClock::start();
        std::thread::sleep(Duration::from_millis(30));
        match DEADLINE.check(&clock) {
            Ok(UpdateDeadline::Continue(ticks)) => {
                assert!(
                    ticks > 50,
                    "a sleeping thread used little CPU: {ticks} ticks left"
                );
            }
            Ok(_) => panic!("a deadline that came was not moved on"),
            Err(e) => panic!("a sleeping call was stopped: {e}"),
        }
    }

    /// A call that starts soon after another takes the last reading on,
    /// never less than the CPU time the thread has now.
    #[test]
    fn a_call_starting_soon_after_a_reading_starts_no_earlier_than_the_cpu_clock() {
        let first = CallClock::start();
        spin(|| first.wall.elapsed() >= CPU_READ_EVERY / 4);
        let before = thread_cpu_time().expect("the CPU clock reads here");
        let second = CallClock::start();
        let start = second.cpu.expect("a CPU time");
        assert!(
            start >= before,
            "a call started from {start:?}, before the CPU clock's {before:?}"
        );
    }

    #[test]
    fn a_call_that_spent_its_cpu_budget_is_interrupted() {
        let clock = CallClock::start();
        spin(|| clock.cpu_used() >= DEADLINE.budget);
        let Err(stopped) = DEADLINE.check(&clock) else {
            panic!("a call that spent its budget was let run on");
        };
        assert!(matches!(
            stopped.downcast_ref::<Trap>(),
            Some(Trap::Interrupt)
        ));
    }

    #[test]
    fn a_call_past_its_wall_bound_ends_however_little_cpu_it_used() {
        let short = Deadline {
            budget: Duration::from_millis(5),
            ..DEADLINE
        };
        let clock = CallClock::start();
        std::thread::sleep(short.budget * WALL_FACTOR);
        let Err(stopped) = short.check(&clock) else {
            panic!("a call past its wall bound was let run on");
        };
        let limit = stopped.downcast_ref::<LimitExceeded>().expect("a limit");
        assert_eq!(limit.cause, Cause::Deadline);
        assert!(limit.detail.contains("wall time"), "{}", limit.detail);
    }
}
