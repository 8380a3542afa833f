//! Files → rows: what the index should hold, as a pure function of the
//! markdown files, and all that `memd check` compares the table with.
//!
//! A pending archive fact is a row (behind the watermark a fact is
//! represented by the entry that holds it); each live entry of
//! `consolidated/memory.md` is a row; each generated line of `MEMORY.md` is
//! a row. Nothing a tombstone covers is a row.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::archive::{self, ParsedDays};
use crate::core_md::{CoreMd, Line};
use crate::entries::{self, Document, text_hash};
use crate::error::Result;
use crate::ids::{FactId, RowId};
use crate::layout::{Layout, Source};
use crate::pending::{Journal, Pending};
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
    /// usual length; more is read as 1), or of what it states as current
    /// when it keeps history. Hits are ordered by fusing the two signals
    /// ([`Hit::rank`]); the score shown never rises down the list (a hit
    /// shows at most the score of the hit above it), so it reads as the
    /// order. For a similar entry, the cosine similarity.
    pub score: f32,
    /// What orders the hits (higher first): the sum of the vector and
    /// word scores ([`super::search::fuse`]), with recency weighting. Not
    /// shown: its values mean nothing apart from the order they give.
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
    /// A fact row of `text` said on 2026-01-01, for tests.
    #[cfg(test)]
    pub(super) fn fact(id: &str, text: &str) -> Row {
        Row {
            id: RowId::stored(id),
            kind: RowKind::Fact,
            source: Source::Day("2026-01-01".into()),
            day: Some("2026-01-01".into()),
            text: text.into(),
            session: None,
            category: None,
        }
    }

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

/// A row with its [`Row::hash`], computed once; shared, so that the
/// rows a writer keeps of a day file ([`DayRows`]) are handed to a sync
/// without copying them (copying 10,000 rows was 2.5–3.2 ms of the sync
/// after an append: `memd bench search-path --sizes 10000 --per-day
/// 20000`).
pub(crate) type Hashed = Arc<(Row, String)>;

/// Each row with its [`Row::hash`], computed once.
pub(super) fn with_hashes(rows: Vec<Row>) -> Vec<Hashed> {
    rows.into_iter()
        .map(|r| {
            let h = r.hash();
            Arc::new((r, h))
        })
        .collect()
}

/// Per source file: its rows, each with its [`Row::hash`].
pub(crate) type RowsBySource = HashMap<Source, Vec<Hashed>>;

/// The rows every source file calls for; the day files as `days` holds
/// them when given (parsed as a daemon's writer keeps them), else read.
pub(crate) fn expected(layout: &Layout, days: Option<&ParsedDays>) -> Result<RowsBySource> {
    let sources = entries::sources(&layout.entries_file())?;
    let from = match days {
        Some(days) => DaysFrom::Parsed(days),
        None => DaysFrom::Files,
    };
    Ok(desired_from(layout, None, &sources, from)?.0)
}

/// The rows the sources `only` call for, reading only their files.
pub(crate) fn expected_only(layout: &Layout, only: &HashSet<&Source>) -> Result<RowsBySource> {
    if only.is_empty() {
        return Ok(RowsBySource::new());
    }
    let sources = entries::sources(&layout.entries_file())?;
    Ok(desired_from(layout, Some(only), &sources, DaysFrom::Files)?.0)
}

