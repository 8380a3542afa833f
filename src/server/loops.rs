//! The daemon's background work, the same for one memory or many:
//! - consolidation: every `interval_seconds` of the daemon's configuration,
//!   each memory's own gate is asked (without opening it), in an order that
//!   starts one memory further on every round, so that no memory waits
//!   behind the same others each time; at most [`RUNS_AT_ONCE`] run at
//!   once;
//! - upkeep: every [`UPKEEP_EVERY`], the open memories used since the last
//!   round are synced and compacted if they need it (a daemon serving one
//!   directory looks at it every round);
//! - for one directory, the file watcher, and sync with its git remote
//!   every `[sync] interval_seconds` and after each run that changed
//!   something (`[sync] after_consolidation`). A daemon serving a root
//!   never syncs: git would run with the configuration (hooks, commands)
//!   of a repository its tenant writes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use tracing::Instrument;

use super::memories::{Memories, Opened};
use super::shutdown::Shutdown;
use crate::config::Config;
use crate::consolidate;
use crate::request::{self, Consolidate, Holder};
use crate::watch;

/// How many memories consolidate at once (each run is mostly one core of
/// embedding or waiting on an LLM).
pub const RUNS_AT_ONCE: usize = 2;

/// How often the daemon looks after the open memories' indices.
pub(crate) const UPKEEP_EVERY: Duration = Duration::from_secs(10);

/// How often the watcher reconciles even without file events.
const RECONCILE_EVERY: Duration = Duration::from_secs(30);

/// Every loop, until `stop` fires.
pub(super) async fn run(memories: &Memories, config: &Config, stop: &Shutdown) {
    let watcher = async {
        let Some(one) = memories.the_one() else {
            return;
        };
        let watched = match one.index().await {
            Ok(index) => {
                let layout = &one.memory().layout;
                watch::run(layout, &index, RECONCILE_EVERY, stop.recv()).await
            }
            Err(e) => Err(e),
        };
        if let Err(e) = watched {
            tracing::warn!("watcher stopped with an error: {e:#}");
        }
    };
    tokio::join!(
        consolidation(memories, config, stop),
        upkeep(memories, stop),
        watcher,
        synced(memories, config, stop)
    );
}

/// The timer of `[sync] interval_seconds`, for a daemon of one memory.
async fn synced(memories: &Memories, config: &Config, stop: &Shutdown) {
    let every = config.sync.interval_seconds;
    if every == 0 || memories.the_one().is_none() {
        return;
    }
    rounds(Duration::from_secs(every), stop, || sync(memories)).await
}

/// Sync the one memory with its remote (a failure is a warning: the next
/// sync tries again, and nothing local is lost meanwhile).
async fn sync(memories: &Memories) {
    let Some(one) = memories.the_one() else {
        return;
    };
    match one.target().run(request::Sync::default()).await {
        Ok(s) if !s.conflicts.is_empty() => tracing::warn!(
            conflicts = ?s.conflicts,
            "sync left a merge for the person to finish (then a sync)"
        ),
        Ok(s) => tracing::info!(merged = s.merged, pushed = s.pushed, "synced"),
        Err(e) => tracing::warn!("sync failed: {e:#}"),
    }
}

async fn consolidation(memories: &Memories, config: &Config, stop: &Shutdown) {
    let every = Duration::from_secs(config.consolidation.interval_seconds.max(1));
    let start = AtomicUsize::new(0);
    rounds(every, stop, || {
        round(memories, start.fetch_add(1, Ordering::Relaxed))
    })
    .await
}

/// Run a round every `period` until `stop` fires; a round in flight then
/// is dropped at its next await point (see the module doc of
/// [`crate::server`] on shutdown).
async fn rounds<F, Fut>(period: Duration, stop: &Shutdown, mut round: F)
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

/// One round: every memory whose gate is open, from `start` on, at most
/// [`RUNS_AT_ONCE`] at a time.
async fn round(memories: &Memories, start: usize) {
    let names = match memories.names() {
        Ok(n) => n,
        Err(e) => return tracing::warn!("cannot list memories: {e:#}"),
    };
    let n = names.len().max(1);
    let order = (0..names.len()).map(|i| names[(start + i) % n].clone());
    futures::stream::iter(order)
        .for_each_concurrent(RUNS_AT_ONCE, |name| async move {
            let span = tracing::info_span!("memory", name = %name);
            consolidate(memories, &name).instrument(span).await
        })
        .await;
}

/// Memory `name`'s run, if its gate is open (read without opening it);
/// then, for a daemon of one memory with `[sync] after_consolidation`,
/// a sync when the run changed something.
async fn consolidate(memories: &Memories, name: &str) {
    // Held while the run goes on: a handover to another node waits for it
    // (refused: the memory is moving, and runs where it goes).
    let Ok(_lease) = memories.enter(name) else {
        return;
    };
    let due = memories
        .memory(name, false)
        .and_then(|m| consolidate::due(&m));
    match due {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => return tracing::warn!("cannot read the gate: {e:#}"),
    }
    let run = async {
        let opened = memories.get(name, false).await?;
        opened.target().run(Consolidate::default()).await
    };
    match run.await {
        Ok(r) if r.skipped.is_some() => {}
        Ok(r) => {
            tracing::info!(
                run = %r.run_id, pending = r.pending_facts, clusters = r.clusters,
                add = r.applied.add, replace = r.applied.replace, remove = r.applied.remove,
                keep = r.applied.keep, "consolidation run finished"
            );
            let changed = r.applied.add + r.applied.replace + r.applied.remove > 0;
            let after = memories
                .the_one()
                .is_some_and(|m| m.memory().config.sync.after_consolidation);
            if changed && after {
                sync(memories).await;
            }
        }
        Err(e) => tracing::warn!("consolidation run failed: {e:#}"),
    }
}

async fn upkeep(memories: &Memories, stop: &Shutdown) {
    let one = memories.the_one().is_some();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(UPKEEP_EVERY) => {}
            _ = stop.recv() => return,
        }
        // Only the memories used since the last round: the work of a round
        // must not grow with the number of open memories nobody uses.
        let used = memories
            .held()
            .into_iter()
            .filter(|m| m.touched.swap(false, Ordering::Relaxed) || one);
        for m in used {
            let span = tracing::info_span!("memory", name = ?m.name);
            look_after(&m).instrument(span).await;
        }
    }
}

/// Sync the index, and compact it if it needs it (a failure is a warning:
/// the next round tries again).
async fn look_after(m: &Opened) {
    let Some(index) = m.index_if_open() else {
        return;
    };
    if let Err(e) = index.writer.sync().await {
        tracing::warn!("index sync failed: {e:#}");
    }
    let t = std::time::Instant::now();
    match index.writer.compact_if_needed().await {
        Ok(false) => {}
        Ok(true) => tracing::info!(ms = t.elapsed().as_millis() as u64, "index compacted"),
        Err(e) => tracing::warn!("index compaction failed: {e:#}"),
    }
}
