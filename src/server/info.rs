//! `.memd/daemon.json` and `.memd/daemon.lock`: whether a daemon serves a
//! memory directory, and where. This module owns both files.
//!
//! The lock is held for as long as the daemon serves the directory (the OS
//! frees it if the process dies), so it is what says "running"; the JSON
//! only says where to reach it. A JSON file left by a killed daemon is
//! ignored because its lock is free.

use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use crate::{Error, Layout, Result, atomic, lock};

/// `.memd/daemon.json`.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Info {
    pub pid: u32,
    /// The address actually bound (a port of 0 is resolved).
    pub listen: String,
    pub started: String,
    /// Whether requests need `Authorization: Bearer $MEMD_TOKEN`.
    pub token: bool,
    /// Set when the daemon serves many memories (`memd serve --root`):
    /// this directory's name there, whose routes are `/v1/m/NAME/…`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
}

impl Info {
    /// This process, listening on `bound` since now.
    pub(crate) fn now(bound: SocketAddr, token: bool) -> Info {
        Info {
            pid: std::process::id(),
            listen: bound.to_string(),
            started: chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            token,
            memory: None,
        }
    }

    /// The record for memory `name` of a daemon serving many (`None`: the
    /// daemon serves that one directory).
    pub(crate) fn for_memory(&self, name: Option<&str>) -> Info {
        Info {
            memory: name.map(String::from),
            ..self.clone()
        }
    }
}

/// The daemon serving this directory, if one is running (its lock is held).
pub fn running(layout: &Layout) -> Option<Info> {
    if !lock::is_held(&layout.daemon_lock()) {
        return None;
    }
    serde_json::from_slice(&std::fs::read(layout.daemon_info()).ok()?).ok()
}

/// Take the lock that makes a daemon the one serving `layout`, or the
/// error that names the daemon already holding it. A lock held only for a
/// moment is waited out ([`lock::lock_within_a_moment`]): a `memd status`
/// or a command asking whether a daemon runs probes this lock, and such a
/// probe at the instant a daemon started made the start fail as if the
/// directory were served.
pub(crate) async fn claim(layout: &Layout) -> Result<lock::Guard> {
    let path = layout.daemon_lock();
    let claimed = tokio::task::spawn_blocking(move || lock::lock_within_a_moment(&path));
    match claimed.await?? {
        Some(guard) => Ok(guard),
        None => Err(already_served(layout)),
    }
}

/// The error when another daemon already holds this directory.
fn already_served(layout: &Layout) -> Error {
    let other = running(layout);
    Error::DaemonRunning {
        dir: layout.root.clone(),
        pid: other.as_ref().map(|i| i.pid),
        listen: other.map(|i| i.listen),
    }
}

/// An error if a daemon already serves `layout`: what a caller checks
/// before binding an address, so a second daemon is told why it may not
/// start rather than that the port is taken.
pub fn ensure_not_served(layout: &Layout) -> Result<()> {
    match running(layout) {
        Some(_) => Err(already_served(layout)),
        None => Ok(()),
    }
}

/// Say where this daemon listens (atomically: a reader sees all or nothing).
pub(crate) fn write(layout: &Layout, info: &Info) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(info).expect("Info serialises");
    atomic::write(&layout.daemon_info(), &bytes)
}

/// Remove the record when the directory is no longer served.
pub(crate) fn remove(layout: &Layout) {
    let _ = std::fs::remove_file(layout.daemon_info());
}
