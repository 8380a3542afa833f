//! `memd eval consolidation`: the real pipeline (archive → index →
//! consolidate with the configured judge → files) on the Letta fact sets.
//!
//! Each set has 10 related but distinct facts (shared names) and several
//! rows, each a `new_fact` that supersedes one of them. Per set, in a
//! temporary memory directory: ingest the 10 facts and consolidate (they
//! must stay 10 entries); then, for each row, on a copy of that directory,
//! ingest the new fact and consolidate. Scored from the files:
//! - false merges: initial facts sharing an entry with another initial
//!   fact (an entry holding k of them counts k − 1);
//! - facts lost: a fact whose words (≥ 60% of its content words) are in no
//!   entry and which is not pending either; the superseded fact is exempt
//!   after its update (history is scored apart);
//! - updates: the entry that holds the superseded fact now names
//!   `answer_after` (or most of what the new fact adds) and still names
//!   `answer_before` next to a word that marks it as past (`history`),
//!   names only `answer_after` (`current_only`), or not at all while
//!   another entry does (`beside`: the stale entry stays), or no entry
//!   names it (`lost`);
//! - others touched: entries of the other facts whose text changed;
//! - invented: entries the judge wrote that say what no fact of the set
//!   said (words or a number from nowhere, as [`faithful::invented`] counts
//!   them).

