//! Updates the agent declared: a fact written with `supersedes` (the
//! entries it makes no longer true) is decided without a judge, by
//! either judge. The first live target is replaced by the fact, with what
//! every target said kept as history ("new (previously: old)"); the other
//! targets are merged into it (their sources move with them, nothing is
//! lost). Pending facts with the same text join it (an agent that
//! remembered a fact and then said again that it is an update), and
//! the targets of all of them are the update's targets.
//!
//! A fact may also name pending facts it supersedes: they join the update
//! (their text kept as history, their facts as its sources), with the
//! entries they declared they supersede (the update is the newest of that
//! chain), and a named fact an earlier run already put in an entry names
//! that entry.
//!
//! A declaration is honoured only for live entries a person did not pin:
//! a target forgotten or removed since, or pinned, is left out (a pin is
//! the person's word, and outranks the agent's), and a fact with no
//! target left is judged as any other fact, with a warning. A fact whose
//! target an earlier fact of the same run already replaces waits for the
//! next run, which replaces the new text in turn (the newest is current,
//! the rest history).

use std::collections::HashSet;

use super::ops::{Cluster, Group, Op};
use super::plan::snapshot;
use super::planned::Planned;
use super::reply::repair::declared_history;
use crate::archive::Fact;
use crate::entries::Document;
use crate::history::Stated;
use crate::ids::{EntryId, FactId};
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
    let declaring: Vec<&Fact> = pending.iter().filter(|f| declares(f)).collect();
    for f in &declaring {
        let text = normalize(&f.text);
        if taken.contains(&text) {
            continue; // joined an earlier declaration of the same text
        }
        let same: Vec<&Fact> = pending
            .iter()
            .filter(|p| normalize(&p.text) == text)
            .collect();
        let facts = fact_targets(&same, &pending, &text);
        // Each pending fact that says what a target says, once: two
        // targets of one text (said twice that day) bring the same facts.
        let target_texts: HashSet<String> = facts.iter().map(|t| normalize(&t.text)).collect();
        let with: Vec<&Fact> = (pending.iter())
            .filter(|p| target_texts.contains(&normalize(&p.text)))
            .collect();
        // The facts it supersedes join it, and so does what they declared
        // they supersede: it is the newest of that chain.
        let chain: Vec<&Fact> = same.iter().chain(&with).copied().collect();
        let live = live_targets(&chain, doc, stones);
        if live.is_empty() && facts.is_empty() {
            out.warnings.push(format!(
                "fact {} declared it supersedes {}, and no live entry a person did not pin nor pending fact is among them: judged as any fact",
                f.id,
                ids(f)
            ));
            continue;
        }
        let facts_taken = facts.iter().any(|t| taken.contains(&normalize(&t.text)));
        if live.iter().any(|t| claimed.contains(t)) || facts_taken {
            out.warnings.push(format!(
                "fact {} supersedes what another fact of this run replaces: it waits for the next run",
                f.id
            ));
            taken.insert(text);
            continue;
        }
        claimed.extend(live.iter().cloned());
        taken.extend(facts.iter().map(|t| normalize(&t.text)));
        out.planned
            .push(plan(f, (&same, &with), (&live, &facts), doc));
        taken.insert(text);
    }
    out.rest = pending
        .into_iter()
        .filter(|f| !taken.contains(&normalize(&f.text)))
        .collect();
    out
}

/// Whether `f` declares that it supersedes anything.
fn declares(f: &Fact) -> bool {
    !f.supersedes.is_empty() || !f.supersedes_facts.is_empty()
}

/// The pending facts the facts of one text (`text`, normalised) supersede,
/// once each, in archive order; never one of that text.
fn fact_targets<'a>(same: &[&Fact], pending: &'a [Fact], text: &str) -> Vec<&'a Fact> {
    let named: HashSet<&FactId> = same.iter().flat_map(|f| &f.supersedes_facts).collect();
    pending
        .iter()
        .filter(|p| named.contains(&p.id) && normalize(&p.text) != text)
        .collect()
}

/// The entries the facts of one text supersede that are live and not
/// pinned, once each: facts that say the same are one update, whichever of
/// them named a target. A named fact that an entry holds names that entry.
fn live_targets(same: &[&Fact], doc: &Document, stones: &Tombstones) -> Vec<EntryId> {
    let held = same
        .iter()
        .flat_map(|f| &f.supersedes_facts)
        .filter_map(|id| doc.holder(id).cloned());
    let named = same.iter().flat_map(|f| f.supersedes.iter().cloned());
    let mut out: Vec<EntryId> = Vec::new();
    for id in named.chain(held) {
        let live = doc
            .get(id.as_str())
            .is_some_and(|e| e.meta.is_some() && !e.pinned())
            && !stones.names_entry(id.as_str());
        if live && !out.contains(&id) {
            out.push(id);
        }
    }
    out
}

/// Replace the first target entry by `f` with every target's text as
/// history (the entries', then the pending facts'); merge the other
/// entries into it. With no entry, one new entry says `f` with the
/// facts' texts as history. A single target entry that already says `f`
/// is a restatement (KEEP). `with` are the pending facts folded in (the
/// targets and the facts saying what they say).
fn plan(
    f: &Fact,
    (same, with): (&[&Fact], &[&Fact]),
    (targets, facts): (&[EntryId], &[&Fact]),
    doc: &Document,
) -> Planned {
    let all: Vec<&Fact> = same.iter().chain(with).copied().collect();
    let from: Vec<_> = all.iter().map(|s| s.id.clone()).collect();
    let group = Group {
        ids: from.clone(),
        text: f.text.clone(),
        days: all.iter().map(|s| s.day.clone()).collect(),
    };
    let entries: Vec<_> = targets
        .iter()
        .filter_map(|t| doc.get(t.as_str()).and_then(snapshot))
        .collect();
    let mut olds: Vec<(&str, Option<&str>)> = (entries.iter())
        .map(|e| (e.text.as_str(), Some(e.first_seen.as_str())))
        .collect();
    // A text the targets say more than once is one value of the past.
    for t in facts {
        if !olds.iter().any(|(o, _)| normalize(o) == normalize(&t.text)) {
            olds.push((t.text.as_str(), Some(t.day.as_str())));
        }
    }
    let now = Stated::new(&f.text, Some(&f.day));
    let mut ops = Vec::new();
    match targets.first() {
        None => ops.push(Op::Add {
            text: declared_history(&now, &olds),
            from,
        }),
        Some(first)
            if targets.len() == 1
                && facts.is_empty()
                && normalize(olds[0].0) == normalize(&f.text) =>
        {
            ops.push(Op::Keep {
                target: first.clone(),
                from,
            })
        }
        Some(first) => {
            ops.push(Op::Replace {
                target: first.clone(),
                text: declared_history(&now, &olds),
                from,
            });
            ops.extend(targets[1..].iter().map(|t| Op::Remove {
                target: t.clone(),
                into: first.clone(),
            }));
        }
    }
    let mut p = Planned::built_in(ops.remove(0), group, None);
    p.cluster = Cluster {
        groups: p.cluster.groups,
        entries,
        forgotten: Vec::new(),
    };
    p.model = "declared".into();
    if let super::planned::Decision::Ops(all) = &mut p.decision {
        all.extend(ops);
    }
    p
}

fn ids(f: &Fact) -> String {
    f.supersedes
        .iter()
        .map(|i| i.as_str())
        .chain(f.supersedes_facts.iter().map(|i| i.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}
