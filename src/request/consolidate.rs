//! [`Consolidate`]: fold pending facts into the entries and refresh
//! MEMORY.md, then bring the index in step.

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::consolidate::Report;
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

    /// A run needs the embedder (clusters, near duplicates), which the
    /// daemon holds, and its index is synced after.
    fn needs_index(&self) -> bool {
        true
    }

    /// Consolidate, then bring the index in step. A failed sync is a
    /// warning in the report, never an error: the files are what counts,
    /// and the next search or reindex catches up.
    async fn apply(self, target: &Target) -> Result<Report> {
        let index = target.index().await?;
        let memory = &target.memory;
        let mut report = crate::consolidate::run_with(memory, self, Some(index.embedder())).await?;
        if report.skipped.is_some() || self.dry_run {
            return Ok(report);
        }
        if let Err(e) = index.writer.sync().await {
            let w = format!(
                "index not updated ({e:#}); the next search or `memd reindex` will catch up"
            );
            tracing::warn!("{w}");
            report.warnings.push(w);
        }
        Ok(report)
    }
}
