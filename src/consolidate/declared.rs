//! Updates the agent declared: a fact written with `supersedes` (the
//! entries it makes no longer true) is decided without a judge, by
//! either judge. The first live target is replaced by the fact, with what
//! every target said kept as history ("new (previously: old)"); the other
//! targets are merged into it (their sources move with them, nothing is
//! lost). Pending facts with the same text join it (an agent that
//! remembered a fact and then said again that it is an update), and
//! the targets of all of them are the update's targets.
//!
//! A declaration is honoured only for live entries a person did not pin:
//! a target forgotten or removed since, or pinned, is left out (a pin is
//! the person's word, and outranks the agent's), and a fact with no
//! target left is judged as any other fact, with a warning. A fact whose
//! target an earlier fact of the same run already replaces waits for the
//! next run, which replaces the new text in turn (the newest is current,
//! the rest history).

use std::collections::HashSet;

use super::judge::Planned;
use super::ops::{Cluster, Group, Op};
use super::plan::snapshot;
use super::reply::repair::declared_history;
use crate::archive::Fact;
use crate::entries::Document;
use crate::ids::EntryId;
use crate::text::normalize;
use crate::tombstones::Tombstones;

/// The pending facts split: the declared updates, planned; the facts for
/// the judge; and what the run says about declarations it could not honour.
#[derive(Default)]
pub(crate) struct Declared {
    pub planned: Vec<Planned>,
    pub rest: Vec<Fact>,
    pub warnings: Vec<String>,
}

pub(crate) fn split(pending: Vec<Fact>, doc: &Document, stones: &Tombstones) -> Declared {
    let mut out = Declared::default();
    let mut claimed: HashSet<EntryId> = HashSet::new();
    let mut taken: HashSet<String> = HashSet::new();
    let declaring: Vec<&Fact> = pending
        .iter()
        .filter(|f| !f.supersedes.is_empty())
        .collect();
    for f in &declaring {
        let text = normalize(&f.text);
        if taken.contains(&text) {
            continue; // joined an earlier declaration of the same text
        }
        let same: Vec<&Fact> = pending
            .iter()
            .filter(|p| normalize(&p.text) == text)
            .collect();
        let live = live_targets(&same, doc, stones);
        if live.is_empty() {
            out.warnings.push(format!(
                "fact {} declared it supersedes {}, and no live entry a person did not pin is among them: judged as any fact",
                f.id,
                ids(&f.supersedes)
            ));
            continue;
        }
        if live.iter().any(|t| claimed.contains(t)) {
            out.warnings.push(format!(
                "fact {} supersedes an entry another fact of this run replaces: it waits for the next run",
                f.id
            ));
            taken.insert(text);
            continue;
        }
        claimed.extend(live.iter().cloned());
        out.planned.push(plan(f, &same, &live, doc));
        taken.insert(text);
    }
    out.rest = pending
        .into_iter()
        .filter(|f| !taken.contains(&normalize(&f.text)))
        .collect();
    out
}

/// The entries the facts of one text supersede that are live and not
/// pinned, once each: facts that say the same are one update, whichever of
/// them named a target.
fn live_targets(same: &[&Fact], doc: &Document, stones: &Tombstones) -> Vec<EntryId> {
    let mut out: Vec<EntryId> = Vec::new();
    for id in same.iter().flat_map(|f| &f.supersedes) {
        let live = doc
            .get(id.as_str())
            .is_some_and(|e| e.meta.is_some() && !e.pinned())
            && !stones.names_entry(id.as_str());
        if live && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// Replace the first target by `f` with every target's text as history;
/// merge the others into it. A single target that already says `f` is a
/// restatement (KEEP).
fn plan(f: &Fact, same: &[&Fact], targets: &[EntryId], doc: &Document) -> Planned {
    let from: Vec<_> = same.iter().map(|s| s.id.clone()).collect();
    let days = same.iter().map(|s| s.day.clone()).collect();
    let group = Group {
        ids: from.clone(),
        text: f.text.clone(),
        days,
    };
    let entries: Vec<_> = targets
        .iter()
        .filter_map(|t| doc.get(t.as_str()).and_then(snapshot))
        .collect();
    let first = targets[0].clone();
    let olds: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
    let mut ops = Vec::new();
    if targets.len() == 1 && normalize(olds[0]) == normalize(&f.text) {
        ops.push(Op::Keep {
            target: first,
            from,
        });
    } else {
        ops.push(Op::Replace {
            target: first.clone(),
            text: declared_history(&f.text, &olds),
            from,
        });
        ops.extend(targets[1..].iter().map(|t| Op::Remove {
            target: t.clone(),
            into: first.clone(),
        }));
    }
    let mut p = Planned::built_in(ops.remove(0), group, None);
    p.cluster = Cluster {
        groups: p.cluster.groups,
        entries,
        forgotten: Vec::new(),
    };
    p.model = "declared".into();
    if let super::judge::Decision::Ops(all) = &mut p.decision {
        all.extend(ops);
    }
    p
}

fn ids(ids: &[EntryId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
