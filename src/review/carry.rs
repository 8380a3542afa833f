//! Proposing a run's ops, and carrying out what a person decided of them
//! (see the module doc of [`super`] for the order of writes).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

use super::carried::{Carried, Left, Unreadable};
use super::sheet::{self, Mark, Sheet};
use super::{Decided, Decision, Line, Proposal, Proposals, REVIEW_JUDGE, Seen};
use crate::archive::{self, Fact};
use crate::consolidate::apply;
use crate::consolidate::ops::{Cluster, Group, Op, Snapshot};
use crate::consolidate::plan::Inputs;
use crate::consolidate::planned::{Decision as Judged, Planned};
use crate::consolidate::reply::repair;
use crate::entries::{Document, sanitize_text};
use crate::error::Result;
use crate::ids::{EntryId, FactId, ProposalId, RunId};
use crate::journal::{self, Stamp};
use crate::pause::{Step, at as pause_point};
use crate::pending::{Pending, Settled};
use crate::state::State;
use crate::{Memory, core_md};

/// Write the ops of `planned` (each cluster's decision) as proposals and
/// their items; the planned left to apply (clusters that failed, whose
/// facts stay pending and whose retries the run counts) and the ids.
pub(crate) fn propose(
    memory: &Memory,
    stamp: &Stamp,
    planned: Vec<Planned>,
    facts: &[Fact],
) -> Result<(Vec<ProposalId>, Vec<Planned>)> {
    let layout = &memory.layout;
    let mut proposals = Vec::new();
    let mut rest = Vec::new();
    for (cluster, p) in planned.into_iter().enumerate() {
        let (ops, fallback) = match &p.decision {
            Judged::Ops(ops) => (ops.clone(), false),
            Judged::Fallback(_) => (repair::fallback(&p.cluster), true),
            Judged::Failed { .. } => {
                rest.push(p);
                continue;
            }
        };
        for op in ops {
            let seen = [op.target(), into(&op)]
                .into_iter()
                .flatten()
                .filter_map(|id| p.cluster.entry(id))
                .map(|e| Seen {
                    id: e.id.clone(),
                    text: e.text.clone(),
                })
                .collect();
            proposals.push(Proposal {
                item: ProposalId::new(&stamp.run, proposals.len()),
                run: stamp.run.clone(),
                ts: stamp.clock.timestamp(),
                cluster,
                op,
                model: p.model.clone(),
                prompt_hash: p.prompt_hash.clone(),
                entries: seen,
                fallback,
                erased: None,
            });
        }
    }
    if proposals.is_empty() {
        return Ok((Vec::new(), rest));
    }
    let lines: Vec<Line> = proposals.iter().cloned().map(Line::Proposed).collect();
    super::append(layout, &lines)?;
    pause_point(layout, Step::ReviewProposed);
    let by_id: HashMap<&str, &Fact> = facts.iter().map(|f| (f.id.as_str(), f)).collect();
    let all: Vec<&Proposal> = proposals.iter().collect();
    show(memory, &all, &by_id)?;
    Ok((proposals.into_iter().map(|p| p.item).collect(), rest))
}

/// Append the items of `proposals` to REVIEW.md, then record them shown.
fn show(memory: &Memory, proposals: &[&Proposal], facts: &HashMap<&str, &Fact>) -> Result<()> {
    if proposals.is_empty() {
        return Ok(());
    }
    let text = block(proposals, facts);
    sheet::edit(&memory.layout.review_md(), |s| {
        s.append(&text);
        Ok(())
    })?;
    let items = proposals.iter().map(|p| p.item.clone()).collect();
    let ts = memory.clock.timestamp();
    super::append(&memory.layout, &[Line::Shown { items, ts }])
}

fn into(op: &Op) -> Option<&EntryId> {
    match op {
        Op::Remove { into, .. } => Some(into),
        _ => None,
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The text an entry had when the proposal was made.
fn seen<'a>(p: &'a Proposal, id: &str) -> &'a str {
    p.entries
        .iter()
        .find(|e| e.id == id)
        .map_or("", |e| e.text.as_str())
}

