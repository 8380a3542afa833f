//! Consolidation: pending archive facts become entries of
//! `consolidated/memory.md` (DESIGN.md §3).
//!
//! ```text
//!  lock ─► gate ─► pending facts ─► exact restatements (KEEP, free)
//!                        │
//!                        ▼
//!          cluster (neighbours by similarity)  ─►  judge each cluster
//!                                                  (LLM, or built-in)
//!                                                        │ validated ops
//!                                                        ▼
//!                                  second look at each ADD beside entries:
//!                                  does it update one? (LLM; yes → REPLACE
//!                                  with the old text as history)
//!                                                        ▼
//!   apply to a fresh read ─► journal ─► watermark ─► promote ─► reindex
//! ```
//!
//! Order of writes and what a crash between them leaves:
//! 1. `consolidated/memory.md`, atomically. The entries now name their
//!    source facts, so a run that dies before step 3 does not decide those
//!    facts again: a fact already in some entry's `sources` is settled.
//! 2. the journal (a crash before it loses a lineage record, never a fact);
//! 3. the state (watermark, retries, last run);
//! 4. `MEMORY.md`; 5. the index (derived, rebuilt by any later sync).
//!
//! A hand edit is never overwritten: ops are applied to a fresh read of the
//! file, an op whose target changed since planning is skipped (its facts
//! stay pending), and the file is replaced only if it is still byte for byte
//! what was read (otherwise the apply starts again from a new read).

pub mod cluster;
pub mod ops;

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

use crate::archive::{self, Fact};
use crate::config::Config;
use crate::entries::{Document, sanitize_text, text_hash};
use crate::index::Index;
use crate::journal::{self, Record};
use crate::llm::{self, Message};
use crate::state::State;
use crate::text::{normalize, short_hash};
use crate::tombstones::Tombstones;
use crate::{Layout, lock, prompts};
use ops::{Cluster, Group, Op, Snapshot};

/// Who decides what the pending facts do to the entries.
pub enum Judge {
    /// No LLM configured: exact restatements KEEP, everything else ADD.
    BuiltIn,
    Llm(llm::Client),
}

impl Judge {
    pub fn from_config(config: &Config) -> Result<Judge> {
        Ok(if config.llm.configured() {
            Judge::Llm(llm::Client::new(&config.llm)?)
        } else {
            Judge::BuiltIn
        })
    }

    /// A short name for run and evaluation reports.
    pub fn label(config: &Config) -> String {
        if config.llm.configured() {
            format!("llm {} at {}", config.llm.model, config.llm.base_url)
        } else {
            "built-in".into()
        }
    }

