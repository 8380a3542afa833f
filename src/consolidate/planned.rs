//! What the judges decide: each cluster's [`Decision`] with what it was
//! decided on ([`Planned`]), and a run's whole plan ([`Decided`]). Every
//! stage after judging (declared updates, apply, commit, review) reads
//! these; none of them needs the judges.

use super::ops::{Cluster, Group, Op, Snapshot};
use crate::ids::EntryId;
use crate::tombstones::Tombstone;

/// What a cluster's judge decided.
#[derive(Debug, Clone)]
pub(crate) enum Decision {
    Ops(Vec<Op>),
    /// Replies stayed invalid past `max_retries`: add the facts verbatim.
    Fallback(String),
    /// No usable reply this run; the facts stay pending. `counted` when the
    /// replies were invalid (as opposed to the LLM being unreachable).
    Failed {
        error: String,
        counted: bool,
        /// The day's LLM budget stopped the call ([`crate::usage`]).
        over_budget: bool,
    },
}

#[derive(Debug)]
pub(crate) struct Planned {
    pub cluster: Cluster,
    pub decision: Decision,
    pub model: String,
    pub prompt_hash: Option<String>,
    /// Invalid replies so far for these facts (across runs).
    pub failures: u32,
    /// Fact groups the judge kept out as saying what was forgotten, each
    /// with the index of that text in `cluster.forgotten`.
    pub kept_out: Vec<(usize, usize)>,
}

impl Planned {
    /// A decision of the built-in judge: one op on one group of facts.
    pub(crate) fn built_in(op: Op, group: Group, entry: Option<Snapshot>) -> Planned {
        Planned {
            decision: Decision::Ops(vec![op]),
            cluster: Cluster {
                groups: vec![group],
                entries: entry.into_iter().collect(),
                forgotten: Vec::new(),
            },
            model: "built-in".into(),
            prompt_hash: None,
            failures: 0,
            kept_out: Vec::new(),
        }
    }

    /// The entries the decision's ops name.
    pub(crate) fn entries_touched(&self) -> Vec<EntryId> {
        let Decision::Ops(ops) = &self.decision else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for op in ops {
            out.extend(op.target().cloned());
            if let Op::Remove { into, .. } = op {
                out.push(into.clone());
            }
        }
        out
    }
}

/// What a run's judging planned ([`super::judge::Decide::decide`]).
pub(crate) struct Decided {
    pub planned: Vec<Planned>,
    /// The first this many of `planned` are restatements (tiers 1 and 2).
    pub restatements: usize,
    /// For pending facts that say what was forgotten (in other words than
    /// the tombstone's): each keeps its fact out for good, under the
    /// forgotten entry's id, so `memd forget --undo` lifts both.
    pub tombstones: Vec<Tombstone>,
}
