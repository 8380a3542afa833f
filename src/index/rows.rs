//! Files → rows: what the index should hold, as a pure function of the
//! markdown files, and all that `memd check` compares the table with.
//!
//! A pending archive fact is a row (behind the watermark a fact is
//! represented by the entry that holds it); each live entry of
//! `consolidated/memory.md` is a row; each generated line of `MEMORY.md` is
//! a row. Nothing a tombstone covers is a row.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::archive;
use crate::core_md::CoreMd;
use crate::entries::{Document, text_hash};
use crate::error::Result;
use crate::ids::{FactId, RowId};
use crate::layout::{Layout, Source};
use crate::state::State;
use crate::text::short_hash;
use crate::tombstones::Tombstones;

/// What a row of the index stands for (the `kind` column).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RowKind {
    /// A pending archive fact.
    Fact,
    /// An entry of `consolidated/memory.md`.
    Entry,
    /// A generated line of `MEMORY.md`.
    Core,
}

impl RowKind {
    pub fn as_str(self) -> &'static str {
        match self {
            RowKind::Fact => "fact",
            RowKind::Entry => "entry",
            RowKind::Core => "core",
        }
    }

    /// The kind a `kind` column value names.
    pub fn parse(s: &str) -> Option<RowKind> {
        [RowKind::Fact, RowKind::Entry, RowKind::Core]
            .into_iter()
            .find(|k| k.as_str() == s)
    }
}

impl std::fmt::Display for RowKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Whether a tombstone keeps this row out of search: a fact whose id or
/// text was forgotten, or an entry (or its `MEMORY.md` line) that a
/// tombstone names by id. An entry is never hidden for its text alone: a
/// live entry is what the user kept, whatever else was forgotten (see
/// [`crate::tombstones`]).
pub fn hidden(tombstones: &Tombstones, kind: RowKind, id: &RowId, text: &str) -> bool {
    match kind {
        RowKind::Fact => tombstones.covers(id.as_str(), text),
        RowKind::Entry => tombstones.names_entry(id.as_str()),
        RowKind::Core => id
            .core_entry()
            .is_some_and(|e| tombstones.names_entry(e.as_str())),
    }
}

/// One search result: a row of the index and its score.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Hit {
    pub id: RowId,
    pub kind: RowKind,
    pub text: String,
    /// How well the hit matches the query, 0 to 1: the better of its
    /// meaning (cosine similarity of its embedding and the query's,
    /// below 0 read as 0) and its words (its BM25 score over the sum of the
    /// idf of the query's words: 1 when it holds each of them once, at a
    /// usual length; more is read as 1). Hits are ordered by fusing the two
    /// rankings ([`Hit::rank`]), so a lower score can come first. For a
    /// similar entry, the cosine similarity.
    pub score: f32,
    /// What orders the hits (higher first): reciprocal rank fusion of the
    /// vector and word lists, with recency weighting. Not shown: its
    /// values mean nothing apart from the order they give.
    #[serde(skip)]
    pub rank: f32,
    pub source: Source,
    /// The fact's day, or the entry's last update (for a line of
    /// `MEMORY.md`, its entry's, as the line shows it).
    pub day: Option<String>,
}

/// One row of the index.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Row {
    pub id: RowId,
    pub kind: RowKind,
    /// The file the row comes from.
    pub source: Source,
    pub day: Option<String>,
    pub text: String,
    pub session: Option<String>,
    pub category: Option<String>,
}

impl Row {
    /// The row as a search shows it (score 0).
    pub(super) fn hit(&self) -> Hit {
        Hit {
            id: self.id.clone(),
            kind: self.kind,
            text: self.text.clone(),
            score: 0.0,
            rank: 0.0,
            source: self.source.clone(),
            day: self.day.clone(),
        }
    }

    /// What decides whether a row must be re-embedded and rewritten.
    pub(super) fn hash(&self) -> String {
        short_hash(
            &format!(
                "{}\u{0}{}\u{0}{}\u{0}{:?}\u{0}{:?}\u{0}{:?}",
                self.id, self.kind, self.text, self.day, self.session, self.category
            ),
            16,
        )
    }
}

/// Each row with its [`Row::hash`], computed once.
pub(super) fn with_hashes(rows: Vec<Row>) -> Vec<(Row, String)> {
    rows.into_iter()
        .map(|r| {
            let h = r.hash();
            (r, h)
        })
        .collect()
}

/// Per source file: its rows, each with its [`Row::hash`].
pub(crate) type RowsBySource = HashMap<Source, Vec<(Row, String)>>;