use std::collections::{BTreeMap, HashSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::archive::{self, NewFact};
use crate::config::{Config, MIN_SCORE};
use crate::consolidate::reply::faithful;
use crate::consolidate::{self, Options};
use crate::entries::{Document, Entry};
use crate::history::opens_at;
use crate::ids::FactId;
use crate::index::search::Hit;
use crate::progress::Progress;
use crate::request::{Search, Target};
use crate::state::State;
use crate::text::{content_word_list, content_words, coverage};
use crate::{Layout, Memory, layout, memory};

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Row {
    pub set: u64,
    pub facts: Vec<String>,
    pub new_fact: String,
    pub supersedes: Vec<usize>,
    #[serde(default)]
    pub question: String,
    #[serde(default)]
    pub answer_before: String,
    #[serde(default)]
    pub answer_after: String,
}

pub(crate) fn rows(dir: &Path) -> Result<Vec<Row>> {
    let path = dir.join("letta_updates_dev.jsonl");
    let mut out = Vec::new();
    for (i, line) in super::read(&path)?.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(
            serde_json::from_str(line)
                .with_context(|| format!("{} line {}", path.display(), i + 1))?,
        );
    }
    Ok(out)
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct Updates {
    pub history: usize,
    pub current_only: usize,
    pub beside: usize,
    /// The judge gave no usable reply: the new fact is still pending.
    pub pending: usize,
    pub lost: usize,
}

#[derive(Debug, Default, Clone, Serialize)]
pub struct LettaReport {
    pub judge: String,
    pub sets: Vec<u64>,
    pub facts: usize,
    /// Entries after the first consolidation of each set, summed.
    pub entries_after_ingest: usize,
    pub false_merges: usize,
    /// Facts no entry carries after a run that decided them: gone.
    pub facts_lost: usize,
    /// Facts still pending after the ingest (the judge gave no usable
    /// reply): not lost, not consolidated either; never counted as lost.
    pub ingest_failed: usize,
    pub update_rows: usize,
    pub updates: Updates,
    pub others_touched: usize,
    /// Update rows whose question, searched after the update, has a top
    /// hit that states the new fact as current (in the part before its
    /// history, [`statement`]).
    pub current_top: usize,
    /// Update rows whose question, searched after the update, finds
    /// `answer_before` in one of its 10 hits (as history or a fact): the
    /// past is still found.
    pub before_found: usize,
    /// Questions of other rows, about facts the update left alone, asked
    /// after it ([`OTHER_QUESTIONS`] at most per update)...
    pub others_asked: usize,
    /// ...whose top hit states the fact asked about.
    pub others_top: usize,
    /// Of the right top hits (`current_top` and `others_top`), those
    /// scoring under the default `[search] min_score`
    /// ([`crate::config::MIN_SCORE`]): what the default cutoff would hide.
    pub right_under_cutoff: usize,
    /// Entries written by the judge (after an ingest, or changed by an
    /// update) that say what no fact of the set says ([`faithful::invented`]).
    pub invented: usize,
    /// One line per update row: "set S row R: outcome[, N others touched]".
    pub outcomes: Vec<String>,
    pub llm_calls: usize,
    /// Judge replies that could not be used.
    pub invalid_replies: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_seconds: f64,
}

/// Most questions of other rows asked after each update.
const OTHER_QUESTIONS: usize = 3;

/// The day the set's facts are noted, and the day of each update.
const INGEST_DAY: &str = "2026-01-01";
const UPDATE_DAY: &str = "2026-02-01";

/// Words that say a value is a thing of the past.
const PAST: &[&str] = &[
    "previously",
    "formerly",
    "earlier",
    "before",
    "used to",
    "no longer",
    "was ",
    "were ",
    "had been",
    "prior",
    "originally",
    "until",
];

/// Words that open an entry's history after a comma, a semicolon, a dash
/// or a parenthesis: memd's own "new (previously: old)", and what judges
/// write ("now X; previously Y", "X, formerly Y").
const HISTORY_OPENERS: &[&str] = &["previously", "formerly", "before that", "until recently"];

/// The current statement of an entry's text: the text before its history
/// ("Works at Microsoft" of "Works at Microsoft (previously: Google)"),
/// or the whole text when it has none or starts with it. What the
/// evaluation reads as the answer a hit gives now.
///
/// A search ranks an entry by its whole text, not by this. Embedding this
/// alone was measured (`memd eval consolidation --sets 100 --updates 10
/// --declared`): a question in the words of the fact an update replaced
/// found the updated entry, with the new value, first for 505 of 536
/// updates when the entry is embedded whole, and for 462 embedded by its
/// current statement, because the history is what such a question
/// matches, and the entry that holds it says the new value first.
fn statement(text: &str) -> &str {
    if let Some(at) = opens_at(text) {
        return text[..at].trim_end();
    }
    let lower = text.to_lowercase();
    // Lowercasing can change byte offsets (a few non-ASCII letters); then
    // the text is taken whole rather than cut at a wrong place.
    if lower.len() != text.len() {
        return text;
    }
    let cut = lower
        .char_indices()
        .filter(|(_, c)| matches!(c, '(' | ';' | ',' | '—' | '['))
        .find(|&(i, c)| {
            let rest = lower[i + c.len_utf8()..].trim_start_matches([' ', ':']);
            HISTORY_OPENERS.iter().any(|o| rest.starts_with(o))
        })
        .map(|(i, _)| i);
    match cut.map(|i| text[..i].trim_end()) {
        Some(now) if !now.is_empty() => now,
        _ => text,
    }
}

/// Whether some entry still carries `fact`'s words.
fn carried(fact: &str, entries: &[Entry]) -> bool {
    entries.iter().any(|e| coverage(fact, &e.text) >= CARRIED)
}

/// Whether `hay` names `answer`: literally, or (free-form answers) by at
/// least 60% of its content words.
fn contains(hay: &str, answer: &str) -> bool {
    let answer = answer.trim().trim_end_matches('.');
    if answer.is_empty() {
        return false;
    }
    if hay.to_lowercase().contains(&answer.to_lowercase()) {
        return true;
    }
    !content_words(answer).is_empty() && coverage(answer, hay) >= CARRIED
}

/// Whether `text` has [`CARRIED`] of the content words `new_fact` adds to
/// `old_fact` (the new value: never the words both share, which the stale
/// entry has too).
fn says_new(text: &str, new_fact: &str, old_fact: &str) -> bool {
    let old = content_words(old_fact);
    let added: Vec<String> = content_words(new_fact)
        .into_iter()
        .filter(|w| !old.contains(w))
        .collect();
    if added.is_empty() {
        return says_in_its_order(text, new_fact, old_fact);
    }
    let have = content_words(text);
    let kept = added.iter().filter(|w| have.contains(*w)).count();
    kept as f32 >= CARRIED * added.len() as f32
}

/// Whether `text` states `new_fact`, which adds no word to `old_fact`
/// (roles swapped, "A cites B" then "B cites A", or a part of it kept,
/// "X specializes in A, while Y has a background in B" then "X specializes
/// in B"): what it states has the new fact's content words in the new
/// fact's order, which the old fact's are not.
fn says_in_its_order(text: &str, new_fact: &str, old_fact: &str) -> bool {
    let new = content_word_list(new_fact);
    !new.is_empty()
        && new != content_word_list(old_fact)
        && content_word_list(statement(text)) == new
}

/// Share of a text's content words another must have to still say it.
const CARRIED: f32 = 0.6;

fn holder<'a>(entries: &'a [Entry], fact_id: &str) -> Option<&'a Entry> {
    entries.iter().find(|e| {
        e.meta
            .as_ref()
            .is_some_and(|m| m.sources.iter().any(|s| s == fact_id))
    })
}

