//! The run report: what a consolidation run did, as data; each front end
//! (the command line, the API, MCP) presents it its own way.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::ops::Op;
use crate::ids::{EntryId, FactId, ProposalId, RunId};
use crate::review::carried::Carried;

/// What became of one cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The judge's ops (valid, after repair).
    Ops,
    /// Restatements merged without a judge (tiers 1 and 2).
    Restatement,
    /// Replies stayed invalid: the facts are added verbatim, unreviewed.
    Fallback,
    /// No usable reply this run: the facts stay pending.
    Failed,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ops => "ops",
            Verdict::Restatement => "restatement",
            Verdict::Fallback => "fallback",
            Verdict::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// One cluster in the run report.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct ClusterReport {
    pub facts: Vec<FactId>,
    pub entries: Vec<EntryId>,
    pub decision: Verdict,
    pub ops: Vec<Op>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Readable diff of the planned ops.
    pub diff: String,
}

/// A fact a tombstone kept out.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Suppressed {
    pub fact: FactId,
    pub text: String,
    /// The forgotten entry whose text it restates, when one was forgotten.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forgotten: Option<EntryId>,
    /// When an erasure keeps it out: the erasure's time. Its journal
    /// record then holds no text (the erasure took it out of every file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<String>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Counts {
    pub add: usize,
    pub replace: usize,
    pub remove: usize,
    pub keep: usize,
}

/// What a consolidation run did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
#[schemars(rename = "RunReport")]
pub struct Report {
    pub run_id: RunId,
    pub dry_run: bool,
    pub judge: String,
    /// Why the gate skipped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub pending_facts: usize,
    /// Pending facts of proposals waiting in `consolidated/REVIEW.md`: no
    /// run plans them until a person decides (not in `pending_facts`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub under_review: usize,
    /// With `review = "manual"`: the ops this run proposed (items of
    /// `consolidated/REVIEW.md`), none of them applied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposed: Vec<ProposalId>,
    /// The decisions of REVIEW.md this run carried out first, when there
    /// were any ([`crate::review`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<Carried>,
    /// Facts that restate an entry, or a fact an entry holds: merged
    /// without a judge.
    pub restatements: usize,
    /// Facts that say what an entry says in nearly the same words (tier 2,
    /// [`crate::duplicate`]): merged by the built-in judge.
    pub near_duplicates: usize,
    /// Clusters sent to the judge (restatements not counted).
    pub clusters: usize,
    pub llm_calls: usize,
    /// LLM replies that could not be used (asked again, or the fallback).
    pub invalid_replies: usize,
    pub prompt_tokens: u64,
    /// As the server reports them (0 when it does not).
    pub completion_tokens: u64,
    pub applied: Counts,
    /// New facts that restate something forgotten: not kept, and named
    /// here (and in the journal) so that no fact disappears silently.
    pub suppressed: Vec<Suppressed>,
    /// Entries memd wrote that a person deleted from the file: recorded as
    /// forgotten (tombstoned with their facts) by this run.
    pub deleted_by_hand: usize,
    /// Ops not applied because their target was edited by hand meanwhile.
    pub skipped_hand_edited: usize,
    /// Facts decided as the updates they declared (`supersedes`), without
    /// a judge.
    #[serde(default)]
    pub declared_updates: usize,
    /// Facts the built-in judge folded into what they update
    /// ([`crate::update`]), the old text kept as history.
    #[serde(default)]
    pub judged_updates: usize,
    /// Clusters with no usable reply this run (facts stay pending).
    pub failed_clusters: usize,
    /// The facts of those clusters: still pending, tried again next run
    /// (`memd consolidate` exits 6 when there are any).
    #[serde(default)]
    pub failed_facts: Vec<FactId>,
    /// The day's LLM budget (`[llm] max_tokens_per_day`) stopped a call:
    /// the failed clusters' facts wait for another day.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub over_budget: bool,
    /// Facts added verbatim and marked unreviewed.
    pub fallback_facts: usize,
    /// Facts settled after this run (decided, in an entry, or forgotten).
    pub facts_done: usize,
    pub promoted_lines: usize,
    pub cluster_reports: Vec<ClusterReport>,
    pub warnings: Vec<String>,
    pub total_ms: f64,
    /// Summed time of the LLM calls (they overlap with `concurrency` > 1).
    pub llm_ms: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

pub(crate) fn count(c: &mut Counts, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Add { .. } => c.add += 1,
            Op::Replace { .. } => c.replace += 1,
            Op::Remove { .. } => c.remove += 1,
            Op::Keep { .. } => c.keep += 1,
        }
    }
}