    /// One line for `memd status`: which judge, and what that means.
    pub fn describe(config: &Config) -> String {
        if config.llm.configured() {
            format!("llm: {} at {}", config.llm.model, config.llm.base_url)
        } else {
            "built-in (no LLM configured: exact restatements merge, everything else is added; \
             promotion ranks by recall and recency)"
                .into()
        }
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Skip the time and volume gates (never the lock).
    pub force: bool,
    /// Plan, print, change nothing.
    pub dry_run: bool,
}

/// What a cluster's judge decided.
#[derive(Debug, Clone)]
enum Decision {
    Ops(Vec<Op>),
    /// Replies stayed invalid past `max_retries`: add the facts verbatim.
    Fallback(String),
    /// No usable reply this run; the facts stay pending. `counted` when the
    /// replies were invalid (as opposed to the LLM being unreachable).
    Failed {
        error: String,
        counted: bool,
    },
}

#[derive(Debug)]
struct Planned {
    cluster: Cluster,
    decision: Decision,
    model: String,
    prompt_hash: Option<String>,
    /// Invalid replies so far for these facts (across runs).
    failures: u32,
}

impl Planned {
    /// A decision of the built-in judge: one op on one group of facts.
    fn built_in(op: Op, group: Group, entry: Option<Snapshot>) -> Planned {
        Planned {
            decision: Decision::Ops(vec![op]),
            cluster: Cluster {
                groups: vec![group],
                entries: entry.into_iter().collect(),
            },
            model: "built-in".into(),
            prompt_hash: None,
            failures: 0,
        }
    }
}

/// One cluster in the run report.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClusterReport {
    pub facts: Vec<String>,
    pub entries: Vec<String>,
    /// `ops`, `restatement`, `fallback` or `failed`.
    pub decision: String,
    pub ops: Vec<Op>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Readable diff of the planned ops.
    pub diff: String,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Counts {
    pub add: usize,
    pub replace: usize,
    pub remove: usize,
    pub keep: usize,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Report {
    pub run_id: String,
    pub dry_run: bool,
    pub judge: String,
    /// Why the gate skipped the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
    pub pending_facts: usize,
    /// Facts that restate an entry word for word: merged without a judge.
    pub restatements: usize,
    /// Clusters sent to the judge (restatements not counted).
    pub clusters: usize,
    pub llm_calls: usize,
    pub prompt_tokens: u64,
    /// As the server reports them (0 when it does not).
    pub completion_tokens: u64,
    pub applied: Counts,
    /// Ops not applied because their target was edited by hand meanwhile.
    pub skipped_hand_edited: usize,
    /// Clusters with no usable reply this run (facts stay pending).
    pub failed_clusters: usize,
    /// Facts added verbatim and marked unreviewed.
    pub fallback_facts: usize,
    /// Facts behind the watermark after this run.
    pub facts_done: usize,
    pub promoted_lines: usize,
    pub cluster_reports: Vec<ClusterReport>,
    pub warnings: Vec<String>,
    pub total_ms: f64,
    /// Summed time of the LLM calls (they overlap with `concurrency` > 1).
    pub llm_ms: f64,
}

impl Report {
    pub fn render(&self) -> String {
        let mut out = String::new();
        if let Some(why) = &self.skipped {
            return format!("consolidation skipped: {why} (--force runs it anyway)\n");
        }
        if self.dry_run {
            out.push_str("dry run: nothing was written\n\n");
            for (i, c) in self.cluster_reports.iter().enumerate() {
                out.push_str(&format!(
                    "cluster {} ({}; {} facts, {} entries)\n",
                    i + 1,
                    c.decision,
                    c.facts.len(),
                    c.entries.len()
                ));
                out.push_str(&c.diff);
                if let Some(e) = &c.error {
                    out.push_str(&format!("  ! {e}\n"));
                }
            }
            out.push('\n');
        }
        out.push_str(&format!(
            "run {} ({}): {} pending facts, {} restatements, {} clusters, {} LLM calls\n",
            self.run_id,
            self.judge,
            self.pending_facts,
            self.restatements,
            self.clusters,
            self.llm_calls
        ));
        let a = &self.applied;
        out.push_str(&format!(
            "{} ADD, {} REPLACE, {} REMOVE, {} KEEP{}\n",
            a.add,
            a.replace,
            a.remove,
            a.keep,
            if self.dry_run { " planned" } else { " applied" }
        ));
        if self.skipped_hand_edited > 0 {
            out.push_str(&format!(
                "{} ops skipped: their entry was edited by hand during the run (facts stay pending)\n",
                self.skipped_hand_edited
            ));
        }
        if self.failed_clusters > 0 {
            out.push_str(&format!(
                "{} clusters got no usable reply (facts stay pending)\n",
                self.failed_clusters
            ));
        }
        if self.fallback_facts > 0 {
            out.push_str(&format!(
                "{} facts added verbatim and marked unreviewed\n",
                self.fallback_facts
            ));
        }
        if !self.dry_run {
            out.push_str(&format!("{} lines in MEMORY.md\n", self.promoted_lines));
        }
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out
    }
}

/// The lock every writer of the entries file holds (consolidation, forget).
pub fn lock(layout: &Layout) -> Result<lock::Guard> {
    lock::lock_or_explain(
        &layout.runtime_dir().join("consolidate.lock"),
        "a consolidation (or forget) in this memory directory",
    )
}

/// Test failpoint: with `MEMD_PAUSE_AT=<step>` the process stops at `step`,
/// leaves `.memd/paused-at-<step>` and waits to be killed. The crash-safety
/// tests kill it there with SIGKILL, one step after another.
pub(crate) fn pause_point(layout: &Layout, step: &str) {
    if std::env::var("MEMD_PAUSE_AT").ok().as_deref() == Some(step) {
        let _ = std::fs::write(
            layout.runtime_dir().join(format!("paused-at-{step}")),
            std::process::id().to_string(),
        );
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
}

fn today() -> String {
    chrono::Local::now().format("%Y-%m-%d").to_string()
}

fn now() -> String {
    chrono::Local::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub(crate) fn new_run_id() -> String {
    let now = chrono::Local::now();
    format!(
        "r-{}-{}",
        now.format("%Y%m%dT%H%M%S"),
        short_hash(&format!("{:?}{}", now, std::process::id()), 4)
    )
}

/// Why the gate holds the run back, if it does.
fn gate(state: &State, config: &Config, pending: usize) -> Option<String> {
    let c = &config.consolidation;
    if let Some(last) = state
        .last_run
        .as_deref()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    {
        let hours = (chrono::Local::now().fixed_offset() - last).num_seconds() as f64 / 3600.0;
        if hours < c.min_hours {
            return Some(format!(
                "last run {hours:.1} h ago, min_hours is {}",
                c.min_hours
            ));
        }
    }
    if (pending as u64) < c.min_facts as u64 {
        return Some(format!(
            "{pending} pending facts, min_facts is {}",
            c.min_facts
        ));
    }
    None
}

/// Temp files an interrupted atomic write left behind (ours by name).
fn remove_stale_temp_files(layout: &Layout) {
    for (dir, name) in [
        (layout.consolidated_dir(), "memory.md"),
        (layout.root.clone(), "MEMORY.md"),
        (layout.root.clone(), ".consolidation_state.json"),
    ] {
        let Ok(list) = std::fs::read_dir(&dir) else {
            continue;
        };
        let prefix = format!(".{name}.");
        for e in list.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if f.starts_with(&prefix) && f.ends_with(".tmp") {
                tracing::info!(file = %e.path().display(), "removing a temp file left by an interrupted write");
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Pending facts grouped by normalised text, in archive order.
fn group(pending: &[&Fact]) -> Vec<Group> {
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<Group> = Vec::new();
    for f in pending {
        let key = normalize(&f.text);
        match at.get(&key) {
            Some(&i) => {
                groups[i].ids.push(f.id.clone());
                groups[i].days.push(f.day.clone());
            }
            None => {
                at.insert(key, groups.len());
                groups.push(Group {
                    ids: vec![f.id.clone()],
                    text: f.text.clone(),
                    days: vec![f.day.clone()],
                });
            }
        }
    }
    groups
}

fn snapshot(e: &crate::entries::Entry) -> Option<Snapshot> {
    let m = e.meta.as_ref()?;
    Some(Snapshot {
        id: m.id.clone(),
        text: e.text.clone(),
        pinned: m.pinned,
        unreviewed: m.unreviewed,
        first_seen: m.first_seen.clone(),
        updated: m.updated.clone(),
    })
}

/// Run consolidation once. The same function serves `memd consolidate` and
/// the daemon's loop.
pub async fn run(layout: &Layout, config: &Config, opts: Options) -> Result<Report> {
    run_with(layout, config, opts, None).await
}

/// [`run`] with the index of the process that owns it (the daemon), so
/// that one process never syncs one table through two handles.
pub async fn run_with(
    layout: &Layout,
    config: &Config,
    opts: Options,
    shared: Option<&Index>,
) -> Result<Report> {
    let _lock = lock(layout)?;
    let started = Instant::now();
    let today = today();
    let judge = Judge::from_config(config)?;
    let mut report = Report {
        run_id: new_run_id(),
        dry_run: opts.dry_run,
        judge: Judge::label(config),
        ..Default::default()
    };
    if !opts.dry_run {
        remove_stale_temp_files(layout);
    }

    let mut doc = Document::read(&layout.entries_file())?;
    if !opts.dry_run && doc.entries().any(|e| e.meta.is_none()) {
        // Hand-written blocks get ids before planning, so that the ops
        // planned against them still name them when applied.
        let adopted = doc.save(&layout.entries_file(), &today)?;
        let records: Vec<Record> = adopted
            .iter()
            .map(|id| {
                let mut r = Record::new(&report.run_id, journal::Op::Adopt, id);
                r.after = doc.get(id).map(|e| e.text.clone());
                r
            })
            .collect();
        journal::append(&layout.journal_file(), &records)?;
    }
    let (facts, _) = archive::read_all(layout)?;
    let mut state = State::load(&layout.state_file())?;
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let in_sources: HashSet<&str> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| m.sources.iter().map(String::as_str))
        .collect();
    // Settled without a decision: forgotten, or already folded into an
    // entry by a run that stopped before saving the watermark.
    let mut settled: Vec<String> = Vec::new();
    let mut pending: Vec<&Fact> = Vec::new();
    for f in &facts {
        if state.is_done(f) {
            continue;
        }
        if tombstones.covers(&f.id, &f.text) || in_sources.contains(f.id.as_str()) {
            settled.push(f.id.clone());
        } else {
            pending.push(f);
        }
    }
    report.pending_facts = pending.len();
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "read files");
    if !opts.force
        && let Some(why) = gate(&state, config, pending.len())
    {
        tracing::info!(reason = %why, "consolidation skipped");
        report.skipped = Some(why);
        return Ok(report);
    }

    // Exact restatements of an entry: KEEP, no judge needed.
    let by_text: HashMap<String, Snapshot> = doc
        .entries()
        .filter_map(snapshot)
        .map(|s| (normalize(&s.text), s))
        .collect();
    let mut planned: Vec<Planned> = Vec::new();
    let mut rest: Vec<Group> = Vec::new();
    for g in group(&pending) {
        match by_text.get(&normalize(&g.text)) {
            Some(s) => {
                report.restatements += g.ids.len();
                let keep = Op::Keep {
                    target: s.id.clone(),
                    from: g.ids.clone(),
                };
                planned.push(Planned::built_in(keep, g, Some(s.clone())));
            }
            None => rest.push(g),
        }
    }
    let restatement_clusters = planned.len();
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "restatements");

    let mut index: Option<Index> = None;
    let mut llm_ms = 0.0;
    match &judge {
        Judge::BuiltIn => {
            for g in rest {
                let add = Op::Add {
                    text: g.text.clone(),
                    from: g.ids.clone(),
                };
                planned.push(Planned::built_in(add, g, None));
            }
        }
        Judge::Llm(client) => {
            if shared.is_none() {
                index = Some(Index::open(layout, config).await?);
            }
            let idx = shared.or(index.as_ref()).expect("an index");
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "index opened");
            let snapshots: Vec<Snapshot> = doc
                .entries()
                .filter(|e| !e.text.trim().is_empty() && !tombstones.covers("", &e.text))
                .filter_map(snapshot)
                .collect();
            let clusters = gather(idx, config, rest, snapshots).await?;
            tracing::debug!(ms = started.elapsed().as_millis() as u64, "clustered");
            let template = prompts::load(layout, prompts::CONSOLIDATE)?;
            let update_template = if config.consolidation.check_updates {
                Some(prompts::load(layout, prompts::UPDATE)?)
            } else {
                None
            };
            let budget = Mutex::new(config.consolidation.remove_budget);
            let calls = std::sync::atomic::AtomicUsize::new(0);
            let tokens = std::sync::atomic::AtomicU64::new(0);
            let completion = std::sync::atomic::AtomicU64::new(0);
            let spent = Mutex::new(Duration::ZERO);
            let ctx = Ctx {
                client,
                template: &template,
                update_template: update_template.as_deref(),
                max_retries: config.consolidation.max_retries,
                budget: &budget,
                calls: &calls,
                tokens: &tokens,
                completion: &completion,
                spent: &spent,
            };
            let mut decided: Vec<(usize, Planned)> =
                futures::stream::iter(clusters.into_iter().enumerate().map(|(i, c)| {
                    let failures = c
                        .fact_ids()
                        .filter_map(|id| state.retries.get(id))
                        .max()
                        .copied()
                        .unwrap_or(0);
                    let ctx = &ctx;
                    async move { (i, ctx.decide(c, failures).await) }
                }))
                .buffer_unordered(config.consolidation.concurrency.max(1) as usize)
                .collect()
                .await;
            decided.sort_by_key(|(i, _)| *i);
            planned.extend(decided.into_iter().map(|(_, p)| p));
            report.llm_calls = calls.into_inner();
            report.prompt_tokens = tokens.into_inner();
            report.completion_tokens = completion.into_inner();
            llm_ms = spent.into_inner().unwrap().as_secs_f64() * 1000.0;
        }
    }
    report.clusters = planned.len() - restatement_clusters;
    report.llm_ms = llm_ms;
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "decided");

    for (i, p) in planned.iter().enumerate() {
        let (decision, ops, error) = match &p.decision {
            Decision::Ops(ops) if i < restatement_clusters => ("restatement", ops.clone(), None),
            Decision::Ops(ops) => ("ops", ops.clone(), None),
            Decision::Fallback(e) => ("fallback", fallback_ops(&p.cluster), Some(e.clone())),
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
        if opts.dry_run {
            count(&mut report.applied, &ops);
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
    if opts.dry_run {
        report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
        return Ok(report);
    }

    pause_point(layout, "planned");
    let applied = apply(layout, &planned, &today, &report.run_id)?;
    pause_point(layout, "entries-written");
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "applied");
    report.applied = applied.counts;
    report.skipped_hand_edited = applied.skipped;
    journal::append(&layout.journal_file(), &applied.records)?;
    pause_point(layout, "journal-written");

    for p in &planned {
        if let Decision::Failed {
            counted: true,
            error,
        } = &p.decision
        {
            for id in p.cluster.fact_ids() {
                state.retries.insert(id.to_string(), p.failures);
            }
            tracing::warn!(error = %error, "cluster held back: its facts stay pending");
        }
    }
    let done = settled.iter().chain(&applied.done).map(String::as_str);
    state.mark_done(done, &facts, &today);
    state.last_run = Some(now());
    state.last_run_id = Some(report.run_id.clone());
    state.save(&layout.state_file())?;
    report.facts_done = facts.iter().filter(|f| state.is_done(f)).count();
    pause_point(layout, "state-written");
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "state saved");

    let client = match &judge {
        Judge::Llm(c) => Some(c),
        Judge::BuiltIn => None,
    };
    match crate::promote::run(layout, config, client).await {
        Ok(p) => {
            report.promoted_lines = p.lines;
            report.warnings.extend(p.warnings);
        }
        Err(e) => report
            .warnings
            .push(format!("MEMORY.md not updated: {e:#}")),
    }
    pause_point(layout, "memory-md-written");
    tracing::debug!(ms = started.elapsed().as_millis() as u64, "promoted");

    let synced = async {
        if let Some(i) = shared.or(index.as_ref()) {
            return i.sync().await;
        }
        Index::open(layout, config).await?.sync().await
    };
    if let Err(e) = synced.await {
        report.warnings.push(format!(
            "index not updated ({e:#}); the next search or `memd reindex` will catch up"
        ));
    }
    for w in &report.warnings {
        tracing::warn!("{w}");
    }
    report.total_ms = started.elapsed().as_secs_f64() * 1000.0;
    Ok(report)
}

fn count(c: &mut Counts, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Add { .. } => c.add += 1,
            Op::Replace { .. } => c.replace += 1,
            Op::Remove { .. } => c.remove += 1,
            Op::Keep { .. } => c.keep += 1,
        }
    }
}

/// The verbatim ADDs that stand in for a cluster the judge could not
/// decide.
fn fallback_ops(cluster: &Cluster) -> Vec<Op> {
    cluster
        .groups
        .iter()
        .map(|g| Op::Add {
            text: g.text.clone(),
            from: g.ids.clone(),
        })
        .collect()
}

/// Embed the pending groups and the entries, then cluster them.
async fn gather(
    index: &Index,
    config: &Config,
    groups: Vec<Group>,
    entries: Vec<Snapshot>,
) -> Result<Vec<Cluster>> {
    let texts: Vec<String> = groups
        .iter()
        .map(|g| g.text.clone())
        .chain(entries.iter().map(|e| e.text.clone()))
        .collect();
    let vectors = index
        .embedder()
        .embed(&texts)
        .await
        .context("embedding facts and entries to find their neighbours")?;
    tracing::debug!(texts = texts.len(), "embedded");
    let n_groups = groups.len();
    let seeds: Vec<usize> = (0..n_groups)
        .chain(
            entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.unreviewed)
                .map(|(i, _)| n_groups + i),
        )
        .collect();
    let c = &config.consolidation;
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let found = cluster::clusters(
        &refs,
        &vectors,
        &seeds,
        cluster::Params {
            neighbor_k: c.neighbor_k as usize,
            cluster_max: c.cluster_max as usize,
            min_similarity: c.min_similarity as f32,
        },
    )?;
    let mut groups: Vec<Option<Group>> = groups.into_iter().map(Some).collect();
    Ok(found
        .into_iter()
        .map(|items| {
            let mut cl = Cluster::default();
            for i in items {
                if i < n_groups {
                    cl.groups.extend(groups[i].take());
                } else {
                    cl.entries.push(entries[i - n_groups].clone());
                }
            }
            cl
        })
        .collect())
}