fn entries_of(layout: &Layout) -> Result<Vec<Entry>> {
    Ok(Document::read(&layout.entries_file())?
        .entries()
        .cloned()
        .collect())
}

/// A small deterministic generator, so `--seed` picks the same sets.
fn pick(mut all: Vec<u64>, n: usize, seed: u64) -> Vec<u64> {
    let mut x = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407)
        | 1;
    for i in (1..all.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        all.swap(i, (x % (i as u64 + 1)) as usize);
    }
    all.truncate(n);
    all.sort();
    all
}

/// Search for `row`'s question after its update and score the top hit by
/// what it states as current ([`statement`]): the new
/// fact (what it adds to the fact it supersedes, or its words), the
/// superseded fact (stale), or something else; and whether the old answer
/// is still among the 10 hits. Names are no test of which: a Letta update
/// often names both people ("Bryen is fluent in Spanish, while Austen only
/// speaks English").
async fn searched(target: &Target, row: &Row, report: &mut LettaReport) -> Result<&'static str> {
    if row.question.trim().is_empty() {
        return Ok("no question");
    }
    let hits = top_ten(target, &row.question).await?;
    if hits.iter().any(|h| contains(&h.text, &row.answer_before)) {
        report.before_found += 1;
    }
    let now = hits.first().map_or("", |h| statement(&h.text));
    let old: Vec<&str> = row
        .supersedes
        .iter()
        .filter_map(|&s| row.facts.get(s).map(String::as_str))
        .collect();
    // What the update adds, never the words it shares with the fact it
    // supersedes (the stale entry has those too).
    let says_new = match old.is_empty() {
        true => coverage(&row.new_fact, now) >= CARRIED,
        false => old.iter().any(|o| says_new(now, &row.new_fact, o)),
    };
    let says_old = old.iter().any(|o| coverage(o, now) >= CARRIED);
    if !says_new {
        missed("update", (&row.question, &row.new_fact), &hits);
    }
    Ok(match (says_new, says_old) {
        (true, _) => {
            report.current_top += 1;
            report.right_under_cutoff += under_cutoff(&hits);
            "top hit current"
        }
        (false, true) => "top hit stale",
        (false, false) => "top hit other",
    })
}

/// Logs (at debug level, `MEMD_LOG=memd::eval=debug`) a question whose
/// fact was not the top hit: which question (an update's or another
/// fact's), its text, the fact it wanted, and the first two hits, to read
/// an evaluation by.
fn missed(of: &str, (question, wanted): (&str, &str), hits: &[Hit]) {
    let hit = |i: usize| hits.get(i).map_or("", |h| h.text.as_str());
    let (first, second) = (hit(0), hit(1));
    tracing::debug!(of, question, wanted, first, second, "fact not on top");
}

/// 1 when the top hit scores under the default cutoff, else 0.
fn under_cutoff(hits: &[Hit]) -> usize {
    usize::from(hits.first().is_some_and(|h| h.score < MIN_SCORE))
}

