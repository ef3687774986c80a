//! The host's "stop this turn" signal, as a handle (kept by the host) and a signal (given to
//! the turn).

use tokio::sync::watch;

/// Creates a connected handle and signal.
pub fn abort_pair() -> (AbortHandle, AbortSignal) {
    let (sender, receiver) = watch::channel(false);
    (AbortHandle(sender), AbortSignal(receiver))
}

/// Aborts the turn its [`AbortSignal`] belongs to. Dropping it without calling
/// [`abort`](Self::abort) lets the turn run to its end.
#[derive(Debug)]
pub struct AbortHandle(watch::Sender<bool>);

impl AbortHandle {
    /// Asks the turn to stop; idempotent.
    pub fn abort(&self) {
        self.0.send_replace(true);
    }

    /// Whether [`abort`](Self::abort) was called.
    pub fn is_aborted(&self) -> bool {
        *self.0.borrow()
    }
}

/// What a running turn watches to learn that the host aborted it.
#[derive(Clone, Debug)]
pub struct AbortSignal(watch::Receiver<bool>);

impl AbortSignal {
    /// A signal that never fires.
    pub fn never() -> Self {
        abort_pair().1
    }

    /// Whether the turn was aborted.
    pub fn is_aborted(&self) -> bool {
        *self.0.borrow()
    }

    /// Completes when the turn is aborted; never, if the handle is dropped first.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: it only watches the signal.
    pub async fn aborted(&mut self) {
        if self.0.wait_for(|aborted| *aborted).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn aborting_wakes_the_waiting_signal() {
        let (handle, mut signal) = abort_pair();
        assert!(!signal.is_aborted());
        let waiter = tokio::spawn(async move {
            signal.aborted().await;
            signal.is_aborted()
        });
        handle.abort();
        assert!(handle.is_aborted());
        assert!(waiter.await.unwrap());
    }

    #[tokio::test]
    async fn a_dropped_handle_never_aborts() {
        let (handle, mut signal) = abort_pair();
        drop(handle);
        let waited = tokio::time::timeout(Duration::from_millis(20), signal.aborted()).await;
        assert!(waited.is_err(), "the signal fired without an abort");
    }
}
