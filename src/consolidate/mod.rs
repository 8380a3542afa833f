//! Consolidation: pending archive facts become entries of
//! `consolidated/memory.md` (DESIGN.md §3), as a pipeline with one file
//! per stage:
//!
//! ```text
//!  lock ─► gate::time ─► plan::Inputs ─► pending ─► gate::volume
//!  (entries)  (state only)   (archive,                   │
//!                             entries, tombstones)        ▼
//!   plan: restatements (tier 1, KEEP, free) ─► near-duplicates (tier 2,
//!         crate::same: KEEP or fold with the built-in judge; a fact that
//!         says what was forgotten is kept out with any judge)
//!         ─► clusters (neighbours by similarity, forgotten texts nearby)
//!                                                        │
//!   judge: LLM per cluster (schema: ops, or per_fact), or built-in
//!          ─► reply: parse ─► validate ─► repair ─► validate::ops
//!             (FORGET kept out; second_look: ADD beside entries)
//!                                                        ▼
//!   apply (fresh read, atomic) ─► tombstones of facts kept out
//!   ─► commit (journal, state) ─► promote
//! ```
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
pub(crate) mod faithful;
mod gate;
pub(crate) mod judge;
pub mod ops;
pub(crate) mod per_fact;
pub(crate) mod plan;
pub(crate) mod promote;
pub(crate) mod proposed;
pub mod repair;
pub mod reply;
pub(crate) mod report;
pub(crate) mod schema;
pub(crate) mod second_look;
pub(crate) mod validate;
mod vanished;

use std::time::Instant;

use crate::Result;
use crate::archive::Fact;
use crate::clock::Clock;
use crate::config::Config;
use crate::embed::cache::Cached;
use crate::entries::Document;
use crate::journal::{self, Record};
use crate::state::State;
use crate::text::short_hash;
use crate::tombstones::Tombstone;
use crate::{Layout, prompts};
pub use judge::Judge;
use judge::{Decision, Planned};
use ops::Op;
use plan::Inputs;
pub use report::{ClusterReport, Counts, Report, Suppressed};

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Skip the time and volume gates (never the lock).
    pub force: bool,
    /// Plan, print, change nothing.
    pub dry_run: bool,
}

pub(crate) use crate::pause::at as pause_point;

pub(crate) fn new_run_id(clock: &Clock) -> String {
    let now = clock.now();
    format!(
        "r-{}-{}",
        now.format("%Y%m%dT%H%M%S"),
        short_hash(
            &format!("{:?}{:?}{}", now, Instant::now(), std::process::id()),
            4
        )
    )
}

/// Temp files interrupted writes of this run's files left behind.
fn remove_stale_temp_files(layout: &Layout) {
    for path in [
        layout.entries_file(),
        layout.memory_md(),
        layout.state_file(),
    ] {
        crate::atomic::remove_stale_temps(&path);
    }
}

/// Run consolidation once, with an embedder of its own when the judge
/// needs one. The caller syncs the index afterwards.
pub async fn run(layout: &Layout, config: &Config, opts: Options) -> Result<Report> {
    run_with(layout, config, opts, None).await
}

/// [`run`] with the embedder of the process that owns the index (the
/// daemon), so that one process never opens the embedding cache twice.
pub(crate) async fn run_with(
    layout: &Layout,
    config: &Config,
    opts: Options,
    embedder: Option<&Cached>,
) -> Result<Report> {
    run_at(layout, config, opts, embedder, Clock::System).await
}

/// Whether the gate would let a run start now: what a daemon serving many
/// memories asks before it opens one (read only, no lock).
pub fn due(layout: &Layout, config: &Config) -> Result<bool> {
    let state = State::load(&layout.state_file())?;
    if gate::time(&state, config, Clock::System.now()).is_some() {
        return Ok(false);
    }
    let inputs = Inputs::read(layout)?;
    let (pending, _) = inputs.pending(&state);
    Ok(gate::volume(pending.len(), config).is_none())
}

