//! Bytes held at once against one limit, shared by threads: package members kept for inspection
//! (rocpack-scan), zstd windows of compressed bundles being read (rocpack-offload) and being
//! rewritten (rocpack-slim).

use std::sync::{Condvar, Mutex, PoisonError};

/// A limit on bytes held at once. [`Budget::acquire`] waits until the bytes fit; an amount
/// larger than the whole limit waits until nothing else is held, then is held alone.
#[derive(Debug)]
pub struct Budget {
    limit: u64,
    used: Mutex<u64>,
    freed: Condvar,
}

impl Budget {
    /// A budget of `limit` bytes (usable in a `static`).
    pub const fn new(limit: u64) -> Self {
        Budget {
            limit,
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    /// The limit.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Bytes held now.
    pub fn used(&self) -> u64 {
        *self.used.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `n` bytes fit under the limit (or nothing else is held), and holds them
    /// until the permit is dropped (also on an error or a panic). The caller must not hold
    /// another permit of the same budget while it waits, or the wait may never end.
    pub fn acquire(&self, n: u64) -> Permit<'_> {
        let limit = self.limit;
        let took = self.wait_for(|used| {
            if used == 0 || used.saturating_add(n) <= limit {
                Pick::Took(n, ())
            } else {
                Pick::Wait
            }
        });
        match took {
            Some(((), permit)) => permit,
            // Never: the chooser above does not answer `Done`.
            None => Permit { budget: self, n: 0 },
        }
    }

    /// Takes whatever `pick` chooses to fit: `pick` is called with the bytes free (`u64::MAX`
    /// when nothing is held) and answers [`Pick::Took`] with the cost of what it took (held
    /// until the permit is dropped), [`Pick::Wait`] to be asked again when bytes are given
    /// back, or [`Pick::Done`]. Lets a worker run a smaller job that fits instead of waiting
    /// for room for a large one. The same rule as [`Budget::acquire`] about other permits.
    /// `pick` runs with the budget's lock held: it must not block, nor take or drop permits of
    /// this budget; and answering `Wait` when nothing is held (`u64::MAX`) waits for ever.
    pub fn acquire_with<T>(&self, mut pick: impl FnMut(u64) -> Pick<T>) -> Option<(T, Permit<'_>)> {
        let limit = self.limit;
        self.wait_for(|used| {
            pick(if used == 0 {
                u64::MAX
            } else {
                limit.saturating_sub(used)
            })
        })
    }

    /// The one wait of both: asks `pick` with the bytes held, waiting for bytes to be given
    /// back while it answers `Wait`.
    fn wait_for<T>(&self, mut pick: impl FnMut(u64) -> Pick<T>) -> Option<(T, Permit<'_>)> {
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            match pick(*used) {
                Pick::Took(n, t) => {
                    *used = used.saturating_add(n);
                    return Some((t, Permit { budget: self, n }));
                }
                Pick::Done => return None,
                Pick::Wait => {
                    used = self
                        .freed
                        .wait(used)
                        .unwrap_or_else(PoisonError::into_inner);
                }
            }
        }
    }
}

/// What the chooser of [`Budget::acquire_with`] did.
#[derive(Debug)]
pub enum Pick<T> {
    /// Took something costing this many bytes.
    Took(u64, T),
    /// Nothing fits now.
    Wait,
    /// Nothing is left to take.
    Done,
}

/// Bytes held from a [`Budget`], given back when dropped.
#[derive(Debug)]
pub struct Permit<'a> {
    budget: &'a Budget,
    n: u64,
}

impl Permit<'_> {
    /// The bytes held.
    pub fn bytes(&self) -> u64 {
        self.n
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut used = self
            .budget
            .used
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *used = used.saturating_sub(self.n);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_room_and_runs_an_oversized_request_alone() {
        static B: Budget = Budget::new(64);
        let a = B.acquire(40);
        let (tx, rx) = std::sync::mpsc::channel();
        let other = std::thread::spawn(move || {
            let p = B.acquire(40);
            tx.send(B.used()).unwrap();
            drop(p);
        });
        // The other thread waits while 40 of 64 are held.
        assert!(
            rx.recv_timeout(std::time::Duration::from_millis(200))
                .is_err()
        );
        drop(a);
        assert_eq!(
            rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap(),
            40
        );
        other.join().unwrap();
        assert_eq!(B.used(), 0);
        // More than the limit: held alone.
        let big = B.acquire(100);
        assert_eq!((big.bytes(), B.used()), (100, 100));
        drop(big);
        assert_eq!(B.used(), 0);
    }

    #[test]
    fn a_chooser_takes_what_fits_and_waits_for_the_rest() {
        static B: Budget = Budget::new(64);
        let first_fit = |jobs: &std::sync::Mutex<Vec<u64>>, room: u64| {
            let mut jobs = jobs.lock().unwrap();
            match jobs.iter().position(|&c| c <= room) {
                Some(i) => {
                    let c = jobs.remove(i);
                    Pick::Took(c, c)
                }
                None if jobs.is_empty() => Pick::Done,
                None => Pick::Wait,
            }
        };
        let jobs = std::sync::Mutex::new(vec![100, 50, 30, 10]);
        // Nothing held: the oversized job runs alone.
        let (c, big) = B.acquire_with(|room| first_fit(&jobs, room)).unwrap();
        assert_eq!((c, B.used()), (100, 100));
        drop(big);
        let (c, p50) = B.acquire_with(|room| first_fit(&jobs, room)).unwrap();
        assert_eq!(c, 50);
        // 14 free: 30 does not fit, 10 does.
        let (c, p10) = B.acquire_with(|room| first_fit(&jobs, room)).unwrap();
        assert_eq!((c, B.used()), (10, 60));
        let jobs = std::sync::Arc::new(jobs);
        let waiter = {
            let jobs = jobs.clone();
            std::thread::spawn(move || {
                let (c, p) = B.acquire_with(|room| first_fit(&jobs, room)).unwrap();
                drop(p);
                c
            })
        };
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!waiter.is_finished(), "30 waits while 60 of 64 are held");
        drop(p50);
        assert_eq!(waiter.join().unwrap(), 30);
        drop(p10);
        assert!(B.acquire_with(|room| first_fit(&jobs, room)).is_none());
        assert_eq!(B.used(), 0);
    }
}