/// A proposal's op in words.
pub(crate) fn words(p: &Proposal) -> String {
    let facts = |n: usize| match n {
        1 => "1 fact".to_string(),
        n => format!("{n} facts"),
    };
    match &p.op {
        Op::Add { text, .. } if p.fallback => format!(
            "add \"{}\" word for word (the judge's replies stayed invalid)",
            one_line(text)
        ),
        Op::Add { text, .. } => format!("add \"{}\"", one_line(text)),
        Op::Replace { target, text, .. } => format!(
            "update {target}: now \"{}\"; previously \"{}\"",
            one_line(text),
            one_line(seen(p, target))
        ),
        Op::Remove { target, into } => format!(
            "merge {target} (\"{}\") into {into} (\"{}\")",
            one_line(seen(p, target)),
            one_line(seen(p, into))
        ),
        Op::Keep { target, from } => format!(
            "{target} says it already (\"{}\"): it gains {} as sources",
            one_line(seen(p, target)),
            facts(from.len())
        ),
    }
}

/// The items of `proposals` (a heading for each run), with the facts each
/// came from and a diff of its entry.
pub(crate) fn block(proposals: &[&Proposal], facts: &HashMap<&str, &Fact>) -> String {
    let mut out = String::new();
    let mut run: Option<&RunId> = None;
    for p in proposals {
        if run != Some(&p.run) {
            if run.is_some() {
                out.push('\n');
            }
            let _ = writeln!(
                out,
                "{}{} · {} · {}\n",
                sheet::RUN_HEADING,
                p.run,
                p.ts,
                p.model
            );
            run = Some(&p.run);
        }
        let _ = writeln!(out, "- [ ] {} {}", p.item, words(p));
        for id in p.op.from() {
            match facts.get(id.as_str()) {
                Some(f) => {
                    let when = f
                        .time
                        .as_deref()
                        .map(|t| format!(" {t}"))
                        .unwrap_or_default();
                    let _ = writeln!(
                        out,
                        "  - from {id} ({}{when}): {}",
                        f.day,
                        one_line(&f.text)
                    );
                }
                None => {
                    let _ = writeln!(out, "  - from {id}");
                }
            }
        }
        let diff = diff(p);
        if !diff.is_empty() {
            let _ = writeln!(out, "  ```diff\n{diff}  ```");
        }
    }
    out
}

fn diff(p: &Proposal) -> String {
    let mut out = String::new();
    let mut line = |sign: char, text: &str| {
        let _ = writeln!(out, "  {sign} {}", one_line(text));
    };
    match &p.op {
        Op::Add { text, .. } => line('+', text),
        Op::Replace { target, text, .. } => {
            line('-', seen(p, target));
            line('+', text);
        }
        Op::Remove { target, .. } => line('-', seen(p, target)),
        Op::Keep { .. } => {}
    }
    out
}

/// What a person decided of one open proposal.
#[derive(Clone, Copy, PartialEq)]
enum Choice {
    Accept,
    Reject,
}

/// The decisions REVIEW.md holds: accepted items, and items gone from a
/// file that has no unreadable line (rejected).
fn choose<'a>(
    props: &'a Proposals,
    sheet: &Sheet,
    out: &mut Carried,
) -> Vec<(&'a Proposal, Choice)> {
    let mut chosen = Vec::new();
    for p in props.open() {
        let marks = sheet.marks(&p.item);
        if marks.contains(&Mark::Accepted) {
            chosen.push((p, Choice::Accept));
        } else if !marks.is_empty() || !props.shown(&p.item) {
            continue;
        } else if let Some((line, _)) = sheet
            .unreadable
            .iter()
            .find(|(_, l)| l.contains(p.item.as_str()))
        {
            out.left.push(Left {
                item: p.item.clone(),
                why: format!("its item, line {line} of REVIEW.md, cannot be read (`- [ ] {}` waits, `- [x] {}` accepts): left as it is", p.item, p.item),
            });
        } else if !sheet.unreadable.is_empty() {
            out.left.push(Left {
                item: p.item.clone(),
                why: "its item is gone from REVIEW.md, which has lines memd cannot read: not taken as rejected until they are fixed".into(),
            });
        } else {
            chosen.push((p, Choice::Reject));
        }
    }
    chosen
}

