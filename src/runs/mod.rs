//! Runs, read back from the journal (`memd runs`), and the undo of one
//! (`memd undo RUN`).
//!
//! Every op a run applied is in `consolidated/journal.jsonl`, with the
//! entry's text before and after and its metadata before. An undo walks the
//! run's records backwards and puts each entry back as the run found it:
//! - an entry the run added is removed (unless facts were folded into it
//!   since: removing it would take them along);
//! - an entry the run rewrote gets its old text, `updated` and review mark
//!   back; facts folded into it since stay in it;
//! - an entry the run merged away is restored (at the end of the file) and
//!   its facts leave the entry it was merged into;
//! - facts the run folded into an entry (KEEP) leave it.
//!
//! An entry that is no longer as the run left it (edited by hand, or by a
//! later run) is left alone and reported, the rule consolidation follows
//! for hand edits. Entries deleted by hand during the run and facts kept
//! out as restatements of something forgotten are reported too: forgetting
//! is undone by `memd forget --undo`, not here.
//!
//! The run's facts that no entry holds any more are pending again, so the
//! next run decides them afresh; with [`Options::keep_out`] they are
//! forgotten instead (tombstoned with the reason "undo", visible in
//! `.tombstones.jsonl`, lifted by `memd forget --undo FACT`). A fact is
//! never left decided but held by no entry: that would hide it.
//!
//! The undo is journaled as UNDO records that hold each entry's whole state
//! before and after, under a run id of its own, so an undo is undone the
//! same way and gives the run back.
//!
//! Crash order, under the entries lock: the state first (facts about to
//! leave every entry come off the watermark; until the entries file changes
//! the entry that names them still settles them), the tombstones of
//! `keep_out`, the lines of `MEMORY.md` that name entries about to go, then
//! the UNDO records, appended once the entries file is known to be as read
//! and just before its new text replaces it (atomically), then the state
//! again (facts now in an entry are marked done), then the rest of
//! `MEMORY.md`. So the journal never misses a change the file has, and the
//! next run never takes an entry the undo removed for one deleted by hand.
//! A death before the new text lands leaves UNDO records for a change the
//! file does not have: running the same undo again makes it (an entry
//! already as it should be is left as it is). Meanwhile nothing is lost:
//! the facts the undo would release are still in their entries, which are
//! live as the file says (the next run journals them adopted again, so a
//! person who then deletes one by hand has deleted an entry).

mod verdict;

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::core_md::{self, CoreMd};
use crate::entries::{Document, Meta};
use crate::error::{Result, bail};
use crate::ids::{EntryId, FactId, RunId};
use crate::journal::{self, Op, Record, Stamp};
use crate::remedy::Remedy;
use crate::review::Proposals;
use crate::state::State;
use crate::tombstones::{self, Reason, Tombstone, Tombstones};
use crate::versions::Writing;
use crate::{Error, Layout, Memory, archive, consolidate, pause, pending, usage};

use verdict::{Verdict, verdict};

/// The judge named by the records a sync's merge settled with
/// ([`crate::sync`]): its run is listed as a `sync`.
pub const SYNC_JUDGE: &str = "memd sync";

/// One run as the journal tells it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Run {
    pub id: RunId,
    /// When its first record was written (RFC 3339).
    pub started: String,
    /// `consolidate`, `forget`, `undo`, `edit`, `sync` (what a merge
    /// settled: [`crate::sync`]) or `review` (decisions of REVIEW.md
    /// carried out: [`crate::review`]).
    pub kind: String,
    /// The judges that decided its ops (`built-in` or a model name).
    pub judges: Vec<String>,
    /// Records by op (`ADD`, `REPLACE`, …).
    pub ops: BTreeMap<String, usize>,
    /// Archive facts its ops folded in or kept out.
    pub facts: usize,
    /// For an undo: the run it undid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undoes: Option<RunId>,
    /// The undos of this run, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undone_by: Vec<RunId>,
    /// Tokens its LLM calls spent ([`crate::usage`]).
    #[serde(default)]
    pub tokens: u64,
}