/// [`run_with`] as of the time `clock` gives: the gate, the day of new
/// entries and the run's timestamps all read it.
pub async fn run_at(
    layout: &Layout,
    config: &Config,
    opts: Options,
    embedder: Option<&Cached>,
    clock: Clock,
) -> Result<Report> {
    let _lock = crate::entries::lock(layout)?;
    let started = Instant::now();
    let judge = Judge::from_config(config)?;
    let mut report = Report {
        run_id: new_run_id(&clock),
        dry_run: opts.dry_run,
        judge: Judge::label(config),
        ..Default::default()
    };
    let state = State::load(&layout.state_file())?;
    if !opts.force
        && let Some(why) = gate::time(&state, config, clock.now())
    {
        return Ok(skipped(report, why));
    }
    let mut inputs = Inputs::read(layout)?;
    let (pending, settled) = inputs.pending(&state);
    report.pending_facts = pending.len();
    report.suppressed = inputs.suppressed(&settled);
    if !opts.force
        && let Some(why) = gate::volume(pending.len(), config)
    {
        return Ok(skipped(report, why));
    }
    let today = clock.today();
    if !opts.dry_run {
        remove_stale_temp_files(layout);
        adopt(layout, &mut inputs.doc, &today, &report.run_id)?;
        report.deleted_by_hand = vanished::record(layout, &inputs.doc, &report.run_id)?;
    }
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "read files");
    let ctx = Decide {
        layout,
        config,
        judge: &judge,
        inputs: &inputs,
        state: &state,
        embedder,
        own_embedder: std::sync::OnceLock::new(),
    };
    let decided = ctx.decide(pending, &mut report).await?;
    let planned = decided.planned;
    summarize(&planned, decided.restatements, &mut report);
    if opts.dry_run {
        report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
        return Ok(report);
    }
    pause_point(layout, "planned");
    let (mut applied, entries) = apply::apply(layout, &planned, &today, &report.run_id)?;
    crate::tombstones::append(&layout.tombstones_file(), &decided.tombstones)?;
    applied.records.extend(report.suppressed.iter().map(|s| {
        let mut r = Record::new(&report.run_id, journal::Op::Suppress, &s.fact);
        r.before = Some(s.text.clone());
        r.into = s.forgotten.clone();
        r
    }));
    pause_point(layout, "entries-written");
    report.applied = applied.counts.clone();
    report.skipped_hand_edited = applied.skipped;
    let run = (report.run_id.as_str(), clock.timestamp());
    let state = commit::commit(layout, &applied, &planned, &settled, state, run)?;
    let rule = crate::pending::Pending::new(&state, &inputs.tombstones, &entries);
    report.facts_done = inputs.facts.iter().filter(|f| !rule.is_pending(f)).count();
    promote(layout, config, &judge, &entries, &mut report).await;
    report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(report)
}

fn skipped(mut report: Report, why: String) -> Report {
    tracing::info!(reason = %why, "consolidation skipped");
    report.skipped = Some(why);
    report
}

/// Hand-written blocks get ids before planning, so that the ops planned
/// against them still name them when applied.
fn adopt(layout: &Layout, doc: &mut Document, today: &str, run: &str) -> Result<()> {
    if !doc.entries().any(|e| e.meta.is_none()) {
        return Ok(());
    }
    let adopted = doc.save(&layout.entries_file(), today)?;
    let records: Vec<Record> = adopted
        .iter()
        .map(|id| {
            let mut r = Record::new(run, journal::Op::Adopt, id);
            r.after = doc.get(id).map(|e| e.text.clone());
            r
        })
        .collect();
    journal::append(&layout.journal_file(), &records)
}

/// What the judge needs to decide a run's pending facts.
struct Decide<'a> {
    layout: &'a Layout,
    config: &'a Config,
    judge: &'a Judge,
    inputs: &'a Inputs,
    state: &'a State,
    /// The caller's embedder (the daemon's), if it has one.
    embedder: Option<&'a Cached>,
    /// Otherwise one of the run's own, opened when first needed (tier 2
    /// and the clusters share it: the model is loaded once per run).
    own_embedder: std::sync::OnceLock<Cached>,
}

