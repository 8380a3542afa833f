//! Validation: checks a reply's ops and changes nothing (the rewriting is
//! [`super::repair`]). Before repair, [`proposed`] checks each op on its
//! own and the entries they touch; after it, [`ops`] checks what the ops
//! say: every fact named is said by an op, a merge lands in an entry that
//! says what the removed one said, the run's REMOVE budget, and every fact
//! placed. An error names what is wrong, to be sent back to the judge.

use std::collections::HashSet;

use super::faithful::{
    SAYS_MIN_COVERAGE, capitalised, negated, replace_becomes_add, says, unfaithful,
};
use super::parse::{Kind, Proposed};
use crate::consolidate::ops::{Cluster, Op};
use crate::text::{content_words, coverage};

/// Each op on its own, then the facts and entries they touch: each fact
/// placed by one op (the same ADD twice would make two entries), each
/// entry touched at most once (a REPLACE that repair turns into an ADD
/// touches none), none merged into an entry that is itself removed.
pub(crate) fn proposed(proposed: &[Proposed], cluster: &Cluster) -> Result<(), String> {
    let mut touched: HashSet<usize> = HashSet::new();
    let mut placed: HashSet<usize> = HashSet::new();
    for p in proposed {
        one(p, cluster)?;
        let mine: HashSet<usize> = p.from.iter().copied().collect();
        if let Some(g) = mine.iter().find(|g| !placed.insert(**g)) {
            return Err(format!(
                "{}: F{} is placed by two operations; place each fact once",
                p.at,
                g + 1
            ));
        }
        let touches = match p.kind {
            Kind::Add => None,
            Kind::Replace if replace_becomes_add(p, cluster) => None,
            _ => p.target,
        };
        if let Some(t) = touches
            && !touched.insert(t)
        {
            return Err(format!("{}: E{} is touched more than once", p.at, t + 1));
        }
    }
    let removed: HashSet<usize> = removes(proposed).map(|(t, _)| t).collect();
    if let Some((_, into)) = removes(proposed).find(|(_, into)| removed.contains(into)) {
        return Err(format!(
            "E{} is removed, so nothing can be merged into it",
            into + 1
        ));
    }
    Ok(())
}

/// The (target, into) of each REMOVE.
fn removes(proposed: &[Proposed]) -> impl Iterator<Item = (usize, usize)> + '_ {
    proposed
        .iter()
        .filter(|p| p.kind == Kind::Remove)
        .filter_map(|p| Some((p.target?, p.into?)))
}

/// What one op needs: text and facts where it writes, an entry that may be
/// changed, and (a REPLACE without facts) only what was shown.
fn one(p: &Proposed, cluster: &Cluster) -> Result<(), String> {
    let at = &p.at;
    let pinned = |t: usize| cluster.entries[t].pinned;
    match (p.kind, p.target) {
        (Kind::Add, _) if p.text.is_empty() => Err(format!("{at} (ADD) has no text")),
        (Kind::Add, _) if p.from.is_empty() => {
            Err(format!("{at} (ADD) must name the facts it comes from"))
        }
        (Kind::Replace, _) if p.text.is_empty() => Err(format!("{at} (REPLACE) has no text")),
        (Kind::Replace, Some(t)) if pinned(t) => {
            Err(format!("{at}: E{} is pinned and cannot be replaced", t + 1))
        }
        (Kind::Replace, Some(t)) if p.from.is_empty() => {
            match unfaithful(&p.text, &p.from, cluster, Some(t)) {
                Some(made_up) => Err(format!(
                    "{at} (REPLACE E{}) says what no fact or entry shown says ({}); write only what they say",
                    t + 1,
                    made_up.join(", ")
                )),
                // An entry changes because a fact says so, never on the
                // judge's word alone.
                None => Err(format!(
                    "{at} (REPLACE E{}) must name the facts it comes from",
                    t + 1
                )),
            }
        }
        (Kind::Keep, _) if p.from.is_empty() => {
            Err(format!("{at} (KEEP) must name the facts it restates"))
        }
        (Kind::Remove, Some(t)) if p.into == Some(t) => {
            Err(format!("{at}: an entry cannot be merged into itself"))
        }
        (Kind::Remove, Some(t)) if pinned(t) => {
            Err(format!("{at}: E{} is pinned and cannot be removed", t + 1))
        }
        _ => Ok(()),
    }
}

/// The repaired `ops` of `proposed`: what they say and how much they
/// remove; every fact is in some op, or `kept_out` (a FORGET).
pub fn ops(
    proposed: &[Proposed],
    ops: &[Op],
    cluster: &Cluster,
    remove_budget: u32,
    kept_out: &HashSet<usize>,
) -> Result<(), String> {
    let named: HashSet<usize> = proposed
        .iter()
        .flat_map(|p| p.from.iter().copied())
        .collect();
    let said = |g: usize| ops.iter().any(|op| says(op, g, cluster));
    if let Some(g) = (0..cluster.groups.len()).find(|&g| named.contains(&g) && !said(g)) {
        return Err(format!(
            "F{} ({:?}) is named in \"from\" but no text says it: ADD it in its own words, or REPLACE an entry with a text that includes it",
            g + 1,
            cluster.groups[g].text
        ));
    }
    merges(proposed, ops, cluster)?;
    let removed: HashSet<usize> = removes(proposed).map(|(t, _)| t).collect();
    let n = removed.len() as u32;
    if n > remove_budget {
        return Err(format!(
            "{n} REMOVE operations, but only {remove_budget} are allowed in this run; remove only to merge true duplicates"
        ));
    }
    let missing: Vec<String> = (0..cluster.groups.len())
        .filter(|g| !named.contains(g) && !kept_out.contains(g))
        .map(|g| format!("F{}", g + 1))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "every new fact must appear in the \"from\" of an operation; missing: {}",
            missing.join(", ")
        ));
    }
    Ok(())
}

/// A merge must land in an entry that says (after this reply) what the
/// removed one said.
fn merges(proposed: &[Proposed], ops: &[Op], cluster: &Cluster) -> Result<(), String> {
    for (t, into) in removes(proposed) {
        let into_id = &cluster.entries[into].id;
        let final_text = ops
            .iter()
            .find_map(|op| match op {
                Op::Replace { target, text, .. } if target == into_id => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or(&cluster.entries[into].text);
        let removed = &cluster.entries[t].text;
        // The merged entry must still say everything the removed one did:
        // its names and numbers ("Alice, Bob, Carol and Dave" folded into
        // "Alice" keeps half the words and loses three people) and whether
        // it was negated.
        let kept = content_words(final_text);
        if coverage(removed, final_text) < SAYS_MIN_COVERAGE
            || !capitalised(removed).iter().all(|w| kept.contains(w))
            || negated(removed) != negated(final_text)
        {
            let (t, i) = (t + 1, into + 1);
            return Err(format!(
                "REMOVE E{t} into E{i}: E{i} does not say what E{t} says; REPLACE E{i} with a text holding both, or leave E{t}"
            ));
        }
    }
    Ok(())
}