/// Whether an accepted op's effect is in the entries already (a carry-out
/// that stopped before recording it).
fn carried_already(
    p: &Proposal,
    rule: &Pending,
    facts: &HashMap<&str, &Fact>,
    doc: &Document,
) -> bool {
    let from = p.op.from();
    match from.is_empty() {
        false => from.iter().all(|id| {
            facts
                .get(id.as_str())
                .is_some_and(|f| matches!(rule.settled(f), Some(Settled::Done | Settled::InEntry)))
        }),
        true => entry_as_said(&p.op, doc),
    }
}

/// Whether the entries are as an op of no facts leaves them: the entry it
/// merged away gone, the entry it rewrote saying its text.
fn entry_as_said(op: &Op, doc: &Document) -> bool {
    match op {
        Op::Remove { target, .. } => doc.get(target).is_none(),
        Op::Replace { target, text, .. } => doc
            .get(target)
            .is_some_and(|e| e.text.trim() == sanitize_text(text).trim()),
        _ => false,
    }
}

/// A cluster of one fact per group.
fn groups(ids: &[&FactId], facts: &HashMap<&str, &Fact>) -> Vec<Group> {
    ids.iter()
        .filter_map(|id| facts.get(id.as_str()))
        .map(|f| Group {
            ids: vec![f.id.clone()],
            text: f.text.clone(),
            days: vec![f.day.clone()],
        })
        .collect()
}

/// The accepted ops of one cluster, as the run planned them.
fn accepted(ps: &[&Proposal], facts: &HashMap<&str, &Fact>, doc: &Document) -> Planned {
    let ids: Vec<&FactId> = ps.iter().flat_map(|p| p.op.from()).collect();
    let mut entries: Vec<Snapshot> = Vec::new();
    for s in ps.iter().flat_map(|p| &p.entries) {
        if entries.iter().any(|e| e.id == s.id) {
            continue;
        }
        let meta = doc.get(&s.id).and_then(|e| e.meta.clone());
        entries.push(Snapshot {
            id: s.id.clone(),
            text: s.text.clone(),
            pinned: meta.as_ref().is_some_and(|m| m.pinned),
            unreviewed: meta.as_ref().is_some_and(|m| m.unreviewed),
            first_seen: meta
                .as_ref()
                .map(|m| m.first_seen.clone())
                .unwrap_or_default(),
            updated: meta.map(|m| m.updated).unwrap_or_default(),
        });
    }
    Planned {
        cluster: Cluster {
            groups: groups(&ids, facts),
            entries,
            forgotten: Vec::new(),
        },
        decision: Judged::Ops(ps.iter().map(|p| p.op.clone()).collect()),
        model: ps[0].model.clone(),
        prompt_hash: ps[0].prompt_hash.clone(),
        failures: 0,
        kept_out: Vec::new(),
    }
}

/// A rejected op's facts still pending, each added word for word.
fn verbatim(pending: &[&FactId], facts: &HashMap<&str, &Fact>) -> Planned {
    let groups = groups(pending, facts);
    let ops = groups
        .iter()
        .map(|g| Op::Add {
            text: g.text.clone(),
            from: g.ids.clone(),
        })
        .collect();
    Planned {
        cluster: Cluster {
            groups,
            ..Cluster::default()
        },
        decision: Judged::Ops(ops),
        model: REVIEW_JUDGE.into(),
        prompt_hash: None,
        failures: 0,
        kept_out: Vec::new(),
    }
}

/// Whether an accepted op applied: its facts are now held, or the entry it
/// removed or rewrote is as it says.
fn applied(p: &Proposal, done: &HashSet<&FactId>, doc: &Document) -> bool {
    let from = p.op.from();
    match from.is_empty() {
        false => from.iter().all(|f| done.contains(f)),
        true => entry_as_said(&p.op, doc),
    }
}

/// The plans of what was decided: accepted ops by cluster, rejected ops'
/// facts word for word; the decisions known before applying (rejected,
/// withdrawn, carried out already).
struct Plan<'a> {
    planned: Vec<Planned>,
    accepted: Vec<&'a Proposal>,
    decided: Vec<Decided>,
    verbatim: Vec<FactId>,
}

