//! Promotion: which entries an agent sees in every prompt, written into the
//! generated part of `MEMORY.md` ([`crate::core_md`] owns the file).
//!
//! Candidates are ranked by code first: pinned entries, then recall (hits in
//! `.recall_log.jsonl`, recent ones weighing more) plus a smaller bonus for
//! recently updated entries. Current first: of two entries that speak of
//! the same thing (cosine at least [`SAME_TOPIC_COSINE`]), the one stated
//! later ranks above the older, however often the older was recalled, so a
//! superseded line never outranks its successor ([`current_first`]).
//! Without an LLM that ranking is the answer. With
//! one, the best candidates (three times the cap) go to
//! `prompts/promote.md`, which picks and shortens; lines that name no
//! candidate are dropped, pinned entries are always kept, and the list is
//! cut at `max_lines` by priority, never by position in the file.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::core_md::{self, Line};
use crate::embed::cache::Cached;
use crate::entries::Document;
use crate::error::{Result, bail};
use crate::ids::{EntryId, RowId};
use crate::llm::{self, Message};
use crate::recall::{self, Usage};
use crate::tombstones::Tombstones;
use crate::{Layout, Memory, current, embed, prompts};

/// Half-life of the recency bonus, in days.
const RECENCY_HALF_LIFE_DAYS: f64 = 30.0;

pub use crate::current::SAME_TOPIC_COSINE;

/// Longest line written for an entry (characters).
const MAX_LINE_CHARS: usize = 200;

pub struct Outcome {
    pub lines: usize,
    pub warnings: Vec<String>,
}

/// A promotion candidate.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub id: EntryId,
    pub text: String,
    pub pinned: bool,
    pub usage: Usage,
    pub score: f64,
    /// The entry's `updated` day: the date its line shows.
    pub updated: String,
}

/// One line of text for an entry: whitespace folded, cut at a word.
pub(crate) fn line_text(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= MAX_LINE_CHARS {
        return folded;
    }
    let cut: String = folded.chars().take(MAX_LINE_CHARS - 1).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > MAX_LINE_CHARS / 2 => cut[..i].to_string(),
        _ => cut,
    };
    format!("{cut}…")
}

/// Every entry, best first, as of `today`.
pub fn rank(
    doc: &Document,
    usage: &HashMap<RowId, Usage>,
    tombstones: &Tombstones,
    today: chrono::NaiveDate,
) -> Vec<Candidate> {
    let mut out: Vec<Candidate> = doc
        .entries()
        .filter(|e| {
            !e.text.trim().is_empty() && !e.id().is_some_and(|id| tombstones.names_entry(id))
        })
        .filter_map(|e| {
            let m = e.meta.as_ref()?;
            // A search hit on the MEMORY.md line, or on a fact the entry
            // holds (while it was pending), is a recall of the entry.
            let mut u = Usage::default();
            let rows = [RowId::entry(&m.id), RowId::core(&m.id)]
                .into_iter()
                .chain(m.sources.iter().map(RowId::fact));
            for row in rows {
                if let Some(used) = usage.get(&row) {
                    u.merge(used);
                }
            }
            let age = chrono::NaiveDate::parse_from_str(&m.updated, "%Y-%m-%d")
                .map(|d| (today - d).num_days().max(0) as f64)
                .unwrap_or(365.0);
            let recency = 0.5f64.powf(age / RECENCY_HALF_LIFE_DAYS);
            Some(Candidate {
                id: m.id.clone(),
                text: e.text.clone(),
                pinned: m.pinned,
                updated: m.updated.clone(),
                score: u.weight + 0.5 * recency,
                usage: u,
            })
        })
        .collect();
    sort(&mut out);
    out
}

/// Reorder `ranked` (best first, `vectors` aligned with it) so that of
/// two unpinned entries on the same thing, the one updated on a later day
/// ranks above the older ([`crate::current::raise_newer`]). Returns each
/// such pair as (older, newer) entry ids, and `vectors` in the new order.
pub fn current_first(
    ranked: &mut Vec<Candidate>,
    vectors: Vec<Vec<f32>>,
    max: usize,
) -> (Vec<(EntryId, EntryId)>, Vec<Vec<f32>>) {
    let compared = current::Compared {
        older: pool_size(max),
        newer: usize::MAX,
        match_ratio: 0.0,
        asked: None,
    };
    let pairs = current::raise_newer(ranked, &vectors, compared);
    let pairs = pairs
        .into_iter()
        .map(|(o, n)| (ranked[o].id.clone(), ranked[n].id.clone()))
        .collect();
    let mut both: Vec<(Candidate, Vec<f32>)> = ranked.drain(..).zip(vectors).collect();
    both.sort_by(|a, b| order(&a.0, &b.0));
    let (r, v): (Vec<Candidate>, Vec<Vec<f32>>) = both.into_iter().unzip();
    *ranked = r;
    (pairs, v)
}