/// The journal's name of an op (`ADD`, `REPLACE`, …).
pub fn op_name(op: Op) -> String {
    serde_json::to_value(op)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

/// Every run in the journal, oldest first.
pub fn list(layout: &Layout) -> Result<Vec<Run>> {
    let records = journal::read(&layout.journal_file())?;
    let proposals = Proposals::load(layout)?;
    let reviews = proposals.runs();
    let mut runs: Vec<Run> = Vec::new();
    let mut facts: Vec<BTreeSet<&FactId>> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for r in &records {
        let i = *at.entry(&r.run).or_insert_with(|| {
            runs.push(Run {
                id: r.run.clone(),
                started: r.ts.clone(),
                kind: String::new(),
                judges: Vec::new(),
                ops: BTreeMap::new(),
                facts: 0,
                undoes: None,
                undone_by: Vec::new(),
                tokens: 0,
            });
            facts.push(BTreeSet::new());
            runs.len() - 1
        });
        let run = &mut runs[i];
        *run.ops.entry(op_name(r.op)).or_default() += 1;
        if let Some(m) = &r.model
            && !run.judges.contains(m)
        {
            run.judges.push(m.clone());
        }
        if matches!(
            r.op,
            Op::Add | Op::Replace | Op::Keep | Op::Suppress | Op::Undo
        ) {
            facts[i].extend(r.sources.iter());
        }
        if r.undoes.is_some() {
            run.undoes = r.undoes.clone();
        }
    }
    for (run, facts) in runs.iter_mut().zip(&facts) {
        run.facts = facts.len();
        // What a forget or an edit records besides its own op: blocks
        // written by hand its save gave ids, entries deleted by hand.
        let by_the_way = ["ADOPT", "HAND_REMOVE"];
        let only = |op: &[&str]| {
            run.ops.keys().any(|k| op.contains(&k.as_str()))
                && run
                    .ops
                    .keys()
                    .all(|k| op.contains(&k.as_str()) || by_the_way.contains(&k.as_str()))
        };
        run.kind = match &run.undoes {
            Some(_) => "undo",
            None if only(&["FORGET", "UNFORGET"]) => "forget",
            None if only(&["EDIT"]) => "edit",
            None if run.judges.iter().any(|j| j == SYNC_JUDGE) => "sync",
            None if reviews.contains(&run.id) => "review",
            None => "consolidate",
        }
        .into();
    }
    let undos: Vec<(RunId, RunId)> = runs
        .iter()
        .filter_map(|r| Some((r.undoes.clone()?, r.id.clone())))
        .collect();
    for (undone, by) in undos {
        if let Some(&i) = at.get(undone.as_str()) {
            runs[i].undone_by.push(by);
        }
    }
    let tokens = usage::by_run(layout)?;
    for run in &mut runs {
        run.tokens = tokens.get(&run.id).copied().unwrap_or(0);
    }
    Ok(runs)
}

/// How to undo.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(default)]
pub struct Options {
    /// Work out what would change; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Forget the run's facts instead of making them pending again (the
    /// next consolidation would otherwise decide them afresh).
    #[arg(long)]
    pub keep_out: bool,
}

/// One entry the undo changed: its text before and after (`None`: absent).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    pub entry: String,
    pub before: Option<String>,
    pub after: Option<String>,
}

/// Something of the run the undo left as it is, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Left {
    pub entry: String,
    /// Said in no surface's words: the remedy, if any, is below.
    pub why: String,
    /// What the caller can do instead, which each surface says in its own
    /// words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
}

