//! The read-only report behind `memd status`.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::Result;
use crate::archive::ParsedDays;
use crate::config::Config;
use crate::consolidate::Judge;
use crate::embed::Model;
use crate::ids::FactId;
use crate::index::counts::Tally;
use crate::index::fingerprints::{self, Freshness};
use crate::index::{self, Index};
use crate::layout::Source;
use crate::review::Proposals;
use crate::server::info::{self, Info};
use crate::usage::{self, COMPLETION_ALLOWANCE};
use crate::watch::{self, Health};
use crate::{Layout, Memory, archive};

/// What `memd status` reports.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "StatusReport")]
pub struct Report {
    pub dir: String,
    pub days: Vec<DayCount>,
    pub facts: usize,
    pub entries: usize,
    pub entries_unsaved_hand_written: usize,
    pub entries_edited_by_hand: usize,
    pub entries_unreviewed: usize,
    pub entries_pinned: usize,
    pub tombstones: usize,
    /// Archive facts a tombstone keeps out (forgotten facts and
    /// restatements of them).
    pub facts_forgotten: usize,
    pub pending_facts: usize,
    /// Proposals of review mode not decided yet, and the pending facts
    /// they hold (among `pending_facts`: no run plans them until a person
    /// decides, in `consolidated/REVIEW.md`).
    #[serde(default)]
    pub review_open: usize,
    #[serde(default)]
    pub facts_under_review: usize,
    pub last_consolidation: Option<String>,
    /// Which judge consolidation uses: the built-in one or an LLM.
    pub judge: String,
    /// Tokens the LLM calls spent today (the memory's local day).
    pub llm_tokens_today: u64,
    /// `[llm] max_tokens_per_day`, when set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_budget: Option<u64>,
    /// The embedder, and whether its model's files are in place.
    pub embedder: Model,
    /// Per source file: `fresh`, `stale` or `not indexed`.
    pub index: BTreeMap<Source, Freshness>,
    /// The daemon serving this directory, if one runs.
    pub daemon: Option<Info>,
    /// The watcher's last health record and whether it is alive.
    pub watcher: Option<WatcherStatus>,
    /// Problems found while reading the files (none of them fatal).
    pub warnings: Vec<String>,
    pub config: Config,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WatcherStatus {
    pub alive: bool,
    #[serde(flatten)]
    pub health: Health,
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DayCount {
    pub day: String,
    pub facts: usize,
}

/// Whether each source file is indexed as it is now: from `index`'s
/// writer when the index is open in this process (a daemon's, which
/// stamps again only what changed), else from the files.
fn freshness(layout: &Layout, index: Option<&Index>) -> Result<BTreeMap<Source, Freshness>> {
    match index {
        Some(index) => index.writer.freshness(),
        None => fingerprints::freshness(layout),
    }
}

/// The report on `memory`; `index`, when the index is open in this
/// process, keeps what the report counts ([`index::tally`], [`freshness`]).
pub fn gather(memory: &Memory, index: Option<&Index>) -> Result<Report> {
    let (layout, config) = (&memory.layout, &memory.config);
    let (parsed, tally) = index::tally(layout, index)?;
    let freshness = freshness(layout, index)?;
    let mut warnings: Vec<String> = (parsed.iter())
        .flat_map(|(day, parsed)| archive::warnings_of(day, parsed))
        .collect();
    warnings.extend(tally.entries.warnings.iter().cloned());
    let days: Vec<DayCount> = (parsed.iter().zip(&tally.days))
        .filter(|(_, t)| t.facts() > 0)
        .map(|((day, _), t)| DayCount {
            day: day.clone(),
            facts: t.facts(),
        })
        .collect();
    let pending: usize = tally.days.iter().map(|t| t.pending()).sum();
    let proposals = Proposals::load(layout)?;
    let facts_under_review = under_review(&parsed, &tally, &proposals.held());
    let judge = Judge::describe(config);
    let llm_tokens_today = usage::spent_today(layout, &memory.clock.today())?;
    let llm_budget = config.llm.daily_budget();
    if let Some(limit) = llm_budget
        && llm_tokens_today + COMPLETION_ALLOWANCE > limit
    {
        warnings.push(format!(
            "the day's LLM budget is spent ({llm_tokens_today} of {limit} tokens, [llm] max_tokens_per_day): consolidation makes no LLM call until tomorrow and {pending} facts wait"
        ));
    }
    let embedder = Model::of(&config.embedder);
    warnings.extend(embedder.missing.clone());
    Ok(Report {
        dir: layout.root.display().to_string(),
        facts: days.iter().map(|d| d.facts).sum(),
        days,
        entries: tally.entries.entries,
        entries_unsaved_hand_written: tally.entries.unsaved_hand_written,
        entries_edited_by_hand: tally.entries.edited_by_hand,
        entries_unreviewed: tally.entries.unreviewed,
        entries_pinned: tally.entries.pinned,
        tombstones: tally.tombstones,
        facts_forgotten: tally.days.iter().map(|t| t.forgotten).sum(),
        pending_facts: pending,
        review_open: proposals.open().count(),
        facts_under_review,
        last_consolidation: tally.last_run,
        judge,
        llm_tokens_today,
        llm_budget,
        embedder,
        index: freshness,
        daemon: info::running(layout),
        watcher: watch::health(layout).map(|(health, alive)| WatcherStatus { alive, health }),
        warnings,
        config: config.clone(),
    })
}

/// How many of the facts `held` (by open proposals of review mode) are
/// pending: each found in its own day's parse.
fn under_review(parsed: &ParsedDays, tally: &Tally, held: &HashSet<FactId>) -> usize {
    let pending = |id: &FactId| {
        let at = parsed
            .binary_search_by(|(day, _)| day.as_str().cmp(id.day()))
            .ok()?;
        let place = parsed[at].1.facts.iter().position(|f| f.id == *id)?;
        Some(tally.days[at].is_pending(place))
    };
    held.iter().filter(|id| pending(id) == Some(true)).count()
}
