//! Shutdown: one small type that every long-running task of the daemon
//! holds, so that one signal stops them all (after mini-redis'
//! `src/shutdown.rs`).
//!
//! [`channel`] gives a [`Trigger`] (kept by whoever decides to stop: the
//! daemon, when the caller's shutdown future resolves) and a [`Shutdown`]
//! that any number of tasks clone and await. [`signal`] is the future the
//! command line passes: the first SIGINT or SIGTERM.

use tokio::sync::watch;

/// Fires the shutdown. Dropping it without firing does not stop anyone.
pub struct Trigger(watch::Sender<bool>);

/// A handle on the shutdown: cheap to clone, `recv` resolves once it fired.
#[derive(Clone)]
pub struct Shutdown(watch::Receiver<bool>);

/// A new trigger and the shutdown it fires.
pub fn channel() -> (Trigger, Shutdown) {
    let (tx, rx) = watch::channel(false);
    (Trigger(tx), Shutdown(rx))
}

impl Trigger {
    pub(crate) fn fire(&self) {
        let _ = self.0.send(true);
    }
}

impl Shutdown {
    /// Resolves once the shutdown fires (at once if it already did). A
    /// trigger dropped without firing never resolves it.
    pub(crate) async fn recv(&self) {
        self.clone().wait().await
    }

    /// [`Shutdown::recv`] for a task that needs a future it owns
    /// (`'static`), such as axum's graceful shutdown.
    pub async fn wait(mut self) {
        if self.0.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The first SIGINT or SIGTERM; its name. If signals cannot be watched
/// (no signal support), this never resolves and says so in the log.
pub async fn signal() -> &'static str {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!("cannot wait for SIGTERM: {e}");
            let _ = tokio::signal::ctrl_c().await;
            return "SIGINT";
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    }
}