/// The 10 best hits for `question`, however little they match.
async fn top_ten(target: &Target, question: &str) -> Result<Vec<Hit>> {
    let search = Search {
        query: Some(question.to_string()),
        k: Some(10),
        min_score: Some(0.0),
        ..Default::default()
    };
    Ok(target.run(search).await?.hits())
}

fn add_usage(report: &mut LettaReport, r: &consolidate::Report) {
    report.llm_calls += r.llm_calls;
    report.invalid_replies += r.invalid_replies;
    report.prompt_tokens += r.prompt_tokens;
    report.completion_tokens += r.completion_tokens;
}

/// Which rows an evaluation takes, and how their updates are said.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// How many fact sets, chosen by `seed`.
    pub sets: usize,
    /// Most update rows per set.
    pub updates: usize,
    pub seed: u64,
    /// Each update is added as an agent that knows it is one would add it:
    /// `supersedes` the entries holding the facts it replaces.
    pub declared: bool,
}

impl Sample {
    /// `sets` sets chosen by `seed`, at most `updates` rows each, the
    /// updates not declared.
    pub fn of(sets: usize, updates: usize, seed: u64) -> Sample {
        Sample {
            sets,
            updates,
            seed,
            declared: false,
        }
    }
}

/// Run the evaluation on the rows `sample` takes, with `config`'s judge
/// and embedder. Promotion
/// is off: it is not what is measured, and it would cost an LLM call per
/// run. The memory directories are temporary unless `keep` names a
/// directory to leave them in (`set-S/base`, `set-S/update-R`), so a
/// surprising score can be read in the files and the journal.
pub async fn run(
    data: &Path,
    mut config: Config,
    sample: Sample,
    keep: Option<&Path>,
) -> Result<LettaReport> {
    let Sample {
        sets,
        updates: max_updates,
        seed,
        declared,
    } = sample;
    let started = Instant::now();
    config.promotion.max_lines = 0;
    let mut by_set: BTreeMap<u64, Vec<Row>> = BTreeMap::new();
    for r in rows(data)? {
        by_set.entry(r.set).or_default().push(r);
    }
    let chosen = pick(by_set.keys().copied().collect(), sets, seed);
    let mut report = LettaReport {
        judge: consolidate::Judge::label(&config),
        sets: chosen.clone(),
        ..Default::default()
    };
    let mut progress = Progress::steps("sets evaluated", chosen.len() as u64);
    for set in chosen {
        let rows = &by_set[&set];
        let tmp = tempfile::tempdir()?;
        let root = match keep {
            Some(k) => {
                let root = k.join(format!("set-{set}"));
                anyhow::ensure!(
                    !root.exists(),
                    "{} exists already; --keep needs a fresh directory",
                    root.display()
                );
                root
            }
            None => tmp.path().to_path_buf(),
        };
        let set_run = SetRun::ingest(&root, rows, &config, &mut report).await?;
        tracing::info!(set, entries = set_run.before.len(), "set ingested");
        for (n, row) in rows.iter().take(max_updates).enumerate() {
            let (outcome, touched, top) = set_run
                .update((n, row, declared), &config, &mut report)
                .await?;
            let line = match touched {
                0 => format!("set {set} row {n}: {outcome}; {top}"),
                t => format!("set {set} row {n}: {outcome}, {t} others touched; {top}"),
            };
            tracing::info!("{line}");
            report.outcomes.push(line);
        }
        progress.inc(1);
    }
    report.wall_seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

const FORCE: Options = Options {
    force: true,
    dry_run: false,
};

/// One fact set, ingested: the base directory every update row copies.
struct SetRun {
    root: std::path::PathBuf,
    base: Layout,
    facts: Vec<String>,
    /// The archive ids of `facts`, in order.
    ids: Vec<FactId>,
    /// The entries after the ingest.
    before: Vec<Entry>,
    /// Everything the judge was shown across the set (facts, new facts,
    /// days): what an entry may say without inventing.
    said: Vec<String>,
    /// Facts (by index) still pending after the ingest: not scored again.
    pending: HashSet<usize>,
    /// The set's rows: their questions, each about the facts it supersedes.
    rows: Vec<Row>,
}

impl SetRun {
    /// Ingest the set's facts into `root/base`, consolidate, and score the
    /// ingest: false merges, facts lost, invented entries.
    async fn ingest(
        root: &Path,
        rows: &[Row],
        config: &Config,
        report: &mut LettaReport,
    ) -> Result<SetRun> {
        let facts = rows[0].facts.clone();
        let base = memory::init(&root.join("base"))?;
        let new: Vec<NewFact> = facts
            .iter()
            .map(|t| NewFact {
                text: t.clone(),
                ..Default::default()
            })
            .collect();
        let ids: Vec<FactId> = archive::append(&base, INGEST_DAY, "09:00:00", &new)?
            .into_iter()
            .map(|a| a.id)
            .collect();
        let r = Target::local(Memory::new(base.clone(), config.clone()))
            .run(FORCE)
            .await?;
        add_usage(report, &r);
        let before = entries_of(&base)?;
        report.facts += facts.len();
        report.entries_after_ingest += before.len();
        report.false_merges += before
            .iter()
            .map(|e| {
                let m = e.meta.as_ref().map(|m| &m.sources);
                let n = ids
                    .iter()
                    .filter(|id| m.is_some_and(|s| s.contains(*id)))
                    .count();
                n.saturating_sub(1)
            })
            .sum::<usize>();
        // A fact no entry holds is lost only if the run decided it; one
        // the judge could not decide is still pending.
        let state = State::load(&base.state_file())?;
        let pending: HashSet<usize> = (0..facts.len())
            .filter(|&i| {
                holder(&before, &ids[i]).is_none() && !state.watermark.done.contains(&ids[i])
            })
            .collect();
        report.ingest_failed += pending.len();
        report.facts_lost += (0..facts.len())
            .filter(|i| !pending.contains(i) && !carried(&facts[*i], &before))
            .count();
        let mut said: Vec<String> = facts.clone();
        said.extend(rows.iter().map(|r| r.new_fact.clone()));
        said.extend([INGEST_DAY.to_string(), UPDATE_DAY.to_string()]);
        let run = SetRun {
            root: root.to_path_buf(),
            base,
            facts,
            ids,
            before,
            said,
            pending,
            rows: rows.to_vec(),
        };
        report.invented += run.before.iter().filter(|e| run.invents(e)).count();
        Ok(run)
    }

    /// The other way current first can be wrong: after `row`'s update,
    /// the questions of up to [`OTHER_QUESTIONS`] other rows whose facts
    /// the update left as they were still find those facts first (a newer
    /// text raised above an older one it does not replace is a wrong
    /// answer to a question about the older).
    async fn others_searched(
        &self,
        target: &Target,
        row: &Row,
        report: &mut LettaReport,
    ) -> Result<()> {
        let untouched = self.rows.iter().filter(|o| {
            !o.question.trim().is_empty()
                && o.new_fact != row.new_fact
                && !o.supersedes.iter().any(|s| row.supersedes.contains(s))
                && o.supersedes.iter().all(|s| !self.pending.contains(s))
        });
        let mut asked: HashSet<&str> = HashSet::new();
        for other in untouched {
            if asked.len() == OTHER_QUESTIONS || !asked.insert(&other.question) {
                continue;
            }
            let hits = top_ten(target, &other.question).await?;
            let now = hits.first().map_or("", |h| statement(&h.text));
            report.others_asked += 1;
            let own = other.supersedes.iter().filter_map(|&s| self.facts.get(s));
            match own.clone().find(|f| coverage(f, now) >= CARRIED) {
                Some(_) => {
                    report.others_top += 1;
                    report.right_under_cutoff += under_cutoff(&hits);
                }
                None => {
                    let wanted = own.map(String::as_str).collect::<Vec<_>>().join(" | ");
                    missed("other", (&other.question, &wanted), &hits);
                }
            }
        }
        Ok(())
    }

    fn invents(&self, e: &Entry) -> bool {
        let said: Vec<&str> = self.said.iter().map(String::as_str).collect();
        !faithful::invented(&e.text, &said).is_empty()
    }

    /// Update row `n` on a copy of the base: add its new fact, consolidate,
    /// score. Returns the outcome and how many other entries it touched.
    async fn update(
        &self,
        (n, row, declared): (usize, &Row, bool),
        config: &Config,
        report: &mut LettaReport,
    ) -> Result<(&'static str, usize, &'static str)> {
        let dir = self.root.join(format!("update-{n}"));
        layout::copy_dir(&self.base.root, &dir)?;
        let layout = Layout::open(&dir)?;
        let supersedes = match declared {
            true => row
                .supersedes
                .iter()
                .filter_map(|&s| holder(&self.before, self.ids.get(s)?)?.id().cloned())
                .collect(),
            false => Vec::new(),
        };
        let fact = NewFact {
            text: row.new_fact.clone(),
            supersedes,
            ..Default::default()
        };
        let new_id = archive::append(&layout, UPDATE_DAY, "09:00:00", &[fact])?
            .remove(0)
            .id;
        let target = Target::local(Memory::new(layout.clone(), config.clone()));
        let r = target.run(FORCE).await?;
        add_usage(report, &r);
        let top = searched(&target, row, report).await?;
        self.others_searched(&target, row, report).await?;
        let after = entries_of(&layout)?;
        report.update_rows += 1;
        let done = State::load(&layout.state_file())?;
        let pending = holder(&after, &new_id).is_none() && !done.watermark.done.contains(&new_id);
        let outcome = self.outcome(row, &after, pending, report);
        let touched_before = report.others_touched;
        // The other facts: still carried, and their entries untouched.
        for (i, f) in self.facts.iter().enumerate() {
            if row.supersedes.contains(&i) || self.pending.contains(&i) {
                continue;
            }
            if !carried(f, &after) {
                report.facts_lost += 1;
            }
            let was = holder(&self.before, &self.ids[i]).map(|e| e.text.clone());
            let is = holder(&after, &self.ids[i]).map(|e| e.text.clone());
            if was != is {
                report.others_touched += 1;
            }
        }
        report.invented += after
            .iter()
            .filter(|e| !self.before.iter().any(|b| b.text == e.text) && self.invents(e))
            .count();
        Ok((outcome, report.others_touched - touched_before, top))
    }

    /// What became of an update: kept as history or current only in the
    /// superseded fact's entry, added beside it, still pending, or lost.
    fn outcome(
        &self,
        row: &Row,
        after: &[Entry],
        pending: bool,
        report: &mut LettaReport,
    ) -> &'static str {
        let superseded: HashSet<usize> = row.supersedes.iter().copied().collect();
        let (was, now) = (&row.answer_before, &row.answer_after);
        for &s in &superseded {
            let Some(id) = self.ids.get(s) else { continue };
            let text = holder(after, id)
                .map(|e| e.text.clone())
                .unwrap_or_default();
            let old = holder(&self.before, id)
                .map(|e| e.text.clone())
                .unwrap_or_default();
            // The entry says the new value: it names the answer, or it
            // has what the new fact says that the old one did not (an
            // answer written as a sentence of its own, "Greta Holm is
            // not recognized as a Michigan-based arts contributor", is
            // named by no entry, though the entry says the fact word for
            // word).
            let says_now = contains(&text, now)
                || says_new(
                    &text,
                    &row.new_fact,
                    row.facts.get(s).map_or("", String::as_str),
                );
            if text != old && says_now {
                let lower = text.to_lowercase();
                if contains(&text, was) && PAST.iter().any(|p| lower.contains(p)) {
                    report.updates.history += 1;
                    return "history";
                }
                report.updates.current_only += 1;
                return "current only";
            }
        }
        let outcome = unplaced(now, &row.new_fact, after, pending);
        match outcome {
            "pending" => report.updates.pending += 1,
            "beside" => report.updates.beside += 1,
            _ => {
                report.updates.lost += 1;
                report.facts_lost += 1;
            }
        }
        outcome
    }
}

