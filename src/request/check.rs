//! [`Check`]: memd's invariants, verified from the files; `fix` rebuilds
//! what is derived (the index) when only it disagrees.

use serde::{Deserialize, Serialize};

use super::reindex::Reindex;
use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::check::{self, Report};
use crate::error::Result;

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Check {
    /// Repair what is derived: rebuild the index from the files when it
    /// disagrees with them (by whoever holds the index: the daemon when
    /// one runs). Files a person owns are never changed.
    #[arg(long)]
    pub fix: bool,
    /// Compare every row of the index with every file's, as a process
    /// with nothing kept does. A daemon otherwise compares only the rows
    /// of the files and table parts that changed since its last check
    /// (the same findings, at a cost that follows what changed).
    #[arg(long)]
    pub deep: bool,
}

impl Request for Check {
    type Reply = Report;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/check",
        summary: "Verify memd's invariants (`fix` rebuilds the index when only it is wrong)",
    };

    /// Checking reads the files and the table (safely beside its owner);
    /// a fix is a [`Reindex`], which goes where the index is.
    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Report> {
        let layout = &target.memory.layout;
        let open = target.index_if_open();
        let mut report = check::run_with(layout, open.as_deref(), self.deep).await?;
        let tail = |r: &Report| (r.problems.iter()).any(|p| p.kind == check::Kind::VersionsTail);
        if self.fix && tail(&report) {
            crate::versions::forget_tail(layout)?;
            report = check::run_with(layout, open.as_deref(), self.deep).await?;
        }
        if !self.fix || report.index_rows.is_none() {
            return Ok(report);
        }
        let clear = report.index_fixable;
        target.run(Reindex { clear }).await?;
        let mut after =
            check::run_with(layout, target.index_if_open().as_deref(), self.deep).await?;
        after.index_rebuilt = clear;
        Ok(after)
    }
}
