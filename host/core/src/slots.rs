//! Admission: how many plugin instances may be live at once.
//!
//! A run reserves an instance slot for every plugin of its stack when it
//! starts ([`crate::HookStack::try_start_run`]), before any guest is
//! instantiated, and gives them back when it is dropped. A run that does not
//! fit is refused up front with [`Busy`] (a server sheds it: 503), never
//! failed closed half-way. The instance pool is sized for every slot plus a
//! few kept for loading, so loading and reloading a plugin (which starts it
//! once to ask for its subscriptions) never waits on live runs, and live
//! runs never find the pool empty.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::error::Busy;

/// Instances kept in the pool for loading plugins, beyond the runs' slots.
/// Loaders take turns for them ([`LoadSlots::take`]).
pub(crate) const LOAD_SLOTS: u32 = 4;

/// The runs' instance slots: a count against a capacity.
#[derive(Debug)]
pub(crate) struct RunSlots {
    capacity: usize,
    used: AtomicUsize,
}

impl RunSlots {
    pub fn new(capacity: usize) -> Arc<RunSlots> {
        Arc::new(RunSlots {
            capacity,
            used: AtomicUsize::new(0),
        })
    }

    /// Slots in use and the capacity.
    pub fn usage(&self) -> (usize, usize) {
        (self.used.load(Ordering::Relaxed), self.capacity)
    }

    /// Reserves `needed` slots, all or none.
    pub fn reserve(self: &Arc<RunSlots>, needed: usize) -> Result<Reservation, Busy> {
        let taken = self
            .used
            .try_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(needed).filter(|&n| n <= self.capacity)
            });
        match taken {
            Ok(_) => Ok(Reservation {
                slots: self.clone(),
                held: needed,
            }),
            Err(in_use) => Err(Busy {
                needed,
                in_use,
                capacity: self.capacity,
            }),
        }
    }
}

/// Slots held by one run; given back on drop.
#[derive(Debug)]
pub(crate) struct Reservation {
    slots: Arc<RunSlots>,
    held: usize,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.slots.used.fetch_sub(self.held, Ordering::AcqRel);
    }
}

/// The pool's instances kept for loading: a loader waits for one rather
/// than fail.
#[derive(Debug, Default)]
pub(crate) struct LoadSlots {
    taken: Mutex<u32>,
    freed: Condvar,
}

impl LoadSlots {
    /// Waits until a load slot is free and takes it.
    pub fn take(&self) -> LoadSlot<'_> {
        let mut taken = self.taken.lock().unwrap_or_else(|p| p.into_inner());
        while *taken >= LOAD_SLOTS {
            taken = self.freed.wait(taken).unwrap_or_else(|p| p.into_inner());
        }
        *taken += 1;
        LoadSlot { slots: self }
    }
}

/// A load slot, given back on drop.
pub(crate) struct LoadSlot<'a> {
    slots: &'a LoadSlots,
}

impl Drop for LoadSlot<'_> {
    fn drop(&mut self) {
        let mut taken = self.slots.taken.lock().unwrap_or_else(|p| p.into_inner());
        *taken -= 1;
        self.slots.freed.notify_one();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reservation_is_all_or_nothing_and_given_back_on_drop() {
        let slots = RunSlots::new(5);
        let first = slots.reserve(3).unwrap();
        let busy = slots.reserve(3).unwrap_err();
        assert_eq!((busy.needed, busy.in_use, busy.capacity), (3, 3, 5));
        assert_eq!(slots.usage(), (3, 5), "a refused reservation takes nothing");
        let second = slots.reserve(2).unwrap();
        drop(first);
        assert_eq!(slots.usage(), (2, 5));
        drop(second);
        assert_eq!(slots.usage(), (0, 5));
    }

    #[test]
    fn loaders_wait_for_a_load_slot_instead_of_failing() {
        let slots = Arc::new(LoadSlots::default());
        let held: Vec<_> = (0..LOAD_SLOTS).map(|_| slots.take()).collect();
        let waiter = {
            let slots = slots.clone();
            std::thread::spawn(move || {
                let _slot = slots.take();
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "took a slot while all were held");
        drop(held);
        waiter.join().unwrap();
    }
}
