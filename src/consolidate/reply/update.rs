//! The second look at each ADD beside entries (off by default; see
//! `[consolidation] check_updates`).

use std::collections::HashSet;

use serde_json::Value;

use super::parse::field;
use super::repair::with_history;
use crate::consolidate::ops::{Aliases, Cluster, Group, Op};
use crate::text::content_words;

/// The second look at an ADD (DESIGN §3 leaves how the judge is asked to
/// memd): small models ADD a fact that updates an entry shown beside it
/// far more often than they REPLACE ("beside": the stale entry stays and
/// reads as current). So for each ADD of a reply, when the cluster has
/// entries no op of the reply touches, the judge is asked one narrow
/// question: does this fact make one of these entries out of date? A yes
/// turns the ADD into a REPLACE that keeps the old text as history; any
/// other answer (none, an entry not shown, no reply) leaves the ADD.
///
/// The entries the ADD at `i` could update: shown in the cluster, not
/// pinned, not touched by another op, sharing a content word with the
/// ADD's text (a yes for an entry with nothing in common is a misreading),
/// at most [`SECOND_LOOK_MAX`] of them, those sharing the most words.
pub(crate) fn update_candidates(ops: &[Op], i: usize, cluster: &Cluster) -> Vec<usize> {
    let Some(Op::Add { text, from }) = ops.get(i) else {
        return Vec::new();
    };
    // A fact another op places already (a REPLACE, say) is not asked about
    // again: one fact updating two entries is far more often a misreading.
    let elsewhere = ops
        .iter()
        .enumerate()
        .any(|(j, op)| j != i && op.from().iter().any(|id| from.contains(id)));
    if elsewhere {
        return Vec::new();
    }
    let words = content_words(text);
    let busy: HashSet<&str> = ops
        .iter()
        .flat_map(|op| match op {
            Op::Remove { target, into } => vec![target.as_str(), into.as_str()],
            other => other.target().map(|t| t.as_str()).into_iter().collect(),
        })
        .collect();
    let mut shared: Vec<(usize, usize)> = cluster
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.pinned && !busy.contains(e.id.as_str()))
        .map(|(k, e)| {
            let n = content_words(&e.text)
                .iter()
                .filter(|w| words.contains(*w))
                .count();
            (k, n)
        })
        .filter(|&(_, n)| n > 0)
        .collect();
    // Most shared words first, and only a few: every extra entry is one
    // more distractor for a small model.
    shared.sort_by_key(|&(k, n)| (std::cmp::Reverse(n), k));
    shared.truncate(SECOND_LOOK_MAX);
    shared.into_iter().map(|(k, _)| k).collect()
}

/// Most entries one second look shows.
pub(crate) const SECOND_LOOK_MAX: usize = 3;

/// What the second look asks about: the ADD's text as the one fact, the
/// candidate entries.
pub(crate) fn update_question(
    ops: &[Op],
    i: usize,
    cluster: &Cluster,
    candidates: &[usize],
) -> Cluster {
    let (text, from) = match &ops[i] {
        Op::Add { text, from } => (text.clone(), from.clone()),
        _ => Default::default(),
    };
    let days = cluster
        .groups
        .iter()
        .filter(|g| g.ids.iter().any(|id| from.contains(id)))
        .flat_map(|g| g.days.iter().cloned())
        .max()
        .into_iter()
        .collect();
    Cluster {
        groups: vec![Group {
            ids: from,
            text,
            days,
        }],
        entries: candidates
            .iter()
            .map(|&k| cluster.entries[k].clone())
            .collect(),
        forgotten: Vec::new(),
    }
}

/// The entry (index into `question.entries`) a second-look reply names as
/// out of date, if it names one that was shown. Lenient about shape:
/// `{"outdated": "E2"}`, `{"entry": "e2"}`, a bare `"E2"`.
pub fn outdated(reply: &Value, question: &Cluster) -> Option<usize> {
    let v = match reply {
        Value::Object(_) => field(reply, &["outdated", "entry", "target", "answer"])?,
        other => other,
    };
    let name = v.as_str()?.trim();
    Aliases::new(question).entry(name)
}

/// Turn the ADD at `i` into a REPLACE of `cluster.entries[k]` (one of its
/// [`update_candidates`]) that keeps the entry's text as history.
pub(crate) fn make_update(ops: &mut [Op], i: usize, cluster: &Cluster, k: usize) {
    if let Op::Add { text, from } = &ops[i] {
        let entry = &cluster.entries[k];
        ops[i] = Op::Replace {
            target: entry.id.clone(),
            text: with_history(text, &entry.text),
            from: from.clone(),
        };
    }
}