/// The rows every source file calls for.
pub(crate) fn expected(layout: &Layout) -> Result<RowsBySource> {
    let sources = crate::entries::sources(&layout.entries_file())?;
    Ok(desired_for(layout, None, &sources)?
        .into_iter()
        .map(|(s, r)| (s, with_hashes(r)))
        .collect())
}

/// The rows every source file should have: pending facts (behind the
/// watermark they are represented by their entries), entries, core lines;
/// never anything tombstoned. (Benchmarks build tables from it.)
#[cfg(feature = "lab")]
pub(crate) fn desired(layout: &Layout) -> Result<HashMap<Source, Vec<Row>>> {
    desired_for(
        layout,
        None,
        &crate::entries::sources(&layout.entries_file())?,
    )
}

/// [`desired`] for only the sources in `only` (all when `None`): a sync
/// after one append reads one day file, not the whole archive. `sources`
/// are the facts the entries hold.
pub(super) fn desired_for(
    layout: &Layout,
    only: Option<&HashSet<&Source>>,
    sources: &HashSet<FactId>,
) -> Result<HashMap<Source, Vec<Row>>> {
    let wanted = |source: &Source| only.is_none_or(|o| o.contains(source));
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let mut out = fact_rows(layout, &wanted, &tombstones, sources)?;
    let rows = match wanted(&Source::Entries) {
        true => entry_rows(&Document::read(&layout.entries_file())?, &tombstones),
        false => Vec::new(),
    };
    if !rows.is_empty() {
        out.insert(Source::Entries, rows);
    }
    if wanted(&Source::Core)
        && let Ok(md) = CoreMd::read(&layout.memory_md())
    {
        let rows: Vec<Row> = md
            .lines()
            .into_iter()
            .filter(|l| !tombstones.names_entry(l.entry_id.as_str()))
            .map(|l| Row {
                id: RowId::core(&l.entry_id),
                kind: RowKind::Core,
                source: Source::Core,
                day: l.date,
                text: l.text,
                session: None,
                category: None,
            })
            .collect();
        if !rows.is_empty() {
            out.insert(Source::Core, rows);
        }
    }
    Ok(out)
}

/// The pending facts of the wanted day files, by day file.
fn fact_rows(
    layout: &Layout,
    wanted: &dyn Fn(&Source) -> bool,
    tombstones: &Tombstones,
    sources: &HashSet<FactId>,
) -> Result<HashMap<Source, Vec<Row>>> {
    let state = State::load(&layout.state_file())?;
    let mut facts = Vec::new();
    for day in layout.archive_days()? {
        if wanted(&Source::Day(day.clone())) {
            facts.extend(archive::read_day(layout, &day)?.facts);
        }
    }
    // Consolidated facts are represented by their entries, so the entries'
    // sources count even when only a day file changed.
    let pending = crate::pending::Pending::with_sources(
        &state,
        tombstones,
        sources.iter().map(FactId::as_str),
    );
    let mut out: HashMap<Source, Vec<Row>> = HashMap::new();
    for f in facts {
        if !pending.is_pending(&f) {
            continue;
        }
        let source = Source::Day(f.day.clone());
        out.entry(source.clone()).or_default().push(Row {
            id: RowId::fact(&f.id),
            kind: RowKind::Fact,
            source,
            day: Some(f.day),
            text: f.text,
            session: f.session,
            category: f.category,
        });
    }
    Ok(out)
}

/// The rows of the entries: each non-empty, unforgotten entry once.
fn entry_rows(doc: &Document, tombstones: &Tombstones) -> Vec<Row> {
    let mut seen = HashSet::new();
    let mut rows = Vec::new();
    for e in doc.entries() {
        if e.text.trim().is_empty() || e.id().is_some_and(|id| tombstones.names_entry(id)) {
            continue;
        }
        // A hand-written block has no id until memd saves the file; it is
        // searchable meanwhile under a provisional id.
        let id = match e.id() {
            Some(id) => RowId::entry(id),
            None => RowId::hand(&text_hash(&e.text)),
        };
        if !seen.insert(id.clone()) {
            continue;
        }
        rows.push(Row {
            id,
            kind: RowKind::Entry,
            source: Source::Entries,
            day: e
                .meta
                .as_ref()
                .map(|m| m.updated.clone())
                .filter(|d| !d.is_empty()),
            text: e.text.clone(),
            session: None,
            category: None,
        });
    }
    rows
}