/// What the LLM judge shares across concurrent cluster calls.
struct Ctx<'a> {
    client: &'a llm::Client,
    template: &'a str,
    /// `prompts/update.md` when `check_updates` is on.
    update_template: Option<&'a str>,
    max_retries: u32,
    /// REMOVEs the run may still apply.
    budget: &'a Mutex<u32>,
    calls: &'a std::sync::atomic::AtomicUsize,
    tokens: &'a std::sync::atomic::AtomicU64,
    completion: &'a std::sync::atomic::AtomicU64,
    spent: &'a Mutex<Duration>,
}

/// Each run asks a cluster at most this often (the second time naming what
/// was wrong); past that it waits for the next run, so that a model having
/// a bad moment gets another chance before facts are added verbatim.
const CALLS_PER_RUN: u32 = 2;

impl Ctx<'_> {
    async fn decide(&self, cluster: Cluster, mut failures: u32) -> Planned {
        let (entries, facts) = ops::prompt_lists(&cluster);
        let prompt = prompts::render(self.template, &[("entries", &entries), ("facts", &facts)]);
        let prompt_hash = short_hash(&prompt, 16);
        let planned = |decision, failures| Planned {
            cluster: cluster.clone(),
            decision,
            model: self.client.model().to_string(),
            prompt_hash: Some(prompt_hash.clone()),
            failures,
        };
        if failures > self.max_retries {
            return planned(
                Decision::Fallback("earlier replies were invalid".into()),
                failures,
            );
        }
        let mut messages = vec![Message::user(prompt.clone())];
        let mut last_error = String::new();
        for _ in 0..CALLS_PER_RUN {
            let reply = match self.ask(&messages).await {
                Ok(r) => r,
                Err(e) => {
                    return planned(
                        Decision::Failed {
                            error: format!("{e:#}"),
                            counted: false,
                        },
                        failures,
                    );
                }
            };
            let verdict = llm::extract_json(&reply)
                .map_err(|e| e.to_string())
                .and_then(|v| {
                    let mut budget = self.budget.lock().unwrap();
                    let ops = ops::validate(&v, &cluster, *budget)?;
                    *budget -= ops
                        .iter()
                        .filter(|o| matches!(o, Op::Remove { .. }))
                        .count() as u32;
                    Ok(ops)
                });
            match verdict {
                Ok(ops) => {
                    let ops = self.second_look(ops, &cluster).await;
                    return planned(Decision::Ops(ops), failures);
                }
                Err(error) => {
                    failures += 1;
                    tracing::warn!(failures, error = %error, "invalid LLM reply");
                    if failures > self.max_retries {
                        return planned(Decision::Fallback(error), failures);
                    }
                    messages.push(Message::assistant(reply));
                    messages.push(Message::user(format!(
                        "That reply cannot be used: {error}. Reply again with the complete JSON, following the rules."
                    )));
                    last_error = error;
                }
            }
        }
        planned(
            Decision::Failed {
                error: last_error,
                counted: true,
            },
            failures,
        )
    }

    /// One chat call, counted in the run's calls, tokens and LLM time.
    async fn ask(&self, messages: &[Message]) -> Result<String> {
        use std::sync::atomic::Ordering;
        let started = Instant::now();
        let reply = self.client.chat(messages).await;
        *self.spent.lock().unwrap() += started.elapsed();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let (reply, usage) = reply?;
        let tokens = if usage.prompt_tokens > 0 {
            usage.prompt_tokens
        } else {
            // The usual estimate when a server does not report usage.
            let sent: usize = messages.iter().map(|m| m.content.len()).sum();
            (sent / 4) as u64
        };
        self.tokens.fetch_add(tokens, Ordering::Relaxed);
        self.completion
            .fetch_add(usage.completion_tokens, Ordering::Relaxed);
        Ok(reply)
    }

    /// The second look at each ADD of a valid reply (see
    /// [`ops::update_candidates`]): an ADD the judge says makes an entry
    /// out of date becomes a REPLACE keeping the old text as history. No
    /// answer, or one naming no candidate, leaves the ADD: the default is
    /// keep.
    async fn second_look(&self, mut ops: Vec<Op>, cluster: &Cluster) -> Vec<Op> {
        let Some(template) = self.update_template else {
            return ops;
        };
        for i in 0..ops.len() {
            let candidates = ops::update_candidates(&ops, i, cluster);
            if candidates.is_empty() {
                continue;
            }
            let question = ops::update_question(&ops, i, cluster, &candidates);
            let (entries, fact) = ops::prompt_lists(&question);
            let prompt = prompts::render(template, &[("entries", &entries), ("fact", &fact)]);
            let answer = match self.ask(&[Message::user(prompt)]).await {
                Ok(reply) => llm::extract_json(&reply).ok(),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "second look failed; the ADD stays");
                    None
                }
            };
            if let Some(k) = answer.as_ref().and_then(|v| ops::outdated(v, &question)) {
                ops::make_update(&mut ops, i, cluster, candidates[k]);
                tracing::info!(entry = %cluster.entries[candidates[k]].id, "second look: the ADD updates an entry");
            }
        }
        ops
    }
}

