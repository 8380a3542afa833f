//! Test failpoints: with `MEMD_PAUSE_AT=<step>` the process stops at the
//! named step, leaves `.memd/paused-at-<step>` and waits to be killed. The
//! crash-safety tests kill it there with SIGKILL, one step after another,
//! and then run `memd check`. Steps: `append-locked`, `append-written`
//! (an append), `planned`, `before-rename`, `entries-written`,
//! `journal-written`, `state-written`, `memory-md-written` (a
//! consolidation run), `undo-journaled`, `undo-entries-written` (an undo,
//! [`crate::runs`]).

use std::time::Duration;

use crate::Layout;

/// Stop here for good if `MEMD_PAUSE_AT` names `step`.
pub(crate) fn at(layout: &Layout, step: &str) {
    if std::env::var("MEMD_PAUSE_AT").ok().as_deref() == Some(step) {
        let _ = std::fs::write(
            layout.runtime_dir().join(format!("paused-at-{step}")),
            std::process::id().to_string(),
        );
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}