/// What became of a new fact that updated no superseded entry: still
/// pending (the judge gave no usable reply), beside (an entry of its own,
/// or another entry names the new value), or lost. Pending first: another
/// entry that happens to name the new value ("Nadia Kovac is fluent in
/// multiple languages", for the answer "fluency in multiple languages")
/// does not place a fact no entry holds.
fn unplaced(now: &str, new_fact: &str, after: &[Entry], pending: bool) -> &'static str {
    if pending {
        "pending"
    } else if after.iter().any(|e| contains(&e.text, now)) || carried(new_fact, after) {
        "beside"
    } else {
        "lost"
    }
}

#[cfg(test)]
mod tests {
    use super::{says_new, statement, unplaced};
    use crate::entries::Entry;

    #[test]
    fn a_new_fact_still_pending_is_scored_pending_even_when_another_entry_names_its_value() {
        let fluent = Entry {
            meta: None,
            text: "Nadia Kovac is fluent in multiple languages.".into(),
        };
        let new = "Nadia Kovac has received recognition for her fluency in multiple languages.";
        let now = "fluency in multiple languages";
        assert_eq!(
            unplaced(now, new, std::slice::from_ref(&fluent), true),
            "pending"
        );
        assert_eq!(
            unplaced(now, new, std::slice::from_ref(&fluent), false),
            "beside"
        );
        assert_eq!(unplaced(now, new, &[], false), "lost");
    }