/// What an undo did (or, on a dry run, would do).
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Outcome {
    /// The run undone.
    pub undoes: RunId,
    /// The undo's own run id (undo it to bring the run back); `None` when
    /// nothing was written.
    pub run: Option<RunId>,
    pub dry_run: bool,
    pub changes: Vec<Change>,
    pub left: Vec<Left>,
    /// Facts no entry holds any more, pending again.
    pub pending_again: Vec<FactId>,
    /// Facts no entry holds any more, forgotten (`keep_out`).
    pub kept_out: Vec<FactId>,
}

/// An entry as it stands: its text and metadata, or absent.
type Slot = Option<(String, Meta)>;

/// One entry moved from one state to another.
#[derive(Debug, Clone)]
struct Step {
    entry: String,
    from: Slot,
    to: Slot,
}

impl Step {
    fn change(&self) -> Change {
        Change {
            entry: self.entry.clone(),
            before: self.from.as_ref().map(|(t, _)| t.clone()),
            after: self.to.as_ref().map(|(t, _)| t.clone()),
        }
    }
}

/// Move an entry of `doc` to `to`.
fn set(doc: &mut Document, id: &str, to: &Slot) {
    let Some((text, meta)) = to else {
        doc.remove(id);
        return;
    };
    if doc.get(id).is_none() {
        doc.push(text, meta.clone());
    }
    if let Some(e) = doc.get_mut(id) {
        e.text = text.clone();
        e.meta = Some(meta.clone());
    }
}

/// The steps that undo `records` (one run's, oldest first), applied to
/// `doc` as they are found, and what is left as it is.
fn plan(
    doc: &mut Document,
    records: &[&Record],
    (today, stones): (&str, &Tombstones),
) -> (Vec<Step>, Vec<Left>) {
    let mut steps = Vec::new();
    let mut left = Vec::new();
    for r in records.iter().rev() {
        match brings_back_forgotten(verdict(doc, r, today), stones, r.undoes.as_ref()) {
            Verdict::Steps(s) => {
                for s in s {
                    set(doc, &s.entry, &s.to);
                    steps.push(s);
                }
            }
            Verdict::Left(why) => left.push(Left {
                entry: r.entry.clone(),
                why,
                remedy: None,
            }),
            Verdict::LeftFor(why, remedy) => left.push(Left {
                entry: r.entry.clone(),
                why,
                remedy: Some(remedy),
            }),
            Verdict::Done | Verdict::Nothing => {}
        }
    }
    if let Some(why) = held_elsewhere(doc, &steps) {
        // Nothing is undone: the caller reads the file afresh each time.
        let left = steps
            .iter()
            .map(|s| Left {
                entry: s.entry.clone(),
                why: why.clone(),
                remedy: None,
            })
            .collect();
        return (Vec::new(), left);
    }
    (steps, left)
}

/// A verdict that would put back what the user forgot since the run is
/// left undone: an entry a tombstone names, or a fact a tombstone lists
/// (other than the keep-out of the undo being undone, an undo of run
/// `undoes`, which undoing it lifts; a keep-out of another undo is the
/// user's forget like any other). Forgetting is taken back by `memd
/// forget --undo`, never by an undo.
fn brings_back_forgotten(v: Verdict, stones: &Tombstones, undoes: Option<&RunId>) -> Verdict {
    let Verdict::Steps(steps) = &v else { return v };
    for s in steps {
        if s.from.is_none() && s.to.is_some() && stones.names_entry(&s.entry) {
            return Verdict::LeftFor(
                "forgotten since the run".into(),
                Remedy::Unforget {
                    id: s.entry.to_string(),
                },
            );
        }
        let before = sources(&s.from);
        let forgotten = sources(&s.to)
            .iter()
            .filter(|f| !before.contains(f))
            .find(|f| {
                let blocks = |t: &Tombstone| match t.reason {
                    Reason::Undo => t.undoes.is_some() && t.undoes.as_ref() != undoes,
                    _ => true,
                };
                stones
                    .all
                    .iter()
                    .any(|t| blocks(t) && t.sources.contains(f))
            });
        if let Some(f) = forgotten {
            return Verdict::LeftFor(
                format!("its fact {f} was forgotten since the run"),
                Remedy::Unforget { id: f.to_string() },
            );
        }
    }
    v
}

