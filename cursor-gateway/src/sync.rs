//! Locking that survives a panic elsewhere: the gateway's maps stay usable (each critical section
//! leaves them consistent before anything that can panic).

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, taking over a poisoned one.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
