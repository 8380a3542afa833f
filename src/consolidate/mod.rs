//! Consolidation: pending archive facts become entries of
//! `consolidated/memory.md` (docs/CONSOLIDATION.md), as a pipeline with one file
//! per stage:
//!
//! ```text
//!  lock ─► gate::time ─► plan::Inputs ─► pending ─► gate::volume
//!  (entries)  (state only)   (archive,                   │
//!                             entries, tombstones)        ▼
//!   plan: restatements (tier 1, KEEP, free) ─► near-duplicates (tier 2,
//!         crate::duplicate: KEEP or fold with the built-in judge; a fact that
//!         says what was forgotten is kept out with any judge)
//!         ─► clusters (neighbours by similarity, forgotten texts nearby)
//!                                                        │
//!   judge: LLM per cluster (schema: ops, or per_fact), or built-in
//!          ─► reply: parse ─► validate ─► repair ─► validate::ops
//!             (FORGET kept out; update: ADD beside entries)
//!                                                        ▼
//!   apply (fresh read, atomic) ─► tombstones of facts kept out
//!   ─► commit (journal, state) ─► promote
//! ```
//!
//! Review mode ([`crate::review`]): every run first carries out the
//! decisions a person made in `consolidated/REVIEW.md`, as a run of their
//! own, and plans without the facts of proposals still open; with
//! `[consolidation] review = "manual"` it then writes its ops as proposals
//! instead of applying them (only failed clusters, the tombstones of facts
//! kept out and the state are written as in any run).
//!
//! A run the gate holds back reads only what the gate needs and writes
//! nothing. Consolidation takes an embedder, never the index: whoever owns
//! the index syncs it after the run.
//!
//! Order of writes and what a crash between them leaves:
//! 1. `consolidated/memory.md`, atomically. The entries now name their
//!    source facts, so a run that dies before step 3 does not decide those
//!    facts again: a fact already in some entry's `sources` is settled.
//!    Then the tombstones of facts kept out as saying what was forgotten
//!    (a crash before them leaves those facts pending: decided again).
//! 2. the journal (a crash before it loses a lineage record, never a fact);
//! 3. the state (watermark, retries, last run);
//! 4. `MEMORY.md`; 5. the index (derived, rebuilt by any later sync).
//!
//! A hand edit is never overwritten: ops are applied to a fresh read of the
//! file, an op whose target changed since planning is skipped (its facts
//! stay pending), and the file is replaced only if it is still byte for byte
//! what was read (otherwise the apply starts again from a new read).

pub(crate) mod apply;
pub(crate) mod cluster;
mod commit;
pub(crate) mod declared;
pub(crate) mod deleted_by_hand;
mod gate;
pub(crate) mod judge;
mod judged;
pub mod ops;
pub(crate) mod plan;
pub(crate) mod planned;
pub(crate) mod promote;
pub use promote::SAME_TOPIC_COSINE;
pub mod reply;
pub(crate) mod report;

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::{Config, Review};
use crate::embed::cache::Cached;
use crate::entries::Document;
use crate::ids::FactId;
use crate::journal::{self, Stamp};
use crate::pause::Step;
use crate::pending::{Journal, Pending};
use crate::state::State;
use crate::tombstones::{self, Tombstones};
use crate::versions::Writing;
use crate::{Layout, Memory, Result, atomic, core_md, review};
use judge::Decide;
pub use judge::Judge;
use ops::Op;
use plan::Inputs;
use planned::{Decided, Decision, Planned};
pub use report::{ClusterReport, Counts, Report, Suppressed, Verdict};

