//! The daemon: one server for one memory directory (`memd serve`) or for
//! every memory under a root (`memd serve --root DIR`). It owns the index
//! of each memory it has open and runs, side by side until its shutdown
//! future resolves:
//! - the HTTP API ([`api`]: the one-memory routes of every request of
//!   [`crate::request`], at `/v1/…` or `/v1/m/{name}/…`, screened by
//!   [`guard`] first), and the web page for people ([`page`], at `/` or
//!   `/m/{name}/`, through the same requests and the same guard);
//! - the consolidation loop ([`loops`]): every `interval_seconds`, each
//!   memory's own gate, at most [`loops::RUNS_AT_ONCE`] runs at once;
//! - the upkeep loop: index compaction, and for the memories under a root
//!   a sync of those used since its last round;
//! - for one directory, the file watcher ([`crate::watch`]), keeping the
//!   index in step with hand edits. Under a root there is no watcher per
//!   memory (a thousand memories would be a thousand watchers): every
//!   search first syncs the files that changed.
//!
//! The rooms: [`memories`] (what is open, capped), [`info`] (the daemon's
//! lock and `daemon.json` in each directory it serves), [`guard`],
//! [`shutdown`], [`api`] with its [`openapi`] description, [`loops`].
//!
//! [`serve`] takes its listener, options and shutdown future from the
//! caller (as mini-redis' `server::run`): `memd serve` binds the address
//! and passes [`shutdown::signal`]; a test binds port 0 and passes a future
//! of its own. `.memd/daemon.lock` (held while a directory is served) makes
//! the daemon one per directory, and `.memd/daemon.json` says where it
//! listens, so CLI commands that would write the index go through the API
//! instead of opening the table a second time.
//!
//! Shutdown: the signal stops the loops and the HTTP server; a consolidation
//! in flight is dropped at its next await point. memd never awaits in the
//! middle of a write (the entries file, journal and state are written by
//! synchronous code in one stretch), so what was being written is finished
//! and what was only planned is planned again by the next run. Each open
//! memory then gives up its lock and its `daemon.json`, and [`serve`]
//! returns only once nothing holds them (a connection's task may outlive
//! the server by a moment), so its caller may serve them again at once.

pub(crate) mod api;
pub(crate) mod guard;
pub mod info;
mod loops;
pub mod memories;
pub mod moves;
pub(crate) mod openapi;
mod page;
pub mod shutdown;
mod state;
pub mod tenant;

use std::collections::HashMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

use tokio::net::TcpListener;

use crate::Memory;
use crate::config::Config;
use crate::error::{Context, Result};
use crate::index::Index;
use crate::request::Holder;
use memories::{Memories, Opened};

pub use info::{ensure_not_served, running};
pub use loops::RUNS_AT_ONCE;

/// What a daemon serves.
pub enum Served {
    /// One memory directory, at `/v1/…`.
    One(Memory),
    /// Every memory directory under `dir`, at `/v1/m/{name}/…`; `config`
    /// is `dir/memd.toml` (the daemon's, and new memories' template).
    Root { dir: PathBuf, config: Config },
}

/// What `memd serve` is given besides what it serves, its listener and its
/// shutdown.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Required on every request when set.
    pub token: Option<String>,
    /// Under a root: memory name → its own token, which opens that
    /// memory's routes alone.
    pub tokens: HashMap<String, String>,
    /// Under a root: the most memories open at once.
    pub max_open: usize,
}

/// Serve on `listener` until `shutdown` resolves. Refuses a directory
/// another daemon serves.
pub async fn serve(
    served: Served,
    listener: TcpListener,
    opts: Options,
    shutdown: impl Future<Output = ()>,
) -> Result<()> {
    let bound = listener.local_addr()?;
    let listen = info::Info::now(bound, opts.token.is_some() || !opts.tokens.is_empty());
    let (memories, config) = match served {
        Served::One(memory) => {
            let config = memory.config.clone();
            tracing::info!(addr = %bound, dir = %memory.layout.root.display(), "memd daemon listening");
            (Memories::one(memory, listen).await?, config)
        }
        Served::Root { dir, config } => {
            tracing::info!(addr = %bound, root = %dir.display(), "memd daemon listening for many memories");
            (Memories::root(&dir, opts.max_open, Some(listen)), config)
        }
    };
    let memories = Arc::new(memories);
    let (trigger, stop) = shutdown::channel();
    let state = Arc::new(api::State {
        memories: memories.clone(),
        config: config.clone(),
        token: opts.token,
        tokens: opts
            .tokens
            .into_iter()
            .map(|(name, token)| (name.to_ascii_lowercase(), token))
            .collect(),
        bound,
        shutdown: stop.clone(),
    });
    let loops = loops::run(&memories, &config, &stop);
    let server =
        axum::serve(listener, api::router(state)).with_graceful_shutdown(stop.clone().wait());
    let stopper = stop_on(shutdown, trigger, stop.clone());
    let (_, served, _) = tokio::join!(loops, server, stopper);
    // The last handles on the memories go with `memories` here: each
    // gives up its lock and `daemon.json`.
    let held = memories.held();
    for o in &held {
        // Rows held back from the table are committed (`index::held`).
        o.idle().await;
    }
    let opened: Vec<Weak<Opened>> = held.iter().map(Arc::downgrade).collect();
    let indexes = held.iter().filter_map(|o| o.index_if_open());
    let indexes: Vec<Weak<Index>> = indexes.map(|i| Arc::downgrade(&i)).collect();
    drop((held, memories));
    if !released(&opened, &indexes, RELEASE_WAIT).await {
        tracing::warn!("a memory is still held {RELEASE_WAIT:?} after the daemon stopped");
    }
    served.context("HTTP server")?;
    Ok(())
}

/// The longest [`serve`] waits, once stopped, for what outlived the HTTP
/// server to let go of a memory (a connection's task that had not yet
/// dropped its handle on the routes' state): a task stuck longer is
/// reported, not waited for.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Wait until nothing holds the memories a stopped daemon served, so that
/// when [`serve`] returns their locks are free: the caller may serve
/// them again at once (`memd bench search-path` does, in one process).
/// Also a handed-over memory ([`moves`]). False if something still holds
/// one after `wait`.
async fn released(
    opened: &[Weak<Opened>],
    indexes: &[Weak<Index>],
    wait: std::time::Duration,
) -> bool {
    let deadline = tokio::time::Instant::now() + wait;
    let held = || {
        opened.iter().any(|w| w.strong_count() > 0) || indexes.iter().any(|w| w.strong_count() > 0)
    };
    while held() {
        if tokio::time::Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    true
}

/// Fire `trigger` when `shutdown` resolves (or something else fired it).
async fn stop_on(
    shutdown: impl Future<Output = ()>,
    trigger: shutdown::Trigger,
    stop: shutdown::Shutdown,
) {
    tokio::select! {
        _ = shutdown => tracing::info!("shutting down"),
        _ = stop.recv() => {}
    }
    trigger.fire();
}