/// Why the undo must be left undone, given `doc` with its `steps`
/// applied: an entry it does not touch holds a fact it puts back into one
/// of its own (a later run decided the fact again), and a fact is held by
/// one entry at most.
fn held_elsewhere(doc: &Document, steps: &[Step]) -> Option<String> {
    let ours: HashSet<&str> = steps.iter().map(|s| s.entry.as_str()).collect();
    let claimed: HashSet<&FactId> = steps.iter().flat_map(|s| sources(&s.to)).collect();
    doc.entries()
        .filter_map(|e| e.meta.as_ref())
        .filter(|m| !ours.contains(m.id.as_str()))
        .find(|m| m.sources.iter().any(|f| claimed.contains(f)))
        .map(|m| {
            format!(
                "its facts were decided again since, into {}: undo that run first",
                m.id
            )
        })
}

fn sources(s: &Slot) -> &[FactId] {
    s.as_ref().map(|(_, m)| m.sources.as_slice()).unwrap_or(&[])
}

/// The facts the steps moved: (out of every entry now, into some entry).
fn moved(doc: &Document, steps: &[Step]) -> (BTreeSet<FactId>, BTreeSet<FactId>) {
    let live: HashSet<&FactId> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| m.sources.iter())
        .collect();
    let touched: BTreeSet<&FactId> = steps
        .iter()
        .flat_map(|s| sources(&s.from).iter().chain(sources(&s.to)))
        .collect();
    let (into, out): (BTreeSet<FactId>, BTreeSet<FactId>) =
        touched.into_iter().cloned().partition(|f| live.contains(f));
    (out, into)
}

/// The journal record of a step.
fn record(stamp: &Stamp, undoes: &RunId, s: &Step) -> Record {
    let mut r = stamp.record(Op::Undo, &s.entry);
    r.before = s.from.as_ref().map(|(t, _)| t.clone());
    r.after = s.to.as_ref().map(|(t, _)| t.clone());
    r.meta_before = s.from.as_ref().map(|(_, m)| m.clone());
    r.meta_after = s.to.as_ref().map(|(_, m)| m.clone());
    let (from, to) = (sources(&s.from), sources(&s.to));
    r.sources = from
        .iter()
        .filter(|f| !to.contains(f))
        .chain(to.iter().filter(|f| !from.contains(f)))
        .cloned()
        .collect();
    r.undoes = Some(undoes.clone());
    r
}

/// The records of run `id` in the journal `all`, oldest first; an error
/// if there is none.
pub fn records<'a>(all: &'a [Record], id: &str) -> Result<Vec<&'a Record>> {
    let records: Vec<&Record> = all.iter().filter(|r| r.run == id).collect();
    if records.is_empty() {
        return Err(Error::NoSuch {
            what: format!("run {id:?} in the journal"),
        });
    }
    Ok(records)
}

/// The records of run `id`, oldest first; an error if there is none or it
/// is a forget (undone by `memd forget --undo`).
fn records_of<'a>(all: &'a [Record], id: &str) -> Result<Vec<&'a Record>> {
    let records = records(all, id)?;
    let forgets = |op: Op| matches!(op, Op::Forget | Op::Unforget);
    if records.iter().any(|r| forgets(r.op))
        && records
            .iter()
            .all(|r| forgets(r.op) || matches!(r.op, Op::Adopt | Op::HandRemove))
    {
        return Err(Error::Invalid(format!(
            "run {id} forgot or brought back entries, which an undo of a run does not take back: forget or bring back each entry itself"
        )));
    }
    Ok(records)
}

/// How many times the undo starts again when the entries file keeps
/// changing under it.
const ATTEMPTS: usize = 10;