/// Where [`desired_from`] takes the day files from.
enum DaysFrom<'a> {
    /// Read from disk.
    Files,
    /// Kept by a writer, read again from where they changed.
    Kept(&'a mut DayRows),
    /// Already parsed: every day file, in day order (`only` does
    /// not narrow them).
    Parsed(&'a ParsedDays),
}

/// The rows every source file should have: pending facts (behind the
/// watermark they are represented by their entries), entries, core lines;
/// never anything tombstoned. (Benchmarks build tables from it.)
#[cfg(feature = "lab")]
pub(crate) fn desired(layout: &Layout) -> Result<HashMap<Source, Vec<Row>>> {
    let sources = entries::sources(&layout.entries_file())?;
    Ok(desired_from(layout, None, &sources, DaysFrom::Files)?
        .0
        .into_iter()
        .map(|(s, rows)| {
            (
                s,
                rows.into_iter()
                    .map(|r| Arc::unwrap_or_clone(r).0)
                    .collect(),
            )
        })
        .collect())
}

/// The rows the sources `only` (all when `None`) call for, each with its
/// [`Row::hash`] (`sources`: the facts the entries hold): a sync after one
/// append reads one day file, not the whole archive. A day file's rows
/// are only those after what the last sync of it left, when that still
/// holds ([`Synced`]): such day files are the [`Tails`]. `days`: the day
/// files as a writer last read them.
pub(super) fn desired_since(
    layout: &Layout,
    only: Option<&HashSet<&Source>>,
    sources: &HashSet<FactId>,
    days: Option<&mut DayRows>,
) -> Result<(RowsBySource, Tails)> {
    let from = match days {
        Some(days) => DaysFrom::Kept(days),
        None => DaysFrom::Files,
    };
    desired_from(layout, only, sources, from)
}

/// [`desired_since`], the day files taken `from` where they are.
fn desired_from(
    layout: &Layout,
    only: Option<&HashSet<&Source>>,
    sources: &HashSet<FactId>,
    from: DaysFrom,
) -> Result<(RowsBySource, Tails)> {
    let wanted = |source: &Source| only.is_none_or(|o| o.contains(source));
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let day_names: Vec<String> = match (&from, only) {
        (DaysFrom::Parsed(days), _) => days.iter().map(|(day, _)| day.clone()).collect(),
        (_, Some(only)) => {
            let mut names: Vec<String> = only
                .iter()
                .filter_map(|s| match s {
                    Source::Day(d) => Some(d.clone()),
                    _ => None,
                })
                .collect();
            names.sort();
            names
        }
        (_, None) => layout.archive_days()?,
    };
    let (mut out, tails) = fact_rows(layout, &day_names, &tombstones, sources, from)?;
    let rows = match wanted(&Source::Entries) {
        true => entry_rows(&Document::read(&layout.entries_file())?, &tombstones),
        false => Vec::new(),
    };
    if !rows.is_empty() {
        out.insert(Source::Entries, with_hashes(rows));
    }
    if wanted(&Source::Core)
        && let Ok(md) = CoreMd::read(&layout.memory_md())
    {
        let rows: Vec<Row> = md
            .lines()
            .into_iter()
            .filter(|l| !tombstones.names_entry(l.entry_id.as_str()))
            .map(core_row)
            .collect();
        if !rows.is_empty() {
            out.insert(Source::Core, with_hashes(rows));
        }
    }
    Ok((out, tails))
}

/// Day files as a writer last read them, each with a row (and its hash)
/// for every fact, pending or not: a day file grown by appends is then
/// parsed and hashed only from its last list item on
/// ([`archive::Parsed`]). With 10,000 facts in one day file, the sync
/// after an append spent 44 ms parsing the file anew and 20 ms hashing
/// its rows (`memd bench search-path --per-day 20000`). Kept for the
/// [`KEEP_DAYS`] day files synced last, as they cost their text's size
/// about three times over in memory.
#[derive(Default)]
pub(super) struct DayRows {
    kept: Vec<Kept>,
    /// The part of the fingerprints every source shares, and the table's
    /// version, as the running sync starts ([`DayRows::starting`]).
    now: Option<(String, u64)>,
}

/// A day file as last read, and what the last sync of it left.
struct Kept {
    day: String,
    parsed: archive::Parsed,
    rows: FactRows,
    synced: Option<Synced>,
}

/// What a writer's sync of a day file left in the table: the pending rows
/// of its first `facts` facts, pending by the rule the fingerprints'
/// shared part `shared` names (the state, the tombstones, the entries'
/// sources), at table version `version`. While all three hold, those
/// rows are still in the table and still the rows those facts call for,
/// so the next sync of the day looks only at the facts after them.
struct Synced {
    facts: usize,
    shared: String,
    version: u64,
}

/// The day files whose rows [`desired_since`] gives only from a fact on
/// (what the last sync left still holding, [`Synced`]: every row before
/// it is in the table as it should be), each with the rows its facts from
/// there had when last read, which the table may hold.
pub(super) type Tails = HashMap<Source, Vec<Hashed>>;

/// A row, with its hash, for each fact of a day file, in its order.
type FactRows = Vec<Hashed>;

/// Where a day file's rows start to need a look ([`DayRows::read`]): the
/// first fact read anew, and the rows the facts from there had.
type Tail = (usize, Vec<Hashed>);

/// How many day files [`DayRows`] keeps: today's, and a few a clock near
/// midnight or a hand edit of another day touches in between.
const KEEP_DAYS: usize = 4;

impl DayRows {
    /// A sync starts from table version `version`, with the fingerprints'
    /// shared part `shared` ([`super::fingerprints::shared_part`]).
    pub(super) fn starting(&mut self, shared: &str, version: u64) {
        self.now = Some((shared.to_string(), version));
    }

    /// The parse of `day` and its facts' rows, reading only what was
    /// appended since it was kept (from its last list item on, which a
    /// continued line may have changed); and, when what the last sync of
    /// it left still holds ([`Synced`]) for every fact before that, the
    /// first fact read anew, with the rows the facts from there had.
    fn read(&mut self, layout: &Layout, day: &str) -> Result<(Kept, Option<Tail>)> {
        let at = self.kept.iter().position(|k| k.day == day);
        let (before, mut rows, synced) = match at.map(|i| self.kept.remove(i)) {
            Some(k) => (Some(k.parsed), k.rows, k.synced),
            None => (None, Vec::new(), None),
        };
        let (parsed, kept) = archive::read_day_after(layout, day, before)?;
        let replaced = rows.split_off(kept.min(rows.len()));
        rows.extend(with_hashes(
            parsed.day.facts[kept..].iter().map(fact_row).collect(),
        ));
        let now = self.now.as_ref();
        let holds = |s: &Synced| {
            now.is_some_and(|(shared, v)| *shared == s.shared && *v == s.version) && kept <= s.facts
        };
        let tail = synced
            .as_ref()
            .filter(|s| holds(s))
            .map(|_| (kept, replaced));
        let day = day.to_string();
        Ok((
            Kept {
                day,
                parsed,
                rows,
                synced,
            },
            tail,
        ))
    }

    fn keep(&mut self, kept: Kept) {
        self.kept.push(kept);
        if self.kept.len() > KEEP_DAYS {
            self.kept.remove(0);
        }
    }

    /// A sync started by [`DayRows::starting`] wrote the table, from
    /// version `before` to `after`: the day files in `days` hold the rows
    /// of every fact as last read, and what it did not touch is as it was.
    pub(super) fn synced(&mut self, days: &[&str], before: u64, after: u64) {
        let Some((shared, _)) = self.now.take() else {
            return;
        };
        self.same_rows(before, after);
        for k in self
            .kept
            .iter_mut()
            .filter(|k| days.contains(&k.day.as_str()))
        {
            k.synced = Some(Synced {
                facts: k.parsed.day.facts.len(),
                shared: shared.clone(),
                version: after,
            });
        }
    }

    /// The table went from `before` to `after` with the same rows.
    pub(super) fn same_rows(&mut self, before: u64, after: u64) {
        for k in &mut self.kept {
            if let Some(s) = k.synced.as_mut().filter(|s| s.version == before) {
                s.version = after;
            }
        }
    }
}

/// The row of a generated line of MEMORY.md.
pub(super) fn core_row(l: Line) -> Row {
    Row {
        id: RowId::core(&l.entry_id),
        kind: RowKind::Core,
        source: Source::Core,
        day: l.date,
        text: l.text,
        session: None,
        category: None,
    }
}

/// The row of an archive fact (when it is pending).
pub(super) fn fact_row(f: &archive::Fact) -> Row {
    let source = Source::Day(f.day.clone());
    Row {
        id: RowId::fact(&f.id),
        kind: RowKind::Fact,
        source,
        day: Some(f.day.clone()),
        text: f.text.clone(),
        session: f.session.clone(),
        category: f.category.clone(),
    }
}

/// The pending facts of the day files `days`, by day file.
fn fact_rows(
    layout: &Layout,
    day_names: &[String],
    tombstones: &Tombstones,
    sources: &HashSet<FactId>,
    mut from: DaysFrom,
) -> Result<(RowsBySource, Tails)> {
    let state = State::load(&layout.state_file())?;
    // Consolidated facts are represented by their entries, so the entries'
    // sources count even when only a day file changed.
    let pending = Pending::with_sources(
        &state,
        tombstones,
        sources.iter().map(FactId::as_str),
        Journal::of(layout),
    );
    let pending_rows = |facts: &[archive::Fact]| {
        let rows = facts.iter().filter(|f| pending.is_pending(f));
        with_hashes(rows.map(fact_row).collect())
    };
    let mut out = RowsBySource::new();
    let mut tails = Tails::new();
    for (i, day) in day_names.iter().enumerate() {
        let rows: Vec<Hashed> = match &mut from {
            DaysFrom::Kept(days) => {
                let (kept, tail) = days.read(layout, day)?;
                let from = match tail {
                    Some((from, replaced)) => {
                        tails.insert(Source::Day(day.clone()), replaced);
                        from
                    }
                    None => 0,
                };
                let pending_rows = kept.parsed.day.facts[from..]
                    .iter()
                    .zip(&kept.rows[from..])
                    .filter(|(f, _)| pending.is_pending(f))
                    .map(|(_, r)| r.clone())
                    .collect();
                days.keep(kept);
                pending_rows
            }
            DaysFrom::Parsed(days) => pending_rows(&days[i].1.facts),
            DaysFrom::Files => pending_rows(&archive::read_day(layout, day)?.facts),
        };
        if !rows.is_empty() {
            out.insert(Source::Day(day.clone()), rows);
        }
    }
    Ok((out, tails))
}

/// The rows of the entries: each non-empty, unforgotten entry once.
pub(super) fn entry_rows(doc: &Document, tombstones: &Tombstones) -> Vec<Row> {
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
