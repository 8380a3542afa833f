//! [`Consolidate`]: fold pending facts into the entries and refresh
//! MEMORY.md, then bring the index in step.

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::consolidate::{self, Report};
use crate::error::Result;

/// A run: `force` skips the time and volume gate (never the lock),
/// `dry_run` plans and writes nothing.
pub use crate::consolidate::Options as Consolidate;

impl Request for Consolidate {
    type Reply = Report;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/consolidate",
        summary: "Consolidate pending facts (`force` skips the gate, `dry_run` writes nothing)",
    };

    const NAME: Option<&'static str> = Some("Consolidate");

    /// A run needs the embedder (clusters, near duplicates), which the
    /// daemon holds, and its index is synced after.
    fn needs_index(&self) -> bool {
        true
    }

    /// Consolidate, then bring the index in step. A run uses the embedder
    /// of the index when it is open here (the daemon's), else one of its
    /// own, and opens the index only to sync it after writing. A failed
    /// sync is a warning in the report, never an error: the files are what
    /// counts, and the next search or reindex catches up.
    async fn apply(self, target: &Target) -> Result<Report> {
        let open = target.index_if_open();
        let embedder = open.as_ref().map(|i| i.embedder());
        let mut report = consolidate::run_with(&target.memory, self, embedder).await?;
        if report.skipped.is_some() || self.dry_run {
            return Ok(report);
        }
        let synced = async { target.index().await?.writer.sync().await };
        if let Err(e) = synced.await {
            let w = format!("index not updated ({e:#}); the next search or reindex will catch up");
            tracing::warn!("{w}");
            report.warnings.push(w);
        }
        Ok(report)
    }
}