impl Decide<'_> {
    /// The embedder the run uses: the caller's, or its own.
    fn embedder(&self) -> Result<&Cached> {
        if let Some(e) = self.embedder {
            return Ok(e);
        }
        if self.own_embedder.get().is_none() {
            let own = crate::embed::cached(self.layout, &self.config.embedder)?;
            let _ = self.own_embedder.set(own);
        }
        Ok(self.own_embedder.get().expect("set above"))
    }

    /// Every pending fact's decision: restatements first (their count is
    /// returned), then the judge's clusters; and the tombstones for facts
    /// that say what was forgotten.
    async fn decide(&self, pending: Vec<Fact>, report: &mut Report) -> Result<Decided> {
        let (keeps, rest) = plan::restatements(plan::group(&pending), &self.inputs.doc);
        report.restatements = keeps.iter().map(|(_, g, _)| g.ids.len()).sum();
        let near = self.near_duplicates(rest).await?;
        report.near_duplicates = near.keeps.iter().map(|(_, g, _)| g.ids.len()).sum();
        let mut planned: Vec<Planned> = keeps
            .into_iter()
            .chain(near.keeps)
            .map(|(keep, g, s)| Planned::built_in(keep, g, Some(s)))
            .collect();
        let restatements = planned.len();
        let mut kept_out: Vec<(ops::Group, Option<String>)> = near
            .forgotten
            .into_iter()
            .map(|(g, t)| (g, t.entry))
            .collect();
        match self.judge {
            Judge::BuiltIn => planned.extend(near.rest.into_iter().map(|g| {
                let add = Op::Add {
                    text: g.text.clone(),
                    from: g.ids.clone(),
                };
                Planned::built_in(add, g, None)
            })),
            Judge::Llm(client) => planned.extend(self.ask(client, near.rest, report).await?),
        }
        for p in &planned {
            kept_out.extend(p.kept_out.iter().map(|&(g, x)| {
                let entry = p.cluster.forgotten[x].entry.clone();
                (p.cluster.groups[g].clone(), entry)
            }));
        }
        let tombstones = forgotten(kept_out, report);
        report.clusters = planned.len() - restatements;
        Ok(Decided {
            planned,
            restatements,
            tombstones,
        })
    }

    /// Tier 2 ([`plan::near_duplicates`]) with the shipped rule; embeds
    /// only the texts whose words another text shares.
    async fn near_duplicates(&self, groups: Vec<ops::Group>) -> Result<plan::NearDuplicates> {
        let rule = crate::same::Rule::SHIPPED;
        let entries = self.inputs.snapshots();
        let texts = plan::near_texts(&groups, &entries, &self.inputs.tombstones, rule);
        let compared: Vec<String> = texts
            .iter()
            .map(|t| crate::same::Rule::compared(t))
            .collect();
        let vectors = match compared.is_empty() {
            true => Vec::new(),
            false => self.embedder()?.embed(&compared).await?,
        };
        let vectors = texts.into_iter().zip(vectors).collect();
        let merge = matches!(self.judge, Judge::BuiltIn);
        let tombstones = &self.inputs.tombstones;
        Ok(plan::near_duplicates(
            groups,
            &entries,
            tombstones,
            &vectors,
            (rule, merge),
        ))
    }

    /// Cluster the groups with the entries and ask the LLM about each.
    async fn ask(
        &self,
        client: &crate::llm::Client,
        groups: Vec<ops::Group>,
        report: &mut Report,
    ) -> Result<Vec<Planned>> {
        let embedder = self.embedder()?;
        let clusters =
            plan::clusters(embedder, self.config, groups, self.inputs.snapshots()).await?;
        let clusters = plan::with_forgotten(embedder, clusters, &self.inputs.tombstones).await?;
        let ops = prompts::load(self.layout, prompts::CONSOLIDATE)?;
        let per_fact = match self.config.consolidation.request {
            crate::config::Request::Ops => None,
            crate::config::Request::PerFact => Some(prompts::load(self.layout, prompts::DECIDE)?),
        };
        let update = match self.config.consolidation.check_updates {
            true => Some(prompts::load(self.layout, prompts::UPDATE)?),
            false => None,
        };
        let templates = judge::Templates {
            ops: &ops,
            per_fact: per_fact.as_deref(),
            update: update.as_deref(),
        };
        let (planned, spent) =
            judge::decide_all(client, self.config, templates, clusters, self.state).await;
        report.llm_calls = spent.calls;
        report.invalid_replies = spent.invalid;
        report.prompt_tokens = spent.prompt_tokens;
        report.completion_tokens = spent.completion_tokens;
        report.llm_ms = spent.llm_ms;
        Ok(planned)
    }
}

