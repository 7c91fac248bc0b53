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

use std::time::{Duration, Instant};

use wasmtime::{Trap, UpdateDeadline};

use crate::error::Cause;
use crate::limits::LimitExceeded;

/// How many deadlines of wall time one call may take, however little CPU
/// time it used.
pub(crate) const WALL_FACTOR: u32 = 10;

/// When one call into a guest began, on both clocks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallClock {
    cpu: Option<Duration>,
    wall: Instant,
}

impl CallClock {
    /// The clocks now, on this thread.
    pub(crate) fn start() -> CallClock {
        CallClock {
            cpu: thread_cpu_time(),
            wall: Instant::now(),
        }
    }

    /// CPU time this thread spent since [`CallClock::start`] (wall time
    /// where the CPU clock cannot be read).
    fn cpu_used(&self) -> Duration {
        match (self.cpu, thread_cpu_time()) {
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
