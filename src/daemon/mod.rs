//! The daemon: one per memory directory. It owns the index and runs, side
//! by side until its shutdown future resolves:
//! - the watcher ([`crate::watch`]), keeping the index in step with files;
//! - the consolidation loop, every `interval_seconds`, through the gate;
//! - background index optimisation: compaction and index folding once
//!   small fragments pile up, or a few of them once writes pause (checked
//!   every 10 s; see `Index::compact_if_needed`);
//! - the HTTP API ([`crate::api`]).
//!
//! [`serve`] takes its listener, token and shutdown future from the caller
//! (as mini-redis' `server::run`): `memd serve` binds the address and
//! passes [`shutdown::signal`]; a test binds port 0 and passes a future
//! of its own. `.memd/daemon.lock` (held for the daemon's life) makes it
//! one per directory, and `.memd/daemon.json` says where it listens
//! ([`crate::daemon_info`] owns both), so CLI commands that would write
//! the index go through the API instead of opening the table a second time.
//!
//! Shutdown: the signal stops the loops and the HTTP server; a consolidation
//! in flight is dropped at its next await point. memd never awaits in the
//! middle of a write (the entries file, journal and state are written by
//! synchronous code in one stretch), so what was being written is finished
//! and what was only planned is planned again by the next run.

pub mod many;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::config::Config;
use crate::daemon_info::{self, Info};
use crate::error::{Context, Result};
use crate::index::Index;
use crate::shutdown::{self, Shutdown};
use crate::{Layout, api, consolidate, lock};

pub use crate::daemon_info::running;

/// How often the daemon checks whether the index needs compacting.
pub(crate) const OPTIMIZE_CHECK_EVERY: Duration = Duration::from_secs(10);

/// How often the watcher reconciles even without file events.
const RECONCILE_EVERY: Duration = Duration::from_secs(30);

/// The error when another daemon already holds this directory.
pub(crate) fn already_served(layout: &Layout) -> crate::Error {
    let other = running(layout);
    crate::Error::DaemonRunning {
        dir: layout.root.clone(),
        pid: other.as_ref().map(|i| i.pid),
        listen: other.map(|i| i.listen),
    }
}

/// An error if a daemon already serves `layout`: what a caller checks
/// before binding an address, so a second daemon is told why it may not
/// start rather than that the port is taken.
pub fn ensure_not_served(layout: &Layout) -> crate::Result<()> {
    match running(layout) {
        Some(_) => Err(already_served(layout)),
        None => Ok(()),
    }
}

/// Serve `layout` on `listener` until `shutdown` resolves. `token`, when
/// set, is required on every request. Refuses if another daemon serves the
/// directory.
pub async fn serve(
    layout: Layout,
    config: Config,
    listener: TcpListener,
    token: Option<String>,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let Some(_guard) = lock::try_lock(&daemon_info::lock_path(&layout))? else {
        return Err(already_served(&layout));
    };
    let local = listener.local_addr()?;
    let info = Info {
        pid: std::process::id(),
        listen: local.to_string(),
        started: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        token: token.is_some(),
        memory: None,
    };
    daemon_info::write(&layout, &info).context("writing .memd/daemon.json")?;
    tracing::info!(addr = %local, dir = %layout.root.display(), "memd daemon listening");

    let index = Arc::new(Index::open(&layout, &config).await?);
    index.claim_sole_writer();
    let (trigger, stop) = shutdown::channel();
    let state = Arc::new(api::State {
        layout: layout.clone(),
        config: config.clone(),
        index: index.clone(),
        token,
        bound: local,
        shutdown: stop.clone(),
    });
    let watcher = crate::watch::run(&layout, &index, RECONCILE_EVERY, stop.recv());
    let loops = async {
        tokio::join!(
            consolidation_loop(&layout, &config, &index, stop.clone()),
            optimize_loop(&index, stop.clone())
        )
    };
    let server =
        axum::serve(listener, api::router(state)).with_graceful_shutdown(stop.clone().wait());
    let stopper = stop_on(shutdown, trigger, stop.clone());
    let (watched, _, served, _) = tokio::join!(watcher, loops, server, stopper);
    daemon_info::remove(&layout);
    if let Err(e) = watched {
        tracing::warn!("watcher stopped with an error: {e:#}");
    }
    served.context("HTTP server")?;
    Ok(())
}

async fn consolidation_loop(layout: &Layout, config: &Config, index: &Index, stop: Shutdown) {
    let every = Duration::from_secs(config.consolidation.interval_seconds.max(1));
    rounds(every, &stop, || async {
        let opts = consolidate::Options::default();
        match crate::service::consolidate_then_sync(layout, config, opts, Some(index)).await {
            Ok(r) if r.skipped.is_some() => {}
            Ok(r) => tracing::info!(
                run = %r.run_id, pending = r.pending_facts, clusters = r.clusters,
                add = r.applied.add, replace = r.applied.replace, remove = r.applied.remove,
                keep = r.applied.keep, "consolidation run finished"
            ),
            Err(e) => tracing::warn!("consolidation run failed: {e:#}"),
        }
    })
    .await
}

/// Run a consolidation round every `period` until `stop` fires; a round in
/// flight then is dropped at its next await point (see the module doc on
/// shutdown).
pub(crate) async fn rounds<F, Fut>(period: Duration, stop: &Shutdown, mut round: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    loop {
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = stop.recv() => return,
        }
        tokio::select! {
            _ = round() => {}
            _ = stop.recv() => {
                tracing::info!("consolidation interrupted by shutdown; its facts stay pending");
                return;
            }
        }
    }
}

async fn optimize_loop(index: &Index, stop: Shutdown) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(OPTIMIZE_CHECK_EVERY) => {}
            _ = stop.recv() => return,
        }
        upkeep(index).await;
    }
}

/// Fire `trigger` when `shutdown` resolves (or something else fired it).
pub(crate) async fn stop_on(
    shutdown: impl Future<Output = ()>,
    trigger: shutdown::Trigger,
    stop: Shutdown,
) {
    tokio::select! {
        _ = shutdown => tracing::info!("shutting down"),
        _ = stop.recv() => {}
    }
    trigger.fire();
}

/// Compact the index if it needs it (a failure is a warning: the next
/// check tries again).
pub(crate) async fn upkeep(index: &Index) {
    let t = std::time::Instant::now();
    match index.compact_if_needed().await {
        Ok(false) => {}
        Ok(true) => tracing::info!(ms = t.elapsed().as_millis() as u64, "index compacted"),
        Err(e) => tracing::warn!("index compaction failed: {e:#}"),
    }
}