fn plan<'a>(
    chosen: Vec<(&'a Proposal, Choice)>,
    inputs: &Inputs,
    state: &State,
    (ts, out): (&str, &mut Carried),
) -> Plan<'a> {
    let facts: HashMap<&str, &Fact> = inputs.facts.iter().map(|f| (f.id.as_str(), f)).collect();
    let rule = inputs.rule(state);
    let decided = |p: &Proposal, decision, why: Option<String>| Decided {
        item: p.item.clone(),
        decision,
        run: None,
        ts: ts.to_string(),
        why,
    };
    let mut plan = Plan {
        planned: Vec::new(),
        accepted: Vec::new(),
        decided: Vec::new(),
        verbatim: Vec::new(),
    };
    let mut by_cluster: BTreeMap<(&RunId, usize), Vec<&Proposal>> = BTreeMap::new();
    for (p, choice) in chosen {
        let gone =
            p.op.from()
                .iter()
                .find(|id| facts.get(id.as_str()).is_none_or(|f| rule.is_forgotten(f)));
        if let Some(id) = gone {
            let why = format!("fact {id} was forgotten or erased since it was proposed");
            out.withdrawn.push(Left {
                item: p.item.clone(),
                why: why.clone(),
            });
            plan.decided
                .push(decided(p, Decision::Withdrawn, Some(why)));
            continue;
        }
        match choice {
            Choice::Accept if carried_already(p, &rule, &facts, &inputs.doc) => {
                out.accepted.push(p.item.clone());
                let why = Some("carried out already".to_string());
                plan.decided.push(decided(p, Decision::Accepted, why));
            }
            Choice::Accept => by_cluster.entry((&p.run, p.cluster)).or_default().push(p),
            Choice::Reject => {
                let pending: Vec<&FactId> =
                    p.op.from()
                        .iter()
                        .filter(|id| facts.get(id.as_str()).is_some_and(|f| rule.is_pending(f)))
                        .collect();
                if !pending.is_empty() {
                    plan.planned.push(verbatim(&pending, &facts));
                    plan.verbatim.extend(pending.into_iter().cloned());
                }
                out.rejected.push(p.item.clone());
                plan.decided.push(decided(p, Decision::Rejected, None));
            }
        }
    }
    for ps in by_cluster.into_values() {
        plan.planned.push(accepted(&ps, &facts, &inputs.doc));
        plan.accepted.extend(ps);
    }
    plan
}

/// Carry out what REVIEW.md says (see the module doc), under the entries
/// lock the caller holds; write the items of proposals not shown yet.
pub fn carry_out(memory: &Memory) -> Result<Carried> {
    let layout = &memory.layout;
    if !layout.proposals_file().exists() {
        return Ok(Carried::default());
    }
    let props = Proposals::load(layout)?;
    let sheet = Sheet::read(&layout.review_md())?;
    let mut out = Carried {
        unreadable: sheet
            .unreadable
            .iter()
            .map(|(line, text)| Unreadable {
                line: *line,
                text: text.clone(),
            })
            .collect(),
        ..Carried::default()
    };
    let chosen = choose(&props, &sheet, &mut out);
    if chosen.is_empty() {
        // Nothing decided: no need to read the archive and the entries
        // (every run of a memory that ever reviewed comes here first).
        tidy(memory, &props, &[], None, &mut out)?;
        return Ok(out);
    }
    let inputs = Inputs::read(layout)?;
    let state = State::load(&layout.state_file())?;
    let ts = memory.clock.timestamp();
    let mut plan = plan(chosen, &inputs, &state, (&ts, &mut out));
    if !plan.planned.is_empty() {
        let stamp = Stamp::new(memory.clock);
        let (changed, doc) = write(memory, &stamp, &plan, state)?;
        for p in &plan.accepted {
            if applied(p, &changed.iter().collect(), &doc) {
                out.accepted.push(p.item.clone());
                plan.decided.push(Decided {
                    item: p.item.clone(),
                    decision: Decision::Accepted,
                    run: Some(stamp.run.clone()),
                    ts: ts.clone(),
                    why: None,
                });
            } else {
                let target = p.op.target().map(|t| t.as_str()).unwrap_or("its entry");
                out.left.push(Left {
                    item: p.item.clone(),
                    why: format!("{target} changed since the op was proposed (edited by hand, pinned or removed): left open; delete its item to keep its facts word for word"),
                });
            }
        }
        for d in plan
            .decided
            .iter_mut()
            .filter(|d| d.decision == Decision::Rejected)
        {
            d.run = Some(stamp.run.clone());
        }
        out.run = Some(stamp.run);
        out.kept_verbatim = plan.verbatim;
    }
    let lines: Vec<Line> = plan.decided.iter().cloned().map(Line::Decided).collect();
    if !lines.is_empty() {
        super::append(layout, &lines)?;
    }
    tidy(memory, &props, &plan.decided, Some(&inputs.facts), &mut out)?;
    Ok(out)
}

