//! `.memd/daemon.json` and `.memd/daemon.lock`: whether a daemon serves a
//! memory directory, and where. This module owns both files.
//!
//! The lock is held for the daemon's whole life (the OS frees it if the
//! process dies), so it is what says "running"; the JSON only says where
//! to reach it. A JSON file left by a killed daemon is ignored because its
//! lock is free.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::{Layout, lock};

/// `.memd/daemon.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
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

fn info_path(layout: &Layout) -> PathBuf {
    layout.runtime_dir().join("daemon.json")
}

/// The lock a daemon holds for its life.
pub(crate) fn lock_path(layout: &Layout) -> PathBuf {
    layout.runtime_dir().join("daemon.lock")
}

/// The daemon serving this directory, if one is running (its lock is held).
pub fn running(layout: &Layout) -> Option<Info> {
    if !lock::is_held(&lock_path(layout)) {
        return None;
    }
    serde_json::from_slice(&std::fs::read(info_path(layout)).ok()?).ok()
}

/// Say where this daemon listens (atomically: a reader sees all or nothing).
pub(crate) fn write(layout: &Layout, info: &Info) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(info).expect("Info serialises");
    crate::atomic::write(&info_path(layout), &bytes)
}

/// Remove the record at shutdown.
pub(crate) fn remove(layout: &Layout) {
    let _ = std::fs::remove_file(info_path(layout));
}