/// What [`Decide::decide`] planned.
struct Decided {
    planned: Vec<Planned>,
    /// The first this many of `planned` are restatements (tiers 1 and 2).
    restatements: usize,
    /// For pending facts that say what was forgotten (in other words than
    /// the tombstone's): each keeps its fact out for good, under the
    /// forgotten entry's id, so `memd forget --undo` lifts both.
    tombstones: Vec<Tombstone>,
}

/// The tombstones for groups that say what `forgotten` texts say, each
/// fact named in the report.
fn forgotten(groups: Vec<(ops::Group, Option<String>)>, report: &mut Report) -> Vec<Tombstone> {
    let mut out = Vec::new();
    for (g, entry) in groups {
        report.suppressed.extend(g.ids.iter().map(|id| Suppressed {
            fact: id.clone(),
            text: g.text.clone(),
            forgotten: entry.clone(),
        }));
        let reason = "says what was forgotten";
        out.push(Tombstone::new(entry, &g.text, g.ids, reason));
    }
    out
}

/// Each cluster's decision in the report (and the log); for a dry run, the
/// ops it would apply.
fn summarize(planned: &[Planned], restatements: usize, report: &mut Report) {
    for (i, p) in planned.iter().enumerate() {
        let (decision, ops, error) = match &p.decision {
            Decision::Ops(ops) if i < restatements => ("restatement", ops.clone(), None),
            Decision::Ops(ops) => ("ops", ops.clone(), None),
            Decision::Fallback(e) => ("fallback", repair::fallback(&p.cluster), Some(e.clone())),
            Decision::Failed { error, .. } => ("failed", Vec::new(), Some(error.clone())),
        };
        tracing::info!(
            cluster = i + 1,
            facts = p.cluster.groups.len(),
            entries = p.cluster.entries.len(),
            decision,
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
            Decision::Failed { .. } => report.failed_clusters += 1,
            Decision::Ops(_) => {}
        }
        if report.dry_run {
            report::count(&mut report.applied, &ops);
        }
        report.cluster_reports.push(ClusterReport {
            facts: p.cluster.fact_ids().map(String::from).collect(),
            entries: p.cluster.entries.iter().map(|e| e.id.clone()).collect(),
            decision: decision.into(),
            diff: ops::render_diff(&ops, &p.cluster),
            ops,
            error,
        });
    }
}

/// Refresh MEMORY.md; a failure is a warning in the report (the entries
/// are written and journaled already).
async fn promote(
    layout: &Layout,
    config: &Config,
    judge: &Judge,
    entries: &Document,
    report: &mut Report,
) {
    let client = match judge {
        Judge::Llm(c) => Some(c),
        Judge::BuiltIn => None,
    };
    match promote::run(layout, config, entries, client).await {
        Ok(p) => {
            report.promoted_lines = p.lines;
            report.warnings.extend(p.warnings);
        }
        Err(e) => report
            .warnings
            .push(format!("MEMORY.md not updated: {e:#}")),
    }
    pause_point(layout, "memory-md-written");
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
}