    #[test]
    fn an_entry_says_the_new_value_only_with_the_words_the_update_adds() {
        let (new, old) = (
            "Dan Park plays the violin in Vienna.",
            "Ann Lee plays the violin in Vienna.",
        );
        assert!(says_new(
            "Dan Park plays the violin in Vienna (previously: Ann Lee plays the violin in Vienna.)",
            new,
            old
        ));
        // The stale entry shares most of the new fact's words, not its value.
        assert!(!says_new(
            "Ann Lee plays the violin in Vienna every Sunday.",
            new,
            old
        ));
    }

    #[test]
    fn an_update_that_adds_no_word_is_said_only_in_its_own_order() {
        let (old, new) = (
            "Ines Maro has written a cookbook with a foreword by Paul Ekdahl.",
            "Paul Ekdahl has written a cookbook with a foreword by Ines Maro.",
        );
        assert!(says_new(new, new, old));
        assert!(!says_new(old, new, old), "the old roles are not the new");
        let (old, new) = (
            "Ines Maro specializes in soil chemistry, while Paul Ekdahl has a background in hydrology.",
            "Ines Maro specializes in hydrology.",
        );
        assert!(says_new(
            "Ines Maro specializes in hydrology (since 2026-02-01; previously: ...)",
            new,
            old
        ));
        assert!(!says_new(old, new, old));
    }

    #[test]
    fn the_current_statement_is_the_text_before_its_history() {
        let cases = [
            (
                "Works at Microsoft (previously: Google)",
                "Works at Microsoft",
            ),
            (
                "Now lives in Lisbon; previously Berlin",
                "Now lives in Lisbon",
            ),
            ("Lives in Lisbon, formerly in Berlin", "Lives in Lisbon"),
            (
                "Leads the team — before that: an engineer",
                "Leads the team",
            ),
            ("Lives in Lisbon", "Lives in Lisbon"),
            // A past that is the statement itself is not history.
            ("Previously lived in Berlin", "Previously lived in Berlin"),
            (
                "Used to live in Berlin, before moving",
                "Used to live in Berlin, before moving",
            ),
            ("(previously: Google)", "(previously: Google)"),
            ("Straße in Köln (previously: Bonn)", "Straße in Köln"),
        ];
        for (text, now) in cases {
            assert_eq!(statement(text), now, "{text}");
        }
    }
}