/// Undo run `id` (see the module doc), stamped with `memory`'s clock.
/// Holds the entries lock.
pub fn undo(memory: &Memory, id: &RunId, opts: Options) -> Result<Outcome> {
    let layout = &memory.layout;
    let _lock = Writing::start(memory)?;
    let stamp = Stamp::new(memory.clock);
    let today = stamp.today();
    // Entries deleted by hand since the last run are recorded first: an
    // undo never brings back what the user forgot since the run.
    let mut doc = Document::read(&layout.entries_file())?;
    consolidate::deleted_by_hand::record(layout, &mut doc, &stamp)?;
    let all = journal::read(&layout.journal_file())?;
    let records = records_of(&all, id)?;
    let forgotten = Tombstones::load(&layout.tombstones_file())?;
    for _ in 0..ATTEMPTS {
        let (mut doc, original) = Document::read_for_update(&layout.entries_file())?;
        consolidate::deleted_by_hand::reclaim(layout, &mut doc, &today)?;
        let (steps, left) = plan(&mut doc, &records, (&today, &forgotten));
        let (out, into) = moved(&doc, &steps);
        let mut outcome = Outcome {
            undoes: id.clone(),
            run: None,
            dry_run: opts.dry_run,
            changes: steps.iter().map(Step::change).collect(),
            left,
            pending_again: Vec::new(),
            kept_out: Vec::new(),
        };
        if opts.dry_run || steps.is_empty() {
            (outcome.pending_again, outcome.kept_out) = match opts.keep_out {
                false => (out.into_iter().collect(), Vec::new()),
                true => (Vec::new(), out.into_iter().collect()),
            };
            return Ok(outcome);
        }
        release(layout, &stamp, &out, opts, &mut outcome)?;
        let_back_in(layout, &stamp, &into, took_back(&records))?;
        let mut state = State::load(&layout.state_file())?;
        refresh_memory_md(layout, None, &steps)?;
        let records: Vec<Record> = steps.iter().map(|s| record(&stamp, id, s)).collect();
        let saved = save_journaled(
            layout,
            &mut doc,
            (original.as_deref(), &today),
            (&records, pause::Step::UndoJournaled),
        )?;
        let Some(adopted) = saved else {
            tracing::info!(
                "consolidated/memory.md changed during the undo; undoing again on the new text"
            );
            continue;
        };
        pause::at(layout, pause::Step::UndoEntriesWritten);
        journal::append(&layout.journal_file(), &stamp.adoptions(&doc, &adopted))?;
        state.mark_done(into.iter());
        state.save(&layout.state_file())?;
        refresh_memory_md(layout, Some(&doc), &steps)?;
        outcome.run = Some(stamp.run.clone());
        return Ok(outcome);
    }
    bail!("consolidated/memory.md kept changing during the undo; nothing was changed, run it again")
}

/// Save `doc` if the file is still `original`, journaling `records` after
/// that check and before the new text lands (then pausing at `step`, in a
/// test build): the journal never misses a change the file has (see the
/// module doc). `None`: the file changed. An undo and an edit
/// ([`crate::edit`]) save this way.
pub(crate) fn save_journaled(
    layout: &Layout,
    doc: &mut Document,
    (original, today): (Option<&[u8]>, &str),
    (records, step): (&[Record], pause::Step),
) -> Result<Option<Vec<EntryId>>> {
    doc.save_if_unchanged(&layout.entries_file(), today, original, || {
        journal::append(&layout.journal_file(), records)
            .map_err(|e| std::io::Error::other(format!("{e:#}")))?;
        pause::at(layout, step);
        Ok(())
    })
}