/// How many of the best-ranked entries MEMORY.md's lines are chosen
/// from (and compared with every entry for a newer one on the same
/// thing): three times the lines, at least [`crate::current::PROMOTION_TOP`].
fn pool_size(max: usize) -> usize {
    current::PROMOTION_TOP.max(3 * max)
}

/// Weight of a line's greatest cosine with a line already chosen: thirty
/// lines on thirty things, not thirty on one. `memd eval locomo
/// --conversations 5 --sessions 40` (1,183 entries, none recalled: a bulk
/// import), questions whose evidence has a line in MEMORY.md, of 623: 86
/// at 0, **127 at 0.3**, 136 at 0.6, 130 at 1.0; after every other
/// question was searched, of the other 310: 30, 38, 39, 39. Evidence
/// recall@10 of search was 515 of 623 at 0, 516 at 0.3 and 511 at 0.6
/// (a MEMORY.md line is a row search finds, beside its entry), so 0.3.
/// Adding an entry's centrality (mean cosine with its 5 nearest) to its
/// score took 86 to 57 (what is most said is said in many near-copies),
/// and is not used.
pub(crate) const DIVERSITY_WEIGHT: f64 = 0.3;

/// The `max` lines the built-in ranking shows: pinned entries first, then
/// of the best [`pool_size`] by score and diversity (greedy,
/// each next line the best of what is left, less its likeness to the lines
/// chosen), shown in `ranked`'s order. An entry a newer one states anew
/// (`stale`: (older, newer)) is chosen only after that newer one, so
/// MEMORY.md never shows what was true without what is.
pub fn choose<'a>(
    ranked: &'a [Candidate],
    vectors: Option<&[Vec<f32>]>,
    stale: &[(EntryId, EntryId)],
    max: usize,
) -> Vec<&'a Candidate> {
    let pool = ranked.len().min(pool_size(max));
    let mut chosen: Vec<usize> = (0..pool).filter(|&i| ranked[i].pinned).take(max).collect();
    let newer_of = |i: usize| stale.iter().filter(move |(o, _)| *o == ranked[i].id);
    while chosen.len() < max.min(pool) {
        let likeness = |i: usize| -> f64 {
            let Some(v) = vectors else { return 0.0 };
            chosen
                .iter()
                .map(|&j| embed::cosine(&v[i], &v[j]) as f64)
                .fold(0.0, f64::max)
        };
        let ready = |i: usize| newer_of(i).all(|(_, n)| chosen.iter().any(|&j| ranked[j].id == *n));
        let value = |i: usize| ranked[i].score - DIVERSITY_WEIGHT * likeness(i);
        let next = (0..pool)
            .filter(|i| !chosen.contains(i) && ready(*i))
            .map(|i| (i, value(i)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        let Some((i, _)) = next else { break };
        chosen.push(i);
    }
    chosen.sort_unstable();
    chosen.into_iter().map(|i| &ranked[i]).collect()
}

impl current::Ranked for Candidate {
    fn day(&self) -> Option<&str> {
        Some(&self.updated)
    }
    fn text(&self) -> &str {
        &self.text
    }
    fn fixed(&self) -> bool {
        self.pinned
    }
    fn score(&self) -> f64 {
        self.score
    }
    fn set_above(&mut self, score: f64) {
        self.score = score.next_up();
    }
}

fn sort(ranked: &mut [Candidate]) {
    ranked.sort_by(order);
}

fn order(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.pinned
        .cmp(&a.pinned)
        .then(b.score.total_cmp(&a.score))
        .then(a.id.cmp(&b.id))
}

fn built_in(chosen: &[&Candidate]) -> Vec<Line> {
    chosen
        .iter()
        .map(|c| Line {
            entry_id: c.id.clone(),
            text: line_text(&c.text),
            date: Some(c.updated.clone()),
        })
        .collect()
}

/// Rewrite the generated part of `MEMORY.md`, as of `memory`'s clock.
/// `doc` is the entries file as the run wrote it (read once per run).
/// With an embedder, the order is current first ([`current_first`]).
pub async fn run(
    memory: &Memory,
    doc: &Document,
    llm: Option<&llm::Client>,
    embedder: Option<&Cached>,
) -> Result<Outcome> {
    let layout = &memory.layout;
    let now = memory.clock.now();
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let usage = recall::summary(&layout.recall_log(), now)?;
    let mut ranked = rank(doc, &usage, &tombstones, now.date_naive());
    let mut warnings = Vec::new();
    let max = memory.config.promotion.max_lines as usize;
    let (mut stale, mut vectors) = (Vec::new(), None);
    if let Some(embedder) = embedder {
        let texts: Vec<String> = ranked.iter().map(|c| c.text.clone()).collect();
        match embedder.embed(&texts).await {
            Ok(v) => {
                let (pairs, v) = current_first(&mut ranked, v, max);
                (stale, vectors) = (pairs, Some(v));
            }
            Err(e) => warnings.push(format!(
                "entries could not be embedded for MEMORY.md's current-first order ({e:#}): ranked by recall and recency only"
            )),
        }
    }
    let built = || built_in(&choose(&ranked, vectors.as_deref(), &stale, max));
    let lines = match llm {
        None => built(),
        Some(_) if max == 0 => Vec::new(),
        Some(client) => match by_llm(layout, client, &ranked, max).await {
            Ok(lines) => lines,
            Err(e) => {
                warnings.push(format!(
                    "promotion by the LLM failed ({e:#}); ranked by recall and recency instead"
                ));
                built()
            }
        },
    };
    core_md::write_lines(&layout.memory_md(), &lines)?;
    Ok(Outcome {
        lines: lines.len(),
        warnings,
    })
}

async fn by_llm(
    layout: &Layout,
    client: &llm::Client,
    ranked: &[Candidate],
    max: usize,
) -> Result<Vec<Line>> {
    let shown = &ranked[..ranked.len().min((3 * max).max(30))];
    if shown.is_empty() {
        return Ok(Vec::new());
    }
    let template = prompts::load(layout, prompts::PROMOTE)?;
    let prompt = prompts::render(
        &template,
        &[
            ("entries", &prompt_list(shown)),
            ("max_lines", &max.to_string()),
        ],
    );
    let (reply, _) = client.chat(&[Message::user(prompt)]).await?;
    let chosen = chosen_lines(&llm::extract_json(&reply)?, shown)?;
    // Pinned entries first, whether the model chose them or not.
    let mut lines: Vec<Line> = Vec::new();
    for (i, c) in shown.iter().enumerate().filter(|(_, c)| c.pinned) {
        let text = chosen
            .iter()
            .find(|(j, _)| *j == i)
            .map(|(_, t)| t.clone())
            .unwrap_or_else(|| line_text(&c.text));
        lines.push(Line {
            entry_id: c.id.clone(),
            text,
            date: Some(c.updated.clone()),
        });
    }
    for (i, text) in chosen {
        if !shown[i].pinned {
            lines.push(Line {
                entry_id: shown[i].id.clone(),
                text,
                date: Some(shown[i].updated.clone()),
            });
        }
    }
    lines.truncate(max);
    Ok(lines)
}

/// A promotion line may shorten its entry but say nothing else: a line
/// with words or numbers its entry lacks, or the opposite polarity (an
/// instruction to the agent, say), is replaced by the entry's own text.
fn says_only_its_entry(line: String, entry: &str) -> String {
    use super::reply::faithful::{invented, negated};
    if invented(&line, &[entry]).is_empty() && negated(&line) == negated(entry) {
        return line;
    }
    tracing::warn!(line = %line, "a promotion line said what its entry does not; the entry's text is used");
    line_text(entry)
}

/// The candidates as the promotion prompt lists them (`E1`, `E2`, …).
fn prompt_list(shown: &[Candidate]) -> String {
    let mut list = String::new();
    for (i, c) in shown.iter().enumerate() {
        let last = if c.usage.last.is_empty() {
            "never".to_string()
        } else {
            c.usage.last.chars().take(10).collect()
        };
        list.push_str(&format!(
            "E{}{} [recalled {} times, last {last}, {} distinct queries]: {}\n",
            i + 1,
            if c.pinned { " (pinned)" } else { "" },
            c.usage.count,
            c.usage.distinct_queries,
            c.text.replace('\n', " ")
        ));
    }
    list
}

/// The (candidate, line) pairs a reply chooses, each candidate once, in
/// the reply's order; lines naming no candidate are dropped.
fn chosen_lines(reply: &Value, shown: &[Candidate]) -> Result<Vec<(usize, String)>> {
    let items = match reply {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("lines") {
            Some(Value::Array(a)) => a,
            _ => bail!("the reply has no \"lines\" array"),
        },
        _ => bail!("the reply has no \"lines\" array"),
    };
    let by_alias: HashMap<String, usize> = shown
        .iter()
        .enumerate()
        .flat_map(|(i, c)| [(format!("E{}", i + 1), i), (c.id.to_uppercase(), i)])
        .collect();
    let mut chosen: Vec<(usize, String)> = Vec::new();
    let mut seen = HashSet::new();
    for item in items {
        let id = item.get("id").and_then(Value::as_str).unwrap_or("");
        let text = item
            .get("line")
            .or_else(|| item.get("text"))
            .and_then(Value::as_str)
            .map(line_text)
            .unwrap_or_default();
        let Some(&i) = by_alias.get(&id.trim().to_uppercase()) else {
            tracing::info!(id, "promotion line names no candidate entry: dropped");
            continue;
        };
        if text.is_empty() || !seen.insert(i) {
            continue;
        }
        chosen.push((i, says_only_its_entry(text, &shown[i].text)));
    }
    if chosen.is_empty() {
        bail!("the reply names none of the entries");
    }
    Ok(chosen)
}
