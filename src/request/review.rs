//! [`ReviewItems`] and [`Review`]: the ops a run in review mode proposed,
//! and a person's decisions on them ([`crate::review`]).

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::error::{Error, Result};
use crate::ids::ProposalId;
use crate::remedy::Remedy;
use crate::review::{self, Carried};

/// The open proposals of `consolidated/REVIEW.md`, oldest first, each with
/// what the file says of it, and the lines of the file memd cannot read.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewItems {}

pub use crate::review::Items;

impl Request for ReviewItems {
    type Reply = Items;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/review",
        summary: "The ops consolidation proposed for review, and what REVIEW.md says of each",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Items> {
        let layout = target.memory.layout.clone();
        blocking(move || review::list(&layout)).await
    }
}

/// What to do with proposals.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Mark their items `[x]` in REVIEW.md.
    Accept,
    /// Take their items out of REVIEW.md.
    Reject,
    /// Carry out what REVIEW.md says now (what the next run would).
    #[default]
    Apply,
}

/// Accept or reject proposals (editing REVIEW.md as a person would), or
/// carry out the decisions; with `apply: true`, accepting or rejecting
/// carries them out at once.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct Review {
    #[serde(default)]
    #[arg(skip)]
    pub action: Action,
    /// The proposals (`p-…`) to accept or reject.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<ProposalId>,
    /// Every open proposal.
    #[serde(default)]
    #[arg(long, conflicts_with = "ids")]
    pub all: bool,
    /// Carry out the decisions at once (for `accept` and `reject`).
    #[serde(default)]
    #[arg(long)]
    pub apply: bool,
}

/// What [`Review`] did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Reviewed {
    /// The proposals whose items were marked or taken out.
    pub changed: Vec<ProposalId>,
    /// What carrying out the decisions did, when it ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub carried: Option<Carried>,
}

impl Request for Review {
    type Reply = Reviewed;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/review",
        summary: "Accept or reject proposed ops (as an edit of REVIEW.md), or carry out the decisions",
    };

    /// Carrying out decisions brings the index in step after.
    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Reviewed> {
        let mut out = Reviewed::default();
        if self.action != Action::Apply {
            if self.ids.is_empty() && !self.all {
                return Err(
                    Error::Invalid("name the proposals to decide (`p-…`), or all".into())
                        .remedied(Remedy::ReviewItems),
                );
            }
            let memory = target.memory.clone();
            let accept = self.action == Action::Accept;
            let (ids, all) = (self.ids, self.all);
            out.changed = blocking(move || review::decide(&memory, &ids, all, accept)).await?;
            if !self.apply {
                return Ok(out);
            }
        }
        let open = target.index_if_open();
        let embedder = open.as_ref().map(|i| i.embedder());
        let carried = review::apply(&target.memory, embedder).await?;
        if carried.run.is_some() {
            target.settle().await;
        }
        out.carried = Some(carried);
        Ok(out)
    }
}