/// How a run is asked for: `memd consolidate [--force] [--dry-run]`,
/// `POST /v1/consolidate`, MCP's `consolidate`.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(default, deny_unknown_fields)]
#[schemars(rename = "Consolidate")]
pub struct Options {
    /// Run even if the time and volume gates (min_hours, min_facts) say
    /// not yet; never while another run holds the lock.
    #[arg(long)]
    pub force: bool,
    /// Plan and show the operations (as a diff on the command line);
    /// write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

use crate::pause::at as pause_point;

/// Temp files interrupted writes of this run's files left behind.
fn remove_stale_temp_files(layout: &Layout) {
    for path in [
        layout.entries_file(),
        layout.memory_md(),
        layout.state_file(),
    ] {
        atomic::remove_stale_temps(&path);
    }
}

/// Run consolidation once, as of `memory`'s clock, with an embedder of its
/// own when the judge needs one. The caller syncs the index afterwards.
pub async fn run(memory: &Memory, opts: Options) -> Result<Report> {
    run_with(memory, opts, None).await
}

/// Whether the gate would let a run start now: what a daemon serving many
/// memories asks before it opens one (read only, no lock).
pub fn due(memory: &Memory) -> Result<bool> {
    let (layout, config) = (&memory.layout, &memory.config);
    let last_run = State::last_run(&layout.state_file())?;
    let now = memory.clock.now();
    if gate::future(last_run.as_deref(), now).is_some() {
        return Ok(true); // the run takes it as now (and saves that)
    }
    if gate::time(last_run.as_deref(), config, now).is_some() {
        return Ok(false);
    }
    let state = State::load(&layout.state_file())?;
    let inputs = Inputs::read(layout)?;
    let (pending, _) = inputs.pending(&state);
    let held = review::held(layout)?;
    let pending = pending.iter().filter(|f| !held.contains(&f.id)).count();
    Ok(gate::volume(pending, config).is_none())
}

/// [`run`] with the embedder of the process that owns the index (the
/// daemon), so that one process never opens the embedding cache twice.
/// The gate, the day of new entries and the run's timestamps all read
/// `memory`'s clock.
pub async fn run_with(memory: &Memory, opts: Options, embedder: Option<&Cached>) -> Result<Report> {
    let layout = &memory.layout;
    let _lock = Writing::start(memory)?;
    let started = Instant::now();
    let stamp = Stamp::new(memory.clock);
    let judge = Judge::for_run(memory, &stamp.run)?;
    let (mut report, state) = match begin(memory, opts, &stamp)? {
        Begun::Held(report, why) => return Ok(skipped(report, why)),
        Begun::Open(report, state) => (report, state),
    };
    let mut inputs = Inputs::read(layout)?;
    let (pending, settled) = inputs.pending(&state);
    let held = review::held(layout)?;
    let (pending, under_review): (Vec<_>, Vec<_>) =
        pending.into_iter().partition(|f| !held.contains(&f.id));
    report.under_review = under_review.len();
    report.pending_facts = pending.len();
    report.suppressed = inputs.suppressed(&settled);
    if !opts.force
        && let Some(why) = gate::volume(pending.len(), &memory.config)
    {
        return Ok(skipped(report, why));
    }
    if !opts.dry_run {
        remove_stale_temp_files(layout);
        adopt(layout, &mut inputs.doc, &stamp)?;
        report.deleted_by_hand = deleted_by_hand::record(layout, &mut inputs.doc, &stamp)?;
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "read files");
    // One embedder for the run (the caller's, or one opened here): the
    // judge's clusters and promotion's current-first order. Without one
    // the judge says why when it needs it, and promotion goes by recall.
    let own = match embedder {
        Some(_) => None,
        None => memory.cached_embedder().ok(),
    };
    let embedder = embedder.or(own.as_ref());
    let decide = Decide::new(memory, &judge, &inputs, &state, embedder);
    let decided = decide.decide(pending, &mut report).await?;
    summarize(&decided.planned, decided.restatements, &mut report);
    if opts.dry_run {
        report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
        return Ok(report);
    }
    pause_point(layout, Step::Planned);
    let decided = match review_mode(memory) {
        Review::Auto => decided,
        Review::Manual => {
            let (ids, rest) = review::propose(memory, &stamp, decided.planned, &inputs.facts)?;
            report.proposed = ids;
            Decided {
                planned: rest,
                restatements: 0,
                tombstones: decided.tombstones,
            }
        }
    };
    let entries = write(
        memory,
        &stamp,
        &decided,
        (&inputs, state, &settled),
        &mut report,
    )?;
    promote(memory, &judge, (&entries, embedder), &mut report).await;
    report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(report)
}

/// A run's report as it starts, with the decisions made in REVIEW.md
/// carried out first (not in a dry run); then why the time gate holds it
/// back, or the state it starts from (a last run recorded in the future
/// taken as now).
fn begin(memory: &Memory, opts: Options, stamp: &Stamp) -> Result<Begun> {
    let layout = &memory.layout;
    let mut report = Report {
        run_id: stamp.run.clone(),
        dry_run: opts.dry_run,
        judge: Judge::label(&memory.config),
        ..Default::default()
    };
    if !opts.dry_run {
        reviewed(memory, &mut report)?;
    }
    // The time gate on the last run alone: a run it holds back does not
    // read the watermark, which grows with every fact decided. A last run
    // in the future is saved as now first, and then holds the run back.
    let now = memory.clock.now();
    let last_run = State::last_run(&layout.state_file())?;
    if !opts.force
        && gate::future(last_run.as_deref(), now).is_none()
        && let Some(why) = gate::time(last_run.as_deref(), &memory.config, now)
    {
        return Ok(Begun::Held(report, why));
    }
    let mut state = State::load(&layout.state_file())?;
    if let Some(last) = gate::future(state.last_run.as_deref(), now) {
        tracing::warn!(%last, "the last run is recorded in the future (a clock was ahead); taken as now");
        state.last_run = Some(stamp.clock.timestamp());
        if !opts.dry_run {
            state.save(&layout.state_file())?;
        }
        if !opts.force
            && let Some(why) = gate::time(state.last_run.as_deref(), &memory.config, now)
        {
            return Ok(Begun::Held(report, why));
        }
    }
    Ok(Begun::Open(report, state))
}

/// A run begun: held back by the time gate (why), or open, with the state.
enum Begun {
    Held(Report, String),
    Open(Report, State),
}

/// Apply the decisions, tombstone what was kept out, journal and save the
/// state; the entries as written.
fn write(
    memory: &Memory,
    stamp: &Stamp,
    decided: &Decided,
    (inputs, state, settled): (&Inputs, State, &[FactId]),
    report: &mut Report,
) -> Result<Document> {
    let layout = &memory.layout;
    // The lines of MEMORY.md that name entries about to go, first: a run
    // that fails after this has changed no entry, and a later promotion
    // that fails leaves no line naming an entry the file lacks.
    let removed: std::collections::HashSet<&str> = decided
        .planned
        .iter()
        .filter_map(|p| match &p.decision {
            Decision::Ops(ops) => Some(ops),
            _ => None,
        })
        .flatten()
        .filter_map(|op| match op {
            Op::Remove { target, .. } => Some(target.as_str()),
            _ => None,
        })
        .collect();
    core_md::drop_lines(&layout.memory_md(), &removed)?;
    let (mut applied, entries) = apply::apply(layout, &decided.planned, stamp)?;
    tombstones::append(&layout.tombstones_file(), &decided.tombstones)?;
    applied.records.extend(report.suppressed.iter().map(|s| {
        let mut r = stamp.record(journal::Op::Suppress, &s.fact);
        match &s.erased {
            Some(when) => r.erased = Some(when.clone()),
            None => r.before = Some(s.text.clone()),
        }
        r.into = s.forgotten.clone();
        r
    }));
    pause_point(layout, Step::EntriesWritten);
    report.applied = applied.counts.clone();
    report.skipped_hand_edited = applied.skipped;
    let state = commit::commit(layout, &applied, &decided.planned, settled, state, stamp)?;
    let rule = Pending::new(&state, &inputs.tombstones, &entries, Journal::of(layout));
    report.facts_done = inputs.facts.iter().filter(|f| !rule.is_pending(f)).count();
    Ok(entries)
}

/// Carry out the decisions REVIEW.md holds, if any ([`crate::review`]);
/// what was done, when something was.
/// Whether this run proposes (`manual`) or applies: `manual` when the
/// memory's configuration says so, or `memd.toml` says so now. A daemon
/// reads its configuration when it starts; a person who turns review on
/// while it runs is taken at their word at the next run (turning it off
/// takes a restart: the safe way round, nothing is applied unasked).
fn review_mode(memory: &Memory) -> Review {
    match memory.config.consolidation.review {
        Review::Manual => Review::Manual,
        Review::Auto => {
            Config::load(&memory.layout.root).map_or(Review::Auto, |c| c.consolidation.review)
        }
    }
}

/// A REVIEW.md memd cannot read stops a run in `manual` mode (it could
/// not add its proposals), and is a warning in `auto` mode.
fn reviewed(memory: &Memory, report: &mut Report) -> Result<()> {
    let carried = match review::carry_out(memory) {
        Ok(c) => c,
        Err(e) if review_mode(memory) == Review::Auto => {
            report
                .warnings
                .push(format!("decisions of REVIEW.md not carried out: {e:#}"));
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    report.review = (carried != review::Carried::default()).then_some(carried);
    Ok(())
}

fn skipped(mut report: Report, why: String) -> Report {
    tracing::info!(reason = %why, "consolidation skipped");
    report.skipped = Some(why);
    report
}

/// Hand-written blocks get ids before planning, so that the ops planned
/// against them still name them when applied. Entries the journal does
/// not know (a run wrote them and died before its journal records) are
/// journaled too, so that a hand deletion of one is recognised and its
/// facts are forgotten, never hidden. A block that is an entry memd wrote
/// with its metadata taken off gets that entry's id and sources back.
fn adopt(layout: &Layout, doc: &mut Document, stamp: &Stamp) -> Result<()> {
    let mut records = Vec::new();
    let known = journal::lineage(&journal::read(&layout.journal_file())?);
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let mut missing = deleted_by_hand::unlabelled(doc, &known, &stones);
    if !missing.is_empty() || doc.entries().any(|e| e.meta.is_none()) {
        let given = doc.reclaim(&missing, &stamp.today());
        missing.retain(|(id, ..)| !given.contains(id));
        let merged = deleted_by_hand::merge_copies(doc, &missing, stamp);
        // Their lines of MEMORY.md first, as for any hand deletion: a
        // failure here leaves the file as it was, and the next run merges.
        let ids: std::collections::HashSet<&str> =
            merged.iter().map(|r| r.entry.as_str()).collect();
        core_md::drop_lines(&layout.memory_md(), &ids)?;
        records.extend(merged);
        if !given.is_empty() || !missing.is_empty() {
            tracing::info!(
                given_back = given.len(),
                merged = missing.len(),
                "entries gone by id whose text the file still holds: given back their ids, or merged into the entry that says the same"
            );
        }
        let adopted = doc.save(&layout.entries_file(), &stamp.today())?;
        records.extend(stamp.adoptions(doc, &adopted));
    }
    for e in doc.entries() {
        let Some(m) = &e.meta else { continue };
        if records.iter().any(|r| r.entry == m.id.as_str()) {
            continue;
        }
        // One the journal took away by a forget that did not finish (a
        // tombstone names it) is `memd check`'s to report, not this run's
        // to take back. One it took away with nothing keeping it out is
        // in the file all the same (an undo killed before its new text
        // landed, or an entry a person wrote back): live, as the file says,
        // so adopted again, and a later deletion of it by hand is one.
        let l = known.get(&m.id);
        if l.is_some_and(|l| !l.alive) && stones.names_entry(m.id.as_str()) {
            continue;
        }
        let unknown: Vec<_> = m
            .sources
            .iter()
            .filter(|s| !l.is_some_and(|l| l.alive && l.sources.contains(s)))
            .cloned()
            .collect();
        if l.is_some_and(|l| l.alive) && unknown.is_empty() {
            continue;
        }
        let mut r = stamp.record(journal::Op::Adopt, m.id.as_str());
        r.after = Some(e.text.clone());
        r.sources = unknown;
        records.push(r);
    }
    if records.is_empty() {
        return Ok(());
    }
    journal::append(&layout.journal_file(), &records)
}

/// Each cluster's decision in the report (and the log); for a dry run, the
/// ops it would apply.
fn summarize(planned: &[Planned], restatements: usize, report: &mut Report) {
    for (i, p) in planned.iter().enumerate() {
        let (decision, ops, error) = match &p.decision {
            Decision::Ops(ops) if i < restatements => (Verdict::Restatement, ops.clone(), None),
            Decision::Ops(ops) => (Verdict::Ops, ops.clone(), None),
            Decision::Fallback(e) => {
                let ops = reply::repair::fallback(&p.cluster);
                (Verdict::Fallback, ops, Some(e.clone()))
            }
            Decision::Failed { error, .. } => (Verdict::Failed, Vec::new(), Some(error.clone())),
        };
        tracing::info!(
            cluster = i + 1,
            facts = p.cluster.groups.len(),
            entries = p.cluster.entries.len(),
            decision = decision.as_str(),
            ops = %ops.iter().map(Op::name).collect::<Vec<_>>().join(","),
            error = error.as_deref().unwrap_or(""),
            "cluster decided"
        );
        match &p.decision {
            Decision::Fallback(_) => {
                report.fallback_facts += p.cluster.fact_ids().count();
                tracing::warn!(
                    cluster = i + 1,
                    "replies stayed invalid: adding the facts verbatim, marked unreviewed"
                );
            }
            Decision::Failed { over_budget, .. } => {
                report.failed_clusters += 1;
                report.failed_facts.extend(p.cluster.fact_ids().cloned());
                report.over_budget |= over_budget;
            }
            Decision::Ops(_) => {}
        }
        if report.dry_run {
            report::count(&mut report.applied, &ops);
        }
        report.cluster_reports.push(ClusterReport {
            facts: p.cluster.fact_ids().cloned().collect(),
            entries: p.cluster.entries.iter().map(|e| e.id.clone()).collect(),
            decision,
            diff: ops::render_diff(&ops, &p.cluster),
            ops,
            error,
        });
    }
}

/// Refresh MEMORY.md; a failure is a warning in the report (the entries
/// are written and journaled already).
async fn promote(
    memory: &Memory,
    judge: &Judge,
    (entries, embedder): (&Document, Option<&Cached>),
    report: &mut Report,
) {
    let client = match judge {
        Judge::Llm(c) => Some(c),
        Judge::BuiltIn => None,
    };
    match promote::run(memory, entries, client, embedder).await {
        Ok(p) => {
            report.promoted_lines = p.lines;
            report.warnings.extend(p.warnings);
        }
        Err(e) => report
            .warnings
            .push(format!("MEMORY.md not updated: {e:#}")),
    }
    pause_point(&memory.layout, Step::MemoryMdWritten);
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
}