/// Apply the plans, then journal them and save the state; the facts now
/// held and the entries as written.
fn write(
    memory: &Memory,
    stamp: &Stamp,
    plan: &Plan,
    mut state: State,
) -> Result<(Vec<FactId>, Document)> {
    let layout = &memory.layout;
    let removed: HashSet<&str> = plan
        .accepted
        .iter()
        .filter_map(|p| match &p.op {
            Op::Remove { target, .. } => Some(target.as_str()),
            _ => None,
        })
        .collect();
    core_md::drop_lines(&layout.memory_md(), &removed)?;
    let (applied, doc) = apply::apply(layout, &plan.planned, stamp)?;
    journal::append(&layout.journal_file(), &applied.records)?;
    state.mark_done(applied.done.iter());
    state.save(&layout.state_file())?;
    pause_point(layout, Step::ReviewApplied);
    Ok((applied.done, doc))
}

/// REVIEW.md without the items of proposals decided (now or before), with
/// the items of open proposals never shown.
fn tidy(
    memory: &Memory,
    props: &Proposals,
    now: &[Decided],
    facts: Option<&[Fact]>,
    out: &mut Carried,
) -> Result<()> {
    let decided: HashSet<&str> = now
        .iter()
        .map(|d| d.item.as_str())
        .chain(props.decided.keys().map(|k| k.as_str()))
        .collect();
    let repeated: Vec<ProposalId> = sheet::edit(&memory.layout.review_md(), |s| {
        let before: HashSet<ProposalId> = s.ids().into_iter().cloned().collect();
        s.remove(&decided);
        let old: Vec<ProposalId> = before
            .into_iter()
            .filter(|id| props.decided.contains_key(id))
            .collect();
        Ok(old)
    })?;
    out.repeated = repeated;
    let now: HashSet<&str> = now.iter().map(|d| d.item.as_str()).collect();
    let unshown: Vec<&Proposal> = props
        .open()
        .filter(|p| !props.shown(&p.item) && !now.contains(p.item.as_str()))
        .collect();
    let sheet_now = Sheet::read(&memory.layout.review_md())?;
    let missing: Vec<&Proposal> = unshown
        .iter()
        .copied()
        .filter(|p| sheet_now.marks(&p.item).is_empty())
        .collect();
    if !missing.is_empty() {
        let read;
        let facts = match facts {
            Some(f) => f,
            None => {
                read = archive::read_all(&memory.layout)?.0;
                &read
            }
        };
        let by_id: HashMap<&str, &Fact> = facts.iter().map(|f| (f.id.as_str(), f)).collect();
        show(memory, &missing, &by_id)?;
    }
    let present: Vec<ProposalId> = unshown
        .iter()
        .filter(|p| !sheet_now.marks(&p.item).is_empty())
        .map(|p| p.item.clone())
        .collect();
    if !present.is_empty() {
        let ts = memory.clock.timestamp();
        super::append(&memory.layout, &[Line::Shown { items: present, ts }])?;
    }
    out.open = props
        .open()
        .filter(|p| !now.contains(p.item.as_str()))
        .count();
    Ok(())
}
