//! [`Runs`] and [`Undo`]: the runs of the journal, and taking one back.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::error::Result;
use crate::ids::RunId;
use crate::runs::{Options, Outcome, Run, list, undo};

/// Every run in the journal, oldest first: when, kind, judges, ops by
/// kind, facts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Runs {
    /// Only the newest N runs (default: every run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    // The command line lists the newest 20 unless told otherwise.
    #[arg(long, default_value = "20", help = "Show only the newest N runs")]
    pub last: Option<usize>,
}

impl Request for Runs {
    type Reply = Vec<Run>;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/runs",
        summary: "The runs in the journal, oldest first",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Vec<Run>> {
        let layout = target.memory.layout.clone();
        let runs = blocking(move || list(&layout)).await?;
        let keep = self.last.unwrap_or(runs.len()).min(runs.len());
        Ok(runs[runs.len() - keep..].to_vec())
    }
}

/// Undo a run: entries back as the run found them, its facts pending again
/// (or, with `keep_out`, forgotten). Journaled, so it can be undone.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Undo {
    /// The run to undo (as the runs list names it).
    pub run: RunId,
    #[serde(flatten)]
    #[command(flatten)]
    pub options: Options,
}

impl Request for Undo {
    type Reply = Outcome;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/runs/{run}/undo",
        summary: "Undo a run (`dry_run` writes nothing, `keep_out` forgets its facts)",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Outcome> {
        let memory = target.memory.clone();
        let (run, opts) = (self.run, self.options);
        let outcome = blocking(move || undo(&memory, &run, opts)).await?;
        if outcome.run.is_some() {
            target.settle().await;
        }
        Ok(outcome)
    }
}
