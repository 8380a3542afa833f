//! `memd serve`: one daemon per memory directory. It owns the index and
//! runs, side by side until SIGINT or SIGTERM:
//! - the watcher ([`crate::watch`]), keeping the index in step with files;
//! - the consolidation loop, every `interval_seconds`, through the gate;
//! - background index optimisation: compaction and index folding once
//!   small fragments pile up, or a few of them once writes pause (checked
//!   every 10 s; see `Index::compact_if_needed`);
//! - the HTTP API ([`crate::api`]).
//!
//! `.memd/daemon.lock` (held for the daemon's life; the OS frees it if the
//! process dies) makes it one per directory; `.memd/daemon.json` (this
//! module owns it) says where it listens, so CLI commands that would write
//! the index go through the API instead of opening the table a second time.
//!
//! Shutdown: the signal stops the loops and the HTTP server; a consolidation
//! in flight is dropped at its next await point. memd never awaits in the
//! middle of a write (the entries file, journal and state are written by
//! synchronous code in one stretch), so what was being written is finished
//! and what was only planned is planned again by the next run.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::config::Config;
use crate::index::Index;
use crate::{Layout, api, consolidate, lock};

/// How often the daemon checks whether the index needs compacting.
const OPTIMIZE_CHECK_EVERY: Duration = Duration::from_secs(10);

/// How often the watcher reconciles even without file events.
const RECONCILE_EVERY: Duration = Duration::from_secs(30);

/// `.memd/daemon.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Info {
    pub pid: u32,
    /// The address actually bound (a port of 0 is resolved).
    pub listen: String,
    pub started: String,
    /// Whether requests need `Authorization: Bearer $MEMD_TOKEN`.
    pub token: bool,
}

fn info_path(layout: &Layout) -> std::path::PathBuf {
    layout.runtime_dir().join("daemon.json")
}

fn lock_path(layout: &Layout) -> std::path::PathBuf {
    layout.runtime_dir().join("daemon.lock")
}

/// The daemon serving this directory, if one is running (its lock is held).
pub fn running(layout: &Layout) -> Option<Info> {
    if !lock::is_held(&lock_path(layout)) {
        return None;
    }
    serde_json::from_slice(&std::fs::read(info_path(layout)).ok()?).ok()
}

/// A future that resolves once `stop` turns true.
pub async fn stopped(mut stop: watch::Receiver<bool>) {
    let _ = stop.wait_for(|s| *s).await;
}

async fn signal() -> Result<&'static str> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    Ok(tokio::select! {
        _ = tokio::signal::ctrl_c() => "SIGINT",
        _ = term.recv() => "SIGTERM",
    })
}

/// Run the daemon until a signal; `listen` overrides `[server] listen`.
pub async fn serve(layout: Layout, config: Config, listen: Option<String>) -> Result<()> {
    let listen = listen.unwrap_or_else(|| config.server.listen.clone());
    let token = std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty());
    let addr: SocketAddr = tokio::net::lookup_host(&listen)
        .await
        .with_context(|| format!("cannot resolve listen address {listen:?}"))?
        .next()
        .with_context(|| format!("{listen:?} resolves to no address"))?;
    if !addr.ip().is_loopback() && token.is_none() {
        bail!(
            "refusing to listen on {addr} without a token: set MEMD_TOKEN (every request must then send `Authorization: Bearer <token>`), or listen on 127.0.0.1"
        );
    }
    let Some(_guard) = lock::try_lock(&lock_path(&layout))? else {
        let other = running(&layout);
        bail!(
            "a memd daemon already serves {} (pid {}, listening on {}); stop it first",
            layout.root.display(),
            other.as_ref().map_or("?".into(), |i| i.pid.to_string()),
            other.as_ref().map_or("?", |i| i.listen.as_str()),
        );
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let info = Info {
        pid: std::process::id(),
        listen: local.to_string(),
        started: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        token: token.is_some(),
    };
    crate::atomic::write(&info_path(&layout), &serde_json::to_vec_pretty(&info)?)?;
    tracing::info!(addr = %local, dir = %layout.root.display(), "memd daemon listening");
    eprintln!("memd: serving {} on http://{local}", layout.root.display());

    let index = Arc::new(Index::open(&layout, &config).await?);
    let (stop_tx, stop) = watch::channel(false);
    let state = Arc::new(api::State {
        layout: layout.clone(),
        config: config.clone(),
        index: index.clone(),
        token,
        stop: stop.clone(),
    });
    let watcher = crate::watch::run(&layout, &index, RECONCILE_EVERY, stopped(stop.clone()));
    let loops = async {
        tokio::join!(
            consolidation_loop(&layout, &config, &index, stop.clone()),
            optimize_loop(&index, stop.clone())
        )
    };
    let server =
        axum::serve(listener, api::router(state)).with_graceful_shutdown(stopped(stop.clone()));
    let signals = async {
        tokio::select! {
            s = signal() => {
                match s {
                    Ok(name) => tracing::info!("{name}: shutting down"),
                    Err(e) => tracing::warn!("cannot wait for signals: {e}"),
                }
            }
            _ = stopped(stop.clone()) => {}
        }
        let _ = stop_tx.send(true);
    };
    let (watched, _, served, _) = tokio::join!(watcher, loops, server, signals);
    let _ = std::fs::remove_file(info_path(&layout));
    if let Err(e) = watched {
        tracing::warn!("watcher stopped with an error: {e:#}");
    }
    served.context("HTTP server")?;
    eprintln!("memd: stopped");
    Ok(())
}

async fn consolidation_loop(
    layout: &Layout,
    config: &Config,
    index: &Index,
    stop: watch::Receiver<bool>,
) {
    let every = Duration::from_secs(config.consolidation.interval_seconds.max(1));
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stopped(stop.clone()) => return,
        }
        let run =
            consolidate::run_with(layout, config, consolidate::Options::default(), Some(index));
        tokio::select! {
            r = run => match r {
                Ok(r) if r.skipped.is_some() => {}
                Ok(r) => tracing::info!(
                    run = %r.run_id, pending = r.pending_facts, clusters = r.clusters,
                    add = r.applied.add, replace = r.applied.replace, remove = r.applied.remove,
                    keep = r.applied.keep, "consolidation run finished"
                ),
                Err(e) => tracing::warn!("consolidation run failed: {e:#}"),
            },
            _ = stopped(stop.clone()) => {
                tracing::info!("consolidation interrupted by shutdown; its facts stay pending");
                return;
            }
        }
    }
}

async fn optimize_loop(index: &Index, stop: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(OPTIMIZE_CHECK_EVERY) => {}
            _ = stopped(stop.clone()) => return,
        }
        let t = std::time::Instant::now();
        match index.compact_if_needed().await {
            Ok(false) => {}
            Ok(true) => tracing::info!(ms = t.elapsed().as_millis() as u64, "index compacted"),
            Err(e) => tracing::warn!("index compaction failed: {e:#}"),
        }
    }
}
