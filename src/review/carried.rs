//! What carrying out REVIEW.md's decisions did ([`Carried`]): a part of a
//! run's report as much as of `memd review apply`'s, so it stands apart
//! from the carrying out itself, which goes through consolidation.

use serde::{Deserialize, Serialize};

use crate::ids::{FactId, ProposalId, RunId};

/// What carrying out the decisions did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Carried {
    /// The run that changed the entries (`memd undo` takes it back).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    pub accepted: Vec<ProposalId>,
    pub rejected: Vec<ProposalId>,
    /// Facts of rejected ops, added word for word as entries of their own.
    pub kept_verbatim: Vec<FactId>,
    /// Proposals not carried out because a fact of theirs was forgotten
    /// or erased since (their other facts are pending again).
    pub withdrawn: Vec<Left>,
    /// Decisions left alone, each with why (an accepted op whose entry
    /// changed since; a gone item while the file has unreadable lines).
    pub left: Vec<Left>,
    /// Items of proposals carried out before, found in REVIEW.md again:
    /// taken out, nothing applied twice.
    pub repeated: Vec<ProposalId>,
    /// Lines of REVIEW.md that look like items memd cannot read (1-based).
    pub unreadable: Vec<Unreadable>,
    /// Proposals still open after this.
    pub open: usize,
}

impl Carried {
    /// What carrying out did, in a sentence, then each decision left alone
    /// and why, after `sep`.
    pub fn summary(&self, sep: &str) -> String {
        let mut out = format!(
            "carried out: {} accepted, {} rejected ({} facts kept word for word), {} left, {} still open",
            self.accepted.len(),
            self.rejected.len(),
            self.kept_verbatim.len(),
            self.left.len() + self.withdrawn.len(),
            self.open
        );
        for l in self.left.iter().chain(&self.withdrawn) {
            out.push_str(&format!("{sep}{}: {}", l.item, l.why));
        }
        out
    }
}

/// A proposal left as it was, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Left {
    pub item: ProposalId,
    pub why: String,
}

/// A line of REVIEW.md memd cannot read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Unreadable {
    pub line: usize,
    pub text: String,
}
