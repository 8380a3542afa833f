//! One daemon for every memory under a root (`memd serve --root DIR`):
//! the API of [`crate::api::many`], the memories of [`crate::memories`]
//! (opened on demand, the least recently used closed past a cap), and two
//! loops over them:
//! - consolidation: every `interval_seconds` of the root's configuration,
//!   each memory's own gate is asked (without opening it), in an order that
//!   starts one memory further on every round, so that no memory waits
//!   behind the same others each time; at most [`RUNS_AT_ONCE`] run at once;
//! - index upkeep of the open memories used since its last round, as
//!   `memd serve` does for its one.
//!
//! There is no file watcher per memory (a thousand memories would be a
//! thousand watchers): every search first syncs the files that changed,
//! hand edits included, and the upkeep loop syncs the open memories in use.
//!
//! Shutdown is `memd serve`'s: the loops and the HTTP server stop, and each
//! open memory gives up its lock and `daemon.json`.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use tokio::net::TcpListener;
use tracing::Instrument;

use super::OPTIMIZE_CHECK_EVERY;
use crate::api::many as api;
use crate::config::Config;
use crate::daemon_info::Info;
use crate::error::Result;
use crate::memories::Memories;
use crate::shutdown::{self, Shutdown};
use crate::{Layout, consolidate};

/// How many memories consolidate at once (each run is mostly one core of
/// embedding or waiting on an LLM).
pub const RUNS_AT_ONCE: usize = 2;

/// What `memd serve --root` is given besides its listener and shutdown.
pub struct Options {
    pub token: Option<String>,
    /// Memory name → its own token.
    pub tokens: HashMap<String, String>,
    /// Open memories at most.
    pub max_open: usize,
}

/// Serve every memory under `root` on `listener` until `shutdown` resolves.
pub async fn serve(
    root: &Path,
    config: Config,
    listener: TcpListener,
    opts: Options,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let local = listener.local_addr()?;
    let info = Info {
        pid: std::process::id(),
        listen: local.to_string(),
        started: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        token: opts.token.is_some() || !opts.tokens.is_empty(),
        memory: None,
    };
    let memories = Arc::new(Memories::new(root, opts.max_open, info));
    tracing::info!(addr = %local, root = %root.display(), "memd daemon listening for many memories");
    let (trigger, stop) = shutdown::channel();
    let state = Arc::new(api::State {
        memories: memories.clone(),
        config: config.clone(),
        token: opts.token,
        tokens: opts.tokens,
        bound: local,
        shutdown: stop.clone(),
    });
    let loops = async {
        tokio::join!(
            consolidation_loop(&memories, &config, stop.clone()),
            upkeep_loop(&memories, stop.clone())
        )
    };
    let server =
        axum::serve(listener, api::router(state)).with_graceful_shutdown(stop.clone().wait());
    let stopper = super::stop_on(shutdown, trigger, stop.clone());
    let (_, served, _) = tokio::join!(loops, server, stopper);
    // The last handles on the memories go with `memories` here: each
    // gives up its lock and `daemon.json`.
    drop(memories);
    served.map_err(|e| crate::error::err!("HTTP server: {e}"))?;
    Ok(())
}

/// Whether memory `layout`'s gate would let a run start (read only).
fn due(layout: &Layout) -> bool {
    let run = || -> Result<bool> {
        let config = Config::load(&layout.root)?;
        consolidate::due(layout, &config)
    };
    run().unwrap_or_else(|e| {
        tracing::warn!(dir = %layout.root.display(), "cannot read the gate: {e:#}");
        false
    })
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
            let layout = Layout::new(memories.root.join(&name));
            if !due(&layout) {
                return;
            }
            let run = async {
                let m = memories.get(&name, false).await?;
                let opts = consolidate::Options::default();
                crate::service::consolidate_then_sync(&m.layout, &m.config, opts, Some(&m.index))
                    .await
            };
            match run.await {
                Ok(r) if r.skipped.is_some() => {}
                Ok(r) => {
                    tracing::info!(memory = %name, run = %r.run_id, "consolidation run finished")
                }
                Err(e) => tracing::warn!(memory = %name, "consolidation run failed: {e:#}"),
            }
        })
        .await;
}

async fn consolidation_loop(memories: &Memories, config: &Config, stop: Shutdown) {
    let every = Duration::from_secs(config.consolidation.interval_seconds.max(1));
    let start = AtomicUsize::new(0);
    super::rounds(every, &stop, || {
        round(memories, start.fetch_add(1, Ordering::Relaxed))
    })
    .await
}

async fn upkeep_loop(memories: &Memories, stop: Shutdown) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(OPTIMIZE_CHECK_EVERY) => {}
            _ = stop.recv() => return,
        }
        // Only the memories used since the last round: the work of a round
        // must not grow with the number of open memories nobody uses.
        let used = memories
            .held()
            .into_iter()
            .filter(|m| m.touched.swap(false, Ordering::Relaxed));
        for m in used {
            let span = tracing::info_span!("memory", name = %m.name);
            let one = async {
                if let Err(e) = m.index.sync().await {
                    tracing::warn!("index sync failed: {e:#}");
                }
                super::upkeep(&m.index).await;
            };
            one.instrument(span).await;
        }
    }
}
