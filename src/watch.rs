//! The watcher: keeps the index in step with files changed by hand or by
//! other processes.
//!
//! `notify` events (debounced) trigger a sync; a periodic reconcile syncs
//! anyway, catching events the OS dropped (editors that replace files,
//! network file systems, a full event queue). Sync is by content
//! fingerprint, so a spurious event costs one hash per file. Health goes to
//! `.memd/watch.json` (this module owns it) for `memd status`.

use std::time::Duration;

use notify_debouncer_full::notify::RecursiveMode;
use serde::{Deserialize, Serialize};

use crate::Result;
use crate::index::Index;
use crate::{Error, Layout, atomic};

#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Health {
    pub pid: u32,
    pub started: String,
    /// Refreshed at every sync and reconcile: a stale heartbeat means the
    /// watcher is gone or stuck.
    pub heartbeat: String,
    pub reconcile_seconds: u64,
    pub events: u64,
    pub syncs: u64,
    pub last_sync: Option<String>,
    pub last_error: Option<String>,
}

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn health_path(layout: &Layout) -> std::path::PathBuf {
    layout.watch_health()
}

/// The last health record, and whether it looks alive (its process exists
/// and its heartbeat is recent).
pub fn health(layout: &Layout) -> Option<(Health, bool)> {
    let h: Health = serde_json::from_slice(&std::fs::read(health_path(layout)).ok()?).ok()?;
    let beat = chrono::DateTime::parse_from_rfc3339(&h.heartbeat).ok()?;
    let age = chrono::Local::now()
        .signed_duration_since(beat)
        .num_seconds();
    let alive = std::path::Path::new(&format!("/proc/{}", h.pid)).exists()
        && age <= (h.reconcile_seconds as i64) * 2 + 5;
    Some((h, alive))
}

/// Watch the memory directory until `shutdown` resolves.
pub async fn run(
    layout: &Layout,
    index: &Index,
    reconcile: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<()> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let runtime_dir = layout.runtime_dir();
    let mut debouncer = notify_debouncer_full::new_debouncer(
        Duration::from_millis(250),
        None,
        move |res: notify_debouncer_full::DebounceEventResult| {
            let relevant = match &res {
                // Our own derived files change at every sync: ignore them.
                Ok(events) => events
                    .iter()
                    .any(|e| e.paths.iter().any(|p| !p.starts_with(&runtime_dir))),
                Err(_) => true,
            };
            if relevant {
                let _ = tx.send(());
            }
        },
    )
    .map_err(|e| Error::msg(format!("cannot watch files: {e}")))?;
    debouncer
        .watch(&layout.root, RecursiveMode::Recursive)
        .map_err(|e| Error::msg(format!("cannot watch {}: {e}", layout.root.display())))?;

    let mut health = Health {
        pid: std::process::id(),
        started: now(),
        heartbeat: now(),
        reconcile_seconds: reconcile.as_secs().max(1),
        ..Default::default()
    };
    let mut tick = tokio::time::interval(reconcile);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            _ = &mut shutdown => break,
            Some(()) = rx.recv() => {
                health.events += 1;
                // Coalesce a burst of events into one sync.
                while rx.try_recv().is_ok() {
                    health.events += 1;
                }
            }
            _ = tick.tick() => {}
        }
        match index.writer.sync().await {
            Ok(r) => {
                if r.files_synced > 0 {
                    tracing::info!(
                        files = r.files_synced,
                        added = r.rows_added,
                        deleted = r.rows_deleted,
                        "index synced"
                    );
                    health.syncs += 1;
                    health.last_sync = Some(now());
                }
                health.last_error = None;
            }
            Err(e) => {
                tracing::warn!("index sync failed (will retry): {e:#}");
                health.last_error = Some(format!("{e:#}"));
            }
        }
        health.heartbeat = now();
        atomic::write(&health_path(layout), &serde_json::to_vec_pretty(&health)?)?;
    }
    Ok(())
}
