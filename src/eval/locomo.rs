//! `memd eval locomo`: long conversations streamed session by session.
//!
//! For each LoCoMo conversation, every session's `observation` facts are
//! appended to the archive on the session's date, then the directory is
//! consolidated (with the configured judge). At the end: compression (facts
//! → entries) and evidence coverage: for each question of categories 1–4
//! whose evidence lies in the sessions ingested, is a row that carries an
//! evidence fact (the fact itself while pending, the entry that has it in
//! its `sources`, or that entry's MEMORY.md line) among the top 10 of
//! `memd search` for the question?

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::Value;

use crate::archive::{self, NewFact};
use crate::config::Config;
use crate::consolidate::{self, Options, promote};
use crate::core_md::CoreMd;
use crate::entries::Document;
use crate::ids::{EntryId, RowId};
use crate::index::{Index, Query};
use crate::memory::init;
use crate::progress::Progress;
use crate::request::Target;
use crate::{Layout, Memory};

#[derive(Debug, Default, Clone, Serialize)]
pub struct LocomoReport {
    pub judge: String,
    pub conversations: usize,
    pub sessions: usize,
    pub facts: usize,
    pub entries: usize,
    /// Facts per entry at the end.
    pub compression: f64,
    pub questions: usize,
    /// Questions whose evidence maps to no observation fact (not scored).
    pub questions_skipped: usize,
    pub found_at_10: usize,
    pub recall_at_10: f64,
    /// MEMORY.md after the last session: the questions whose evidence
    /// entry has a line there, nothing searched yet (a bulk import).
    pub core_covered: usize,
    /// The same after every other question was searched (logged, as an
    /// agent's recalls are) and MEMORY.md promoted again: of the questions
    /// not searched, those whose evidence entry has a line.
    pub core_covered_after_use: usize,
    /// The questions not searched before `core_covered_after_use`.
    pub core_held_out: usize,
    /// With `--min-scores`: the search cutoff at each score asked.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cutoffs: Vec<Cutoff>,
    pub llm_calls: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub wall_seconds: f64,
}

/// Search with hits scoring under `min_score` left out
/// ([`crate::request::Search::min_score`]): what is still found, and how
/// much comes back for questions about somebody else (the next
/// conversation's questions, asked of this one's memory: nothing there
/// answers them).
#[derive(Debug, Default, Clone, Serialize)]
pub struct Cutoff {
    pub min_score: f32,
    pub found_at_10: usize,
    pub recall_at_10: f64,
    /// Hits in the top 10 that carry a question's evidence (a fact, its
    /// entry or its line): what the cutoff must not drop.
    pub evidence_hits: usize,
    /// Hits per question, of at most 10.
    pub hits_per_question: f64,
    pub foreign_questions: usize,
    /// Hits per question about somebody else, of at most 10.
    pub hits_per_foreign_question: f64,
    /// Share of the questions about somebody else given no hit at all.
    pub foreign_answered_empty: f64,
    #[serde(skip)]
    hits: usize,
    #[serde(skip)]
    foreign_hits: usize,
    #[serde(skip)]
    foreign_empty: usize,
}

/// "2:14 pm on 8 May, 2023" → "2023-05-08".
fn day_of(s: &str) -> Option<String> {
    let date = s.split(" on ").nth(1)?.trim();
    chrono::NaiveDate::parse_from_str(date, "%d %B, %Y")
        .or_else(|_| chrono::NaiveDate::parse_from_str(date, "%e %B, %Y"))
        .ok()
        .map(|d| d.format("%Y-%m-%d").to_string())
}

/// The session number of a dialogue id `D3:12`.
fn session_of(dia: &str) -> Option<usize> {
    dia.strip_prefix('D')?.split(':').next()?.parse().ok()
}