/// Before the entries file changes: the facts about to leave every entry
/// come off the watermark, or (`keep_out`) are forgotten. Returns the
/// state as saved.
fn release(
    layout: &Layout,
    stamp: &Stamp,
    out: &BTreeSet<FactId>,
    opts: Options,
    outcome: &mut Outcome,
) -> Result<State> {
    let mut state = State::load(&layout.state_file())?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let (facts, _) = archive::read_all(layout)?;
    let mut new_stones = Vec::new();
    for f in facts.iter().filter(|f| out.contains(&f.id)) {
        if stones.covers(&f.id, &f.text) {
            // Kept out already: by this same undo, when an earlier attempt
            // failed after its tombstones, so the retry says so too.
            let by_undo = stones
                .all
                .iter()
                .any(|t| t.of(f.id.as_str()) && t.reason == Reason::Undo);
            if opts.keep_out && by_undo {
                outcome.kept_out.push(f.id.clone());
            }
            continue;
        }
        if opts.keep_out {
            let ids = vec![f.id.clone()];
            let mut stone = Tombstone::new(&stamp.clock, None, &f.text, ids, Reason::Undo);
            stone.undoes = Some(outcome.undoes.clone());
            new_stones.push(stone);
            outcome.kept_out.push(f.id.clone());
        } else {
            outcome.pending_again.push(f.id.clone());
        }
    }
    for f in out {
        state.watermark.done.remove(f);
    }
    state.save(&layout.state_file())?;
    tombstones::append(&layout.tombstones_file(), &new_stones)?;
    Ok(state)
}

/// Before the entries file changes: the facts about to come back into an
/// entry that an undo's `keep_out` forgot (an undo of that undo brings
/// them back) are let back in, so no entry holds a forgotten fact. They
/// are off the watermark since that keep-out, so a crash before the file
/// is written leaves them pending, never hidden.
///
/// Only the keep-outs of the undo being undone (an undo of run `undoes`)
/// are lifted, and keep-outs that name no run (an older memd's).
fn let_back_in(
    layout: &Layout,
    stamp: &Stamp,
    into: &BTreeSet<FactId>,
    undoes: Option<&RunId>,
) -> Result<()> {
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let ours = |t: &Tombstone| t.undoes.is_none() || t.undoes.as_ref() == undoes;
    let lifts: Vec<Tombstone> = into
        .iter()
        .filter(|f| {
            let kept_out = |t: &Tombstone| t.of(f.as_str()) && t.reason == Reason::Undo && ours(t);
            stones.all.iter().any(kept_out)
        })
        .map(|f| match undoes {
            Some(run) => Tombstone::lift_kept_out(&stamp.clock, f.as_str(), run),
            None => Tombstone::lift(&stamp.clock, f.as_str()),
        })
        .collect();
    pending::lift(layout, &stones, lifts)
}

/// The run an undo took back, when `records` are an undo's.
fn took_back<'a>(records: &[&'a Record]) -> Option<&'a RunId> {
    records.iter().find_map(|r| r.undoes.as_ref())
}

/// The lines of `MEMORY.md` for the entries the undo changed: gone with
/// the entry, or showing its text as it is back. Before the entries file
/// is written (`doc` is `None`) only the lines of entries about to go are
/// dropped, so that no line ever names an entry that is not in the file.
fn refresh_memory_md(layout: &Layout, doc: Option<&Document>, steps: &[Step]) -> Result<()> {
    let changed: HashMap<&str, &Slot> = steps.iter().map(|s| (s.entry.as_str(), &s.to)).collect();
    let md = CoreMd::read(&layout.memory_md())?;
    let lines: Vec<_> = md
        .lines()
        .into_iter()
        .filter_map(|mut l| {
            let to = changed.get(l.entry_id.as_str());
            match (to, doc) {
                (None, _) => Some(l),
                (Some(None), _) => None,
                (Some(Some(_)), None) => Some(l),
                (Some(Some(_)), Some(doc)) => {
                    l.text = consolidate::promote::line_text(&doc.get(&l.entry_id)?.text);
                    Some(l)
                }
            }
        })
        .collect();
    core_md::write_lines(&layout.memory_md(), &lines)?;
    Ok(())
}
