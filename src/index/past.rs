//! Search as of a past time (`memd search --as-of`): the facts written by
//! then and the entries and MEMORY.md lines as they were then
//! ([`crate::versions`]), ranked as a search ranks the index's rows
//! ([`super::search`]: vectors and words fused, tombstones applied).
//!
//! The past is not in the index, which holds the files as they are; its
//! rows are built from the files and embedded (through the embedding
//! cache, so a text the index embedded costs a lookup), and searched in
//! memory. It scans every fact written by then: an occasional question
//! about the past, not the hot path. It is not a recall: promotion
//! counts only what searches of the present return. What was forgotten
//! since stays out (forgetting is permanent), as does what was erased.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, FixedOffset, NaiveDate, NaiveTime, TimeZone};

use super::reader::{Query, Reader};
use super::rows::{Row, core_row, entry_rows, fact_row};
use super::search::{Hit, Ranked};
use super::terms::Terms;
use crate::archive::{self, Fact};
use crate::core_md::Line;
use crate::entries::Document;
use crate::error::{Error, Result};
use crate::ids::{FactId, RowId};
use crate::tombstones::Tombstones;
use crate::versions::{self, Then};
use crate::{Layout, embed};

/// When fact `f` was written, as well as the archive says: its heading's
/// time on its day (memd starts a section at each second it appends in),
/// read in `at`'s offset; the start of its day without one.
fn written(f: &Fact, at: &DateTime<FixedOffset>) -> Option<DateTime<FixedOffset>> {
    let day = NaiveDate::parse_from_str(&f.day, "%Y-%m-%d").ok()?;
    let time = f
        .time
        .as_deref()
        .and_then(|t| {
            NaiveTime::parse_from_str(t, "%H:%M:%S")
                .or_else(|_| NaiveTime::parse_from_str(t, "%H:%M"))
                .ok()
        })
        .unwrap_or_default();
    at.offset()
        .from_local_datetime(&day.and_time(time))
        .earliest()
}

/// The rows a search as of `at` looks at; an error naming why when memd
/// cannot know the entries then.
pub(crate) fn rows_as_of(layout: &Layout, at: DateTime<FixedOffset>) -> Result<Vec<Row>> {
    let (memory, core) = versions::as_of(layout, at)?;
    let known = |then: Then| -> Result<Option<String>> {
        match then {
            Then::Known { text, .. } => Ok(text),
            Then::Unknowable {
                why,
                known_until,
                known_from,
            } => {
                let near: Vec<String> = [known_until, known_from].into_iter().flatten().collect();
                let hint = match near.is_empty() {
                    true => String::new(),
                    false => format!(" (memd knows it as of {})", near.join(" and as of ")),
                };
                Err(Error::Invalid(format!(
                    "cannot search as of {}: {why}{hint}",
                    versions::stamp(&at)
                )))
            }
        }
    };
    let doc = Document::parse(&known(memory)?.unwrap_or_default());
    // MEMORY.md's lines restate entries: when they are unknowable then,
    // the entries answer alone.
    let core = known(core).ok().flatten().unwrap_or_default();
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let held: HashSet<&FactId> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| &m.sources)
        .collect();
    let (facts, _) = archive::read_all(layout)?;
    let mut rows: Vec<Row> = facts
        .iter()
        .filter(|f| !held.contains(&f.id) && written(f, &at).is_some_and(|w| w <= at))
        .map(fact_row)
        .collect();
    rows.extend(entry_rows(&doc, &tombstones));
    rows.extend(core.lines().filter_map(Line::parse).map(core_row));
    Ok(rows)
}

impl Reader {
    /// The `k` best of `rows` for `query`, scoring its least score or
    /// more, ranked as the index's rows are ([`Reader::search`]).
    pub(super) async fn search_rows(&self, query: &Query<'_>, rows: &[Row]) -> Result<Vec<Hit>> {
        let (k, min_score) = (query.k, query.min_score);
        let query = query.text;
        let shared = self.shared();
        let texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
        let vectors = match texts.is_empty() {
            true => Vec::new(),
            false => shared.embedder.embed(&texts).await?,
        };
        let asked = super::reader::asked(query);
        let query = asked.about.as_str();
        let qv = self.query_vector(query).await?;
        let all: Vec<(Hit, Vec<f32>)> = rows.iter().map(Row::hit).zip(vectors).collect();
        let n = (k * 4).max(20);
        let cosines: Vec<f32> = all.iter().map(|(_, v)| embed::cosine(&qv, v)).collect();
        let wide = super::reader::pool(&asked.spans, n);
        let near = embed::top_k(&cosines, wide, usize::MAX);
        let near = Ranked {
            scores: near.iter().map(|&(_, s)| s).collect(),
            rows: near.iter().map(|&(i, _)| all[i].clone()).collect(),
        };
        let (vector, dated) = near.split_dated(&asked.spans, n);
        let by_id: HashMap<&RowId, &Vec<f32>> = all.iter().map(|(h, v)| (&h.id, v)).collect();
        let terms = Terms::loaded(all.clone(), None)?;
        let idf_sum = terms.idf_sum(query);
        let words = terms.top(query, n);
        let text = Ranked {
            scores: words.iter().map(|h| h.score).collect(),
            rows: words
                .into_iter()
                .map(|h| {
                    let v = by_id.get(&h.id).map_or_else(Vec::new, |v| (*v).clone());
                    (h, v)
                })
                .collect(),
        };
        let lets = |h: &Hit| h.score >= min_score;
        let now = self.current_scores([&vector, &text], &qv).await?;
        let lists = super::search::Lists {
            vector,
            text,
            dated,
        };
        self.finished(lists, (&qv, idf_sum, query), (&lets, &now), k)
    }
}