/// What applying a run's decisions did.
#[derive(Default)]
struct Applied {
    records: Vec<Record>,
    /// Facts now folded into entries.
    done: Vec<String>,
    counts: Counts,
    skipped: usize,
}

/// Apply every decision to a fresh read of the entries file and replace it
/// atomically; start over from a new read if the file changes meanwhile.
fn apply(layout: &Layout, planned: &[Planned], today: &str, run: &str) -> Result<Applied> {
    let path = layout.entries_file();
    for _ in 0..10 {
        let original = match std::fs::read(&path) {
            Ok(b) => Some(b),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let mut doc = Document::parse(&String::from_utf8_lossy(original.as_deref().unwrap_or(b"")));
        let mut out = Applied::default();
        for p in planned {
            apply_decision(&mut doc, p, today, run, &mut out);
        }
        let Some(adopted) = doc.save_if_unchanged(&path, today, original.as_deref(), || {
            pause_point(layout, "before-rename")
        })?
        else {
            tracing::info!(
                "consolidated/memory.md changed while applying; applying again to the new text"
            );
            continue;
        };
        for id in adopted {
            let mut r = Record::new(run, journal::Op::Adopt, &id);
            r.after = doc.get(&id).map(|e| e.text.clone());
            out.records.push(r);
        }
        return Ok(out);
    }
    anyhow::bail!(
        "consolidated/memory.md kept changing while the run applied its changes; nothing was written, run again"
    )
}

/// The day range of some facts: (earliest, latest).
fn days_of(cluster: &Cluster, ids: &[String]) -> Option<(String, String)> {
    let mut days: Vec<&str> = cluster
        .groups
        .iter()
        .flat_map(|g| g.ids.iter().zip(&g.days))
        .filter(|(id, _)| ids.contains(id))
        .map(|(_, d)| d.as_str())
        .collect();
    days.sort();
    Some((days.first()?.to_string(), days.last()?.to_string()))
}

fn add_sources(sources: &mut Vec<String>, more: &[String]) {
    for s in more {
        if !sources.contains(s) {
            sources.push(s.clone());
        }
    }
}

fn apply_decision(doc: &mut Document, p: &Planned, today: &str, run: &str, out: &mut Applied) {
    let ops = match &p.decision {
        Decision::Ops(ops) => ops.clone(),
        Decision::Fallback(_) => fallback_ops(&p.cluster),
        Decision::Failed { .. } => return,
    };
    let unreviewed = matches!(p.decision, Decision::Fallback(_));
    // What each entry's text must still be for an op on it to apply: the
    // text the judge saw, or the text this run gave it.
    let mut expected: HashMap<String, String> = p
        .cluster
        .entries
        .iter()
        .map(|e| (e.id.clone(), e.text.clone()))
        .collect();
    let unchanged = |doc: &Document, expected: &HashMap<String, String>, id: &str| match (
        doc.get(id),
        expected.get(id),
    ) {
        (Some(e), Some(want)) => e.text.trim() == want.trim(),
        _ => false,
    };
    let mut held: HashSet<String> = HashSet::new();
    let mut done: Vec<String> = Vec::new();
    // Merges last, so that a REPLACE of the surviving entry lands first.
    let ordered = ops
        .iter()
        .filter(|o| !matches!(o, Op::Remove { .. }))
        .chain(ops.iter().filter(|o| matches!(o, Op::Remove { .. })));
    for op in ordered {
        let record = |kind, entry: &str| {
            let mut r = Record::new(run, kind, entry);
            r.model = Some(p.model.clone());
            r.prompt_hash = p.prompt_hash.clone();
            r.sources = op.from().to_vec();
            r
        };
        let range = days_of(&p.cluster, op.from());
        let applied = match op {
            Op::Add { text, from } => {
                let mut meta = doc.new_meta(text, today, from.clone());
                if let Some((first, last)) = &range {
                    meta.first_seen = first.clone();
                    meta.updated = last.clone();
                }
                meta.unreviewed = unreviewed;
                let entry = doc.push(text, meta);
                let mut r = record(journal::Op::Add, entry.id().unwrap_or_default());
                r.after = Some(entry.text.clone());
                out.counts.add += 1;
                Some(r)
            }
            Op::Replace { target, text, from } => {
                let ok = unchanged(doc, &expected, target)
                    && !doc.get(target).is_some_and(|e| e.pinned());
                match doc.get_mut(target).filter(|_| ok) {
                    Some(e) => {
                        let before = std::mem::replace(&mut e.text, sanitize_text(text));
                        let m = e.meta.as_mut().expect("a planned target has metadata");
                        m.hash = text_hash(&e.text);
                        add_sources(&mut m.sources, from);
                        m.updated = range
                            .map(|r| r.1)
                            .unwrap_or_else(|| today.to_string())
                            .max(m.updated.clone());
                        m.unreviewed = false;
                        expected.insert(target.clone(), e.text.clone());
                        let mut r = record(journal::Op::Replace, target);
                        r.before = Some(before);
                        r.after = Some(e.text.clone());
                        out.counts.replace += 1;
                        Some(r)
                    }
                    None => None,
                }
            }
            Op::Keep { target, from } => {
                let ok = unchanged(doc, &expected, target);
                match doc.get_mut(target).filter(|_| ok) {
                    Some(e) => {
                        let m = e.meta.as_mut().expect("a planned target has metadata");
                        add_sources(&mut m.sources, from);
                        if let Some((_, last)) = range {
                            m.updated = last.max(m.updated.clone());
                        }
                        out.counts.keep += 1;
                        Some(record(journal::Op::Keep, target))
                    }
                    None => None,
                }
            }
            Op::Remove { target, into } => {
                let ok = unchanged(doc, &expected, target)
                    && unchanged(doc, &expected, into)
                    && !doc.get(target).is_some_and(|e| e.pinned());
                match ok.then(|| doc.remove(target)).flatten() {
                    Some(gone) => {
                        let sources = gone.meta.map(|m| m.sources).unwrap_or_default();
                        if let Some(m) = doc.get_mut(into).and_then(|e| e.meta.as_mut()) {
                            add_sources(&mut m.sources, &sources);
                        }
                        let mut r = record(journal::Op::Remove, target);
                        r.before = Some(gone.text);
                        r.into = Some(into.clone());
                        r.sources = sources;
                        out.counts.remove += 1;
                        Some(r)
                    }
                    None => None,
                }
            }
        };
        match applied {
            Some(r) => {
                done.extend(op.from().iter().cloned());
                out.records.push(r);
            }
            None => {
                tracing::info!(
                    op = op.name(),
                    target = op.target().unwrap_or(""),
                    "entry edited by hand during the run: op skipped, its facts stay pending"
                );
                out.skipped += 1;
                held.extend(op.from().iter().cloned());
            }
        }
    }
    // A valid reply reviewed every entry it was shown.
    if matches!(p.decision, Decision::Ops(_)) && p.model != "built-in" {
        for s in &p.cluster.entries {
            if s.unreviewed
                && unchanged(doc, &expected, &s.id)
                && let Some(m) = doc.get_mut(&s.id).and_then(|e| e.meta.as_mut())
            {
                m.unreviewed = false;
            }
        }
    }
    out.done
        .extend(done.into_iter().filter(|id| !held.contains(id)));
}