pub async fn run(
    data: &Path,
    config: Config,
    conversations: usize,
    sessions: usize,
    min_scores: &[f32],
) -> Result<LocomoReport> {
    let started = Instant::now();
    let path = data.join("locomo_dev.json");
    let all: Vec<Value> = serde_json::from_str(&super::read(&path)?)
        .with_context(|| format!("{} is not the LoCoMo JSON", path.display()))?;
    let mut report = LocomoReport {
        judge: consolidate::Judge::label(&config),
        cutoffs: min_scores
            .iter()
            .map(|&min_score| Cutoff {
                min_score,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let chosen = all.len().min(conversations);
    let mut progress = Progress::steps("conversations evaluated", chosen as u64);
    for (i, conv) in all.iter().take(conversations).enumerate() {
        let tmp = tempfile::tempdir()?;
        let layout = init(tmp.path())?;
        // Dialogue id → the archive facts that cite it.
        let mut by_dia: HashMap<String, Vec<String>> = HashMap::new();
        let mut ingested = 0;
        for s in 1..=sessions {
            let Some(facts) = session_facts(conv, s, &layout, &mut by_dia)? else {
                break;
            };
            report.facts += facts;
            let force = Options {
                force: true,
                dry_run: false,
            };
            let r = Target::local(Memory::new(layout.clone(), config.clone()))
                .run(force)
                .await?;
            report.llm_calls += r.llm_calls;
            report.prompt_tokens += r.prompt_tokens;
            report.completion_tokens += r.completion_tokens;
            ingested = s;
            tracing::info!(conversation = %conv["sample_id"], session = s, "session consolidated");
        }
        report.sessions += ingested;
        progress.inc(1);
        let doc = Document::read(&layout.entries_file())?;
        report.entries += doc.entries().count();
        let index = Index::open(&Memory::new(layout.clone(), config.clone())).await?;
        index.writer.sync().await?;
        let asked = Questions {
            doc: &doc,
            by_dia: &by_dia,
            ingested,
        };
        asked.ask(conv, &index, &mut report).await?;
        let memory = Memory::new(layout.clone(), config.clone());
        asked.core(conv, (&memory, &index), &mut report).await?;
        let foreign = &all[(i + 1) % all.len()];
        cutoffs(&asked, (conv, foreign), &index, &mut report.cutoffs).await?;
        report.conversations += 1;
    }
    for c in &mut report.cutoffs {
        c.recall_at_10 = c.found_at_10 as f64 / report.questions.max(1) as f64;
        c.hits_per_question = c.hits as f64 / report.questions.max(1) as f64;
        c.hits_per_foreign_question = c.foreign_hits as f64 / c.foreign_questions.max(1) as f64;
        c.foreign_answered_empty = c.foreign_empty as f64 / c.foreign_questions.max(1) as f64;
    }
    report.compression = report.facts as f64 / report.entries.max(1) as f64;
    report.recall_at_10 = report.found_at_10 as f64 / report.questions.max(1) as f64;
    report.wall_seconds = started.elapsed().as_secs_f64();
    Ok(report)
}

/// Append session `s`'s observations as facts (category: the speaker) and
/// note which facts cite which dialogue ids; how many facts, or `None`
/// when the conversation has no such session.
fn session_facts(
    conv: &Value,
    s: usize,
    layout: &Layout,
    by_dia: &mut HashMap<String, Vec<String>>,
) -> Result<Option<usize>> {
    let Some(obs) = conv["observation"][format!("session_{s}_observation")].as_object() else {
        return Ok(None);
    };
    let day = conv["conversation"][format!("session_{s}_date_time")]
        .as_str()
        .and_then(day_of)
        .with_context(|| format!("session {s} has no readable date"))?;
    let mut facts = Vec::new();
    let mut cites = Vec::new();
    for (speaker, list) in obs {
        for item in list.as_array().into_iter().flatten() {
            let (Some(text), Some(dia)) = (item[0].as_str(), item[1].as_str()) else {
                continue;
            };
            let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if text.is_empty() {
                continue;
            }
            facts.push(NewFact {
                text,
                session: Some(format!("s{s}")),
                category: Some(speaker.clone()),
                ..Default::default()
            });
            cites.push(dia.to_string());
        }
    }
    let appended = archive::append(layout, &day, "12:00:00", &facts)?;
    for (a, dia) in appended.into_iter().zip(cites) {
        for d in dia.split([',', ';', ' ']).filter(|d| !d.is_empty()) {
            by_dia
                .entry(d.to_string())
                .or_default()
                .push(a.id.to_string());
        }
    }
    Ok(Some(facts.len()))
}

/// Each cutoff of `cuts` on `conv`'s questions (as [`Questions::ask`]
/// scores them) and on `foreign`'s, asked of `conv`'s memory.
async fn cutoffs(
    asked: &Questions<'_>,
    (conv, foreign): (&Value, &Value),
    index: &Index,
    cuts: &mut [Cutoff],
) -> Result<()> {
    if cuts.is_empty() {
        return Ok(());
    }
    for qa in conv["qa"].as_array().into_iter().flatten() {
        let Some(rows) = asked.rows(qa) else { continue };
        let q = qa["question"].as_str().unwrap_or_default();
        for c in cuts.iter_mut() {
            let hits = index
                .reader
                .search(&Query::new(q, 10).above(c.min_score))
                .await?;
            c.hits += hits.len();
            let evidence = hits.iter().filter(|h| rows.contains(h.id.as_str())).count();
            c.evidence_hits += evidence;
            c.found_at_10 += usize::from(evidence > 0);
        }
    }
    let questions = foreign["qa"].as_array().into_iter().flatten();
    for qa in questions.filter(|qa| (1..=4).contains(&qa["category"].as_u64().unwrap_or(0))) {
        let q = qa["question"].as_str().unwrap_or_default();
        for c in cuts.iter_mut() {
            let hits = index
                .reader
                .search(&Query::new(q, 10).above(c.min_score))
                .await?;
            c.foreign_questions += 1;
            c.foreign_hits += hits.len();
            c.foreign_empty += usize::from(hits.is_empty());
        }
    }
    Ok(())
}

/// What scoring a conversation's questions needs.
struct Questions<'a> {
    doc: &'a Document,
    by_dia: &'a HashMap<String, Vec<String>>,
    /// Sessions ingested: questions about later ones are not asked.
    ingested: usize,
}

impl Questions<'_> {
    /// Ask each question of categories 1–4 whose evidence was ingested; a
    /// hit is any of the evidence facts, their entries or core lines in the
    /// top 10.
    async fn ask(&self, conv: &Value, index: &Index, report: &mut LocomoReport) -> Result<()> {
        let holder = self.holders();
        for qa in conv["qa"].as_array().into_iter().flatten() {
            let Some(facts) = self.evidence(qa) else {
                continue;
            };
            if facts.is_empty() {
                report.questions_skipped += 1;
                continue;
            }
            let rows = self.rows_of(&facts, &holder);
            report.questions += 1;
            let q = qa["question"].as_str().unwrap_or_default();
            let hits = index.reader.search(&Query::new(q, 10)).await?;
            match hits.iter().any(|h| rows.contains(h.id.as_str())) {
                true => report.found_at_10 += 1,
                false => tracing::debug!(question = q, "evidence not in the top 10"),
            }
        }
        Ok(())
    }

    /// MEMORY.md's coverage of the questions' evidence, before and after
    /// use ([`LocomoReport::core_covered`]).
    async fn core(
        &self,
        conv: &Value,
        (memory, index): (&Memory, &Index),
        report: &mut LocomoReport,
    ) -> Result<()> {
        let scored: Vec<(String, HashSet<String>)> = conv["qa"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|qa| Some((qa["question"].as_str()?.to_string(), self.rows(qa)?)))
            .collect();
        let covered = |rows: &HashSet<String>, core: &HashSet<String>| !rows.is_disjoint(core);
        let core = self.core_rows(memory)?;
        report.core_covered += scored.iter().filter(|(_, r)| covered(r, &core)).count();
        for (q, _) in scored.iter().step_by(2) {
            index.reader.search(&Query::new(q, 10).logged()).await?;
        }
        let embedder = memory.cached_embedder()?;
        promote::run(memory, self.doc, None, Some(&embedder)).await?;
        let core = self.core_rows(memory)?;
        for (_, rows) in scored.iter().skip(1).step_by(2) {
            report.core_held_out += 1;
            report.core_covered_after_use += usize::from(covered(rows, &core));
        }
        Ok(())
    }

    /// The entry ids MEMORY.md has a line for.
    fn core_rows(&self, memory: &Memory) -> Result<HashSet<String>> {
        let core = CoreMd::read(&memory.layout.memory_md())?;
        Ok(core
            .lines()
            .into_iter()
            .map(|l| l.entry_id.to_string())
            .collect())
    }

    /// The rows that answer a scored question (see [`Questions::ask`]);
    /// `None` for a question not scored.
    fn rows(&self, qa: &Value) -> Option<HashSet<String>> {
        let facts = self.evidence(qa).filter(|f| !f.is_empty())?;
        Some(self.rows_of(&facts, &self.holders()))
    }

    /// Fact id → the entry that holds it.
    fn holders(&self) -> HashMap<String, String> {
        self.doc
            .entries()
            .filter_map(|e| e.meta.as_ref())
            .flat_map(|m| m.sources.iter().map(|s| (s.to_string(), m.id.to_string())))
            .collect()
    }

    /// The evidence facts, their entries and those entries' core lines.
    fn rows_of(
        &self,
        facts: &HashSet<&String>,
        holder: &HashMap<String, String>,
    ) -> HashSet<String> {
        let mut rows: HashSet<String> = HashSet::new();
        for f in facts {
            rows.insert((*f).clone());
            if let Some(e) = holder.get(*f) {
                let entry = EntryId::stored(e);
                rows.insert(RowId::core(&entry).to_string());
                rows.insert(e.clone());
            }
        }
        rows
    }

    /// The archive facts a question's evidence cites; `None` when the
    /// question is not asked (another category, no evidence, or evidence
    /// from a session not ingested).
    fn evidence(&self, qa: &Value) -> Option<HashSet<&String>> {
        let category = qa["category"].as_u64().unwrap_or(0);
        if !(1..=4).contains(&category) {
            return None;
        }
        let evidence: Vec<&str> = qa["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let later = |d: &&str| session_of(d).is_none_or(|s| s > self.ingested);
        if evidence.is_empty() || evidence.iter().any(later) {
            return None;
        }
        Some(
            evidence
                .iter()
                .filter_map(|d| self.by_dia.get(*d))
                .flatten()
                .collect(),
        )
    }
}
