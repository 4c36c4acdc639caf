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
        let mut used = self.used.lock().unwrap_or_else(PoisonError::into_inner);
        while *used > 0 && used.saturating_add(n) > self.limit {
            used = self
                .freed
                .wait(used)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *used = used.saturating_add(n);
        Permit { budget: self, n }
    }
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
}
