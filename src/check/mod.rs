//! `memd check`: memd's invariants, verified from the files, the way
//! `git fsck` and SQLite's `integrity_check` verify theirs. It only reads;
//! `--fix` (the command line's) rebuilds only what is derived, the index.
//!
//! A **problem** breaks a promise and makes `memd check` fail:
//! - an archive fact that is neither pending, nor in exactly one entry's
//!   `sources`, nor covered by a tombstone (a run decided it, but no entry
//!   holds it: hidden), or that two entries claim;
//! - two entries with one id; entry metadata that cannot be read;
//! - MEMORY.md without exactly one pair of markers, or a generated line
//!   that names no live entry;
//! - a line of the journal, the tombstones or the recall log that is not
//!   JSON, or a state file that is not;
//! - index rows that differ from the rows the files call for, in a file the
//!   index has synced: duplicates, stale or missing rows, and anything a
//!   tombstone covers; a words file of the table's version that holds
//!   other words than the table's rows.
//!
//! A process whose index is open (a daemon) keeps what each check found
//! and looks again only at what changed since (each day file's facts by
//! the file's fingerprint, [`memo`]; the index's rows per source and per
//! table fragment, [`crate::index::rows_check`]; the words file by its
//! stamp): the same findings, at a cost that follows what changed. A
//! `deep` check, and any check in a process with nothing kept, looks at
//! everything.
//!
//! A **note** is worth knowing and breaks nothing: an entry edited by hand
//! (its text no longer matches its metadata hash: hand edits are part of
//! memd's design), a block waiting for metadata, a source naming a fact the
//! archive no longer has, archive lines read with warnings, index rows of
//! files changed since the last sync, a damaged words file (searches
//! ignore it).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;

use crate::archive::{self, ParsedDays};
use crate::core_md::CoreMd;
use crate::entries::{Document, text_hash};
use crate::error::Result;
use crate::ids::{EntryId, FactId, RowId};
use crate::index::fingerprints::{self, Freshness};
use crate::index::rows::{self, RowsBySource};
use crate::index::table;
use crate::index::{self, Index, RowKind, rows_check};
use crate::layout::{Source, rel};
use crate::remedy::Remedy;
use crate::review::Line;
use crate::state::State;
use crate::tombstones::Tombstones;
use crate::versions::{self, History};
use crate::{Layout, entry_view, erase, journal, jsonl, recall, sync, usage};

mod finding;
mod kept;
mod kind;
pub mod memo;
mod review;

pub use self::finding::Finding;
pub use self::kind::Kind;

/// What `memd check` found.
#[derive(Debug, Default, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[schemars(rename = "CheckReport")]
pub struct Report {
    pub problems: Vec<Finding>,
    pub notes: Vec<Finding>,
    pub facts: usize,
    pub entries: usize,
    /// Rows in the index (`None`: no index yet).
    pub index_rows: Option<usize>,
    /// Whether some problem is the index's alone (`--fix` can repair it).
    pub index_fixable: bool,
    /// Whether `--fix` rebuilt the index from the files before this check.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub index_rebuilt: bool,
}

impl Report {
    fn problem(&mut self, kind: Kind, file: &str, line: Option<usize>, what: impl Into<String>) {
        self.problems.push(Finding::new(kind, file, line, what));
    }

    fn note(&mut self, kind: Kind, file: &str, line: Option<usize>, what: impl Into<String>) {
        self.notes.push(Finding::new(kind, file, line, what));
    }
}

/// The index alone against the files (read only): what `reindex` asks
/// after a sync, to find rows a sync cannot see (duplicates, stale rows of
/// files it thinks it synced).
pub async fn index_only(layout: &Layout) -> Result<Report> {
    let mut report = Report::default();
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    index(layout, (&tombstones, None, true), &mut report).await?;
    Ok(report)
}

/// Check every file, then the index (read only).
pub async fn run(layout: &Layout) -> Result<Report> {
    run_kept(layout, None).await
}

/// The day files, parsed once for every check of them
/// ([`index::parsed_days`]).
type Days = Arc<ParsedDays>;

/// [`run`], with what `kept` keeps when the index is open in this process
/// (the day files as parsed, each file's fingerprint, what its last check
/// found of each day file's facts and of the index's rows: [`memo`],
/// [`crate::index::rows_check`]), so that a daemon's check reads again
/// only what changed since its last.
pub async fn run_kept(layout: &Layout, kept: Option<&Index>) -> Result<Report> {
    run_with(layout, kept, false).await
}

/// [`run_kept`]; with `deep`, nothing its last check found is taken as
/// found: every fact and every index row is looked at, as a process with
/// nothing kept does.
pub async fn run_with(layout: &Layout, kept: Option<&Index>, deep: bool) -> Result<Report> {
    let mut report = Report::default();
    let mut found = match kept.filter(|_| !deep) {
        Some(index) => index.facts_checked.begin(index.writer.fingerprints()?),
        None => memo::Session::none(),
    };
    let days = index::parsed_days(layout, kept)?;
    for (day, parsed) in days.iter() {
        for w in archive::warnings_of(day, parsed) {
            report.note(Kind::ArchiveWarning, rel::ARCHIVE, None, w);
        }
    }
    let doc = Document::read(&layout.entries_file())?;
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let state = match State::load(&layout.state_file()) {
        Ok(s) => s,
        Err(e) => {
            report.problem(Kind::Unreadable, rel::STATE, None, e.to_string());
            State::default()
        }
    };
    report.facts = days.iter().map(|(_, p)| p.facts.len()).sum();
    report.entries = doc.entries().count();
    entries(&doc, &mut report);
    let journal = journal::read(&layout.journal_file()).unwrap_or_default();
    let facts_and_entries = kept::Files {
        days: &days,
        doc: &doc,
        state: &state,
        tombstones: &tombstones,
        journal: &journal,
    };
    let next_run = facts_and_entries.check(&mut found, &mut report);
    if let Some(index) = kept {
        let after = index.writer.fingerprints()?;
        found.end(&after);
    }
    erasures(layout, (&doc, &journal), (&days, &tombstones), &mut report)?;
    review::check(layout, (&journal, &tombstones), &mut report)?;
    versions(layout, &tombstones, &mut report)?;
    for (run, seen, limit) in usage::past_budget(layout)? {
        let what = format!(
            "run {run} called the LLM after the day's runs before it had spent {seen} tokens of a budget of {limit}"
        );
        report.problem(Kind::PastBudget, rel::USAGE, None, what);
    }
    memory_md(layout, (&doc, &next_run), &tombstones, &mut report);
    listed((&doc, &tombstones), &mut report);
    json_lines(layout, &mut report)?;
    synced(layout, &mut report);
    handed_over(layout, &mut report);
    index(layout, (&tombstones, kept, deep), &mut report).await?;
    Ok(report)
}

/// A memory of a root is served by its node unless the root handed it
/// over to another node (`crate::server::moves`, whose mark is
/// `ROOT/.memd/moved/NAME`): a directory still here with that mark is
/// refused by its node, its facts found by no search.
fn handed_over(layout: &Layout, report: &mut Report) {
    let root = layout.root.parent();
    let name = layout.root.file_name().and_then(|n| n.to_str());
    let (Some(root), Some(name)) = (root, name) else {
        return;
    };
    let mark = root.join(rel::HANDED_OVER).join(name.to_ascii_lowercase());
    if mark.exists() {
        let what = format!(
            "{} says this memory was handed over to another node, yet it is still here, and its node refuses it: a move stopped midway; run it again (deploy/move.sh), or take the memory back where it is (POST /v1/takeover/{name} on its node)",
            mark.display()
        );
        report.problem(Kind::HandedOver, ".", None, what);
    }
}

/// Every version of the entries file and of MEMORY.md's generated lines
/// rebuilds byte for byte, unless an erasure took its text; none holds a
/// text an erasure took ([`crate::versions`]).
fn versions(layout: &Layout, tombstones: &Tombstones, report: &mut Report) -> Result<()> {
    let history = History::load(layout, None)?;
    let file = rel::VERSIONS;
    for line in &history.unreadable {
        report.problem(Kind::Unreadable, file, Some(*line), "not a version record");
    }
    for what in history.damaged() {
        report.problem(Kind::VersionDamaged, file, None, what);
    }
    for what in versions::tail_disproved(layout)? {
        report.problem(Kind::VersionsTail, rel::VERSIONS_TAIL, None, what);
    }
    if let Some((what, fix)) = erase::in_versions(tombstones, &history) {
        report
            .problems
            .push(Finding::new(Kind::EraseUnfinished, file, None, what).fixed_by(fix));
    }
    Ok(())
}

/// A memory `memd sync` set up: its last merge finished, and git knows
/// memd's merge drivers (without them a `git pull` merges memd's files as
/// text) ([`crate::sync::health`]).
fn synced(layout: &Layout, report: &mut Report) {
    let Some(health) = sync::health(&layout.root) else {
        return;
    };
    for (file, what) in health.unfinished {
        report
            .problems
            .push(Finding::new(Kind::SyncUnfinished, &file, None, what).fixed_by(Remedy::Sync));
    }
    if !health.missing_drivers.is_empty() {
        let what = format!(
            "git does not know memd's merge drivers ({}): a `git pull` would merge these files as text; a sync registers them",
            health.missing_drivers.join(", ")
        );
        let found = Finding::new(Kind::SyncDrivers, ".gitattributes", None, what);
        report.notes.push(found.fixed_by(Remedy::Sync));
    }
    if health.interrupted {
        let what =
            "a sync stopped after git merged and before it committed the merge; a sync finishes it";
        let file = ".git/MERGE_HEAD";
        report
            .problems
            .push(Finding::new(Kind::SyncUnfinished, file, None, what).fixed_by(Remedy::Sync));
    }
    for line in health.other_merges {
        let what = format!(
            "{line:?} gives memd's files another merge (a remote's, or a hand edit); memd's own lines in .git/info/attributes win over it, so memd's merges still run"
        );
        report.note(Kind::SyncDrivers, ".gitattributes", None, what);
    }
}

/// Each erasure finished ([`crate::erase::check`]) and each redaction
/// receipted; a line saying an erased text again is a problem too (the
/// text is on disk again).
fn erasures(
    layout: &Layout,
    (doc, journal): (&Document, &[journal::Record]),
    (days, tombstones): (&Days, &Tombstones),
    report: &mut Report,
) -> Result<()> {
    redactions_receipted(days, tombstones, report);
    if tombstones.receipts().next().is_none() {
        return Ok(());
    }
    let facts: Vec<&archive::Fact> = days.iter().flat_map(|(_, p)| p.facts.iter()).collect();
    let files = (doc, &facts[..], journal);
    let redacted = (days.iter())
        .flat_map(|(_, parsed)| parsed.erased.iter().map(|e| e.id.clone()))
        .collect();
    let found = erase::check(tombstones, files, &redacted);
    for id in erase::purge_pending(layout)? {
        let what = format!(
            "the index may still hold what erasing {id} took (deleted rows, old versions, embeddings)"
        );
        let fix = Remedy::Erase { id: id.to_string() };
        let found = Finding::new(Kind::EraseUnfinished, rel::INDEX, None, what);
        report.problems.push(found.fixed_by(fix));
    }
    for (what, fix) in found.unfinished {
        report
            .problems
            .push(Finding::new(Kind::EraseUnfinished, rel::TOMBSTONES, None, what).fixed_by(fix));
    }
    for (id, line) in found.said_again {
        let file = rel::archive_file(id.as_str().split('#').next().unwrap_or_default());
        let what = format!(
            "fact {id} says an erased text again (kept out; erasing {id} takes it out of the file)"
        );
        let fix = Remedy::Erase { id: id.to_string() };
        report
            .problems
            .push(Finding::new(Kind::ErasedSaidAgain, &file, Some(line), what).fixed_by(fix));
    }
    Ok(())
}

/// Each redaction line named by an erasure receipt: one that is not took
/// a fact out with nothing saying why.
fn redactions_receipted(days: &Days, tombstones: &Tombstones, report: &mut Report) {
    let named: std::collections::HashSet<&FactId> = tombstones
        .receipts()
        .flat_map(|t| t.sources.iter())
        .collect();
    for (day, parsed) in days.iter() {
        for e in &parsed.erased {
            if !named.contains(&e.id) {
                let what = format!(
                    "fact {} was taken out by a redaction line that no erasure receipt names (a remote's or a hand edit's): put its line back from a copy that holds it (a sync does when one does), or erase {} on the copy that holds it",
                    e.id, e.id
                );
                let file = rel::archive_file(day);
                report.problem(Kind::RedactedWithoutReceipt, &file, Some(e.line), what);
            }
        }
    }
}

const ENTRIES: &str = rel::ENTRIES;

/// Unique ids, readable metadata; hand edits as notes.
fn entries(doc: &Document, report: &mut Report) {
    for w in &doc.warnings {
        report.problem(Kind::Unreadable, ENTRIES, Some(w.line), w.message.clone());
    }
    let mut seen: HashMap<&EntryId, usize> = HashMap::new();
    for e in doc.entries() {
        let Some(m) = e.meta.as_ref() else {
            report.note(
                Kind::AwaitingMetadata,
                ENTRIES,
                None,
                format!(
                    "a block without metadata, waiting for the next run: {:?}",
                    first_words(&e.text)
                ),
            );
            continue;
        };
        *seen.entry(&m.id).or_default() += 1;
        if m.hash != text_hash(&e.text) {
            report.note(
                Kind::EditedByHand,
                ENTRIES,
                None,
                format!("{} was edited by hand", m.id),
            );
        }
    }
    for (id, n) in seen.into_iter().filter(|(_, n)| *n > 1) {
        report.problem(
            Kind::DuplicateId,
            ENTRIES,
            None,
            format!("{n} entries have the id {id}"),
        );
    }
}

/// The entries resource lists every live saved entry of the file, once,
/// in file order and word for word, and nothing else. (The facts give a
/// listed entry only its categories and sessions, which this does not
/// compare: none are looked up.)
fn listed((doc, tombstones): (&Document, &Tombstones), report: &mut Report) {
    let mut want: Vec<(&EntryId, &str)> = Vec::new();
    let mut seen: HashSet<&EntryId> = HashSet::new();
    for e in doc.entries() {
        let Some(m) = &e.meta else { continue };
        if !tombstones.names_entry(m.id.as_str()) && seen.insert(&m.id) {
            want.push((&m.id, &e.text));
        }
    }
    let views = entry_view::views_of(doc, tombstones, []);
    let got: Vec<(&EntryId, &str)> = views.iter().map(|v| (&v.id, v.text.as_str())).collect();
    let (got_set, want_set): (HashSet<_>, HashSet<_>) = (
        got.iter().copied().collect(),
        want.iter().copied().collect(),
    );
    for (id, _) in want.iter().filter(|w| !got_set.contains(*w)) {
        let what = format!(
            "{id} is live in the file, and the entries resource does not list it as written"
        );
        report.problem(Kind::EntryUnlisted, ENTRIES, None, what);
    }
    for (id, _) in got.iter().filter(|g| !want_set.contains(*g)) {
        let what =
            format!("the entries resource lists {id}, which the file does not hold live as listed");
        report.problem(Kind::EntryUnlisted, ENTRIES, None, what);
    }
}

fn first_words(text: &str) -> String {
    text.split_whitespace()
        .take(8)
        .collect::<Vec<_>>()
        .join(" ")
}

/// One pair of markers; every generated line tied to a live entry.
fn memory_md(
    layout: &Layout,
    (doc, next_run): (&Document, &kept::NextRun),
    tombstones: &Tombstones,
    report: &mut Report,
) {
    match CoreMd::read(&layout.memory_md()) {
        Err(e) => report.problem(Kind::Unreadable, rel::CORE, None, e.to_string()),
        Ok(md) => {
            let live: HashSet<&EntryId> = doc
                .entries()
                .filter_map(|e| e.id())
                .filter(|id| !tombstones.names_entry(id.as_str()))
                .collect();
            for l in md.lines().iter().filter(|l| live.contains(&l.entry_id)) {
                let updated = doc.get(l.entry_id.as_str()).and_then(|e| e.meta.as_ref());
                if let (Some(day), Some(m)) = (&l.date, updated)
                    && *day != m.updated
                {
                    let what = format!(
                        "the line of {} is dated {day}, the entry was last stated {}: the next run dates it again",
                        l.entry_id, m.updated
                    );
                    report.note(Kind::CoreLineDate, rel::CORE, None, what);
                }
            }
            for l in md.lines().iter().filter(|l| !live.contains(&l.entry_id)) {
                if next_run.deleted_by_hand.contains(&l.entry_id) {
                    let what = format!(
                        "a generated line names {}, which was deleted by hand: the next run takes it out",
                        l.entry_id
                    );
                    report.note(Kind::DeletedByHand, rel::CORE, None, what);
                    continue;
                }
                if !next_run.journaled.contains(&l.entry_id) {
                    let what = format!(
                        "a generated line names {}, which neither the entries file nor its journal knows (consolidated/ was deleted?): the next run takes it out",
                        l.entry_id
                    );
                    report.note(Kind::CoreLineUnknown, rel::CORE, None, what);
                    continue;
                }
                if next_run.unlabelled.contains(&l.entry_id) {
                    let what = format!(
                        "a generated line names {}, whose metadata was taken off by hand: the next run gives it back",
                        l.entry_id
                    );
                    report.note(Kind::AwaitingMetadata, rel::CORE, None, what);
                    continue;
                }
                report.problem(
                    Kind::CoreLineNotLive,
                    rel::CORE,
                    None,
                    format!(
                        "a generated line names {}, which is not a live entry: {:?}",
                        l.entry_id,
                        first_words(&l.text)
                    ),
                );
            }
        }
    }
}

/// The JSON-lines files parse, line by line.
fn json_lines(layout: &Layout, report: &mut Report) -> Result<()> {
    let bad = [
        (
            rel::JOURNAL,
            jsonl::read::<journal::Record>(&layout.journal_file())?.1,
        ),
        (
            rel::TOMBSTONES,
            jsonl::read::<serde_json::Value>(&layout.tombstones_file())?.1,
        ),
        (
            rel::RECALL_LOG,
            jsonl::read::<recall::Hit>(&layout.recall_log())?.1,
        ),
        (
            rel::USAGE,
            jsonl::read::<usage::Call>(&layout.usage_file())?.1,
        ),
        (
            rel::PROPOSALS,
            jsonl::read::<Line>(&layout.proposals_file())?.1,
        ),
    ];
    for (file, lines) in bad {
        for b in lines {
            report.problem(
                Kind::Unreadable,
                file,
                Some(b.line),
                format!("not a record: {}", b.error),
            );
        }
    }
    Ok(())
}

/// The index holds exactly the rows the files call for.
///
/// A daemon may sync while this reads: a source counts as synced only if
/// it was fresh both before the table and the files were read and after,
/// so a sync in between is a note, never a false problem.
async fn index(
    layout: &Layout,
    (tombstones, kept, deep): (&Tombstones, Option<&Index>, bool),
    report: &mut Report,
) -> Result<()> {
    let freshness = || match kept {
        Some(index) => index.writer.freshness(),
        None => fingerprints::freshness(layout),
    };
    let fresh_before = freshness()?;
    // Read between the two looks at freshness, so that a source fresh at
    // both was read as the table holds it.
    let Some((stored, expected)) = rows_to_compare(layout, kept, deep, report).await? else {
        return Ok(());
    };
    let mut fresh = freshness()?;
    for (source, state) in fresh.iter_mut() {
        if fresh_before.get(source) != Some(&Freshness::Fresh) {
            *state = Freshness::Stale;
        }
    }
    let before = report.problems.len();
    let mut counts: HashMap<(&str, &str), usize> = HashMap::new();
    for r in &stored {
        *counts.entry((&r.source, &r.id)).or_default() += 1;
    }
    for ((source, id), n) in counts.iter().filter(|(_, n)| **n > 1) {
        report.problem(
            Kind::IndexRows,
            INDEX,
            None,
            format!("{n} rows for {id} ({source})"),
        );
    }
    let texts: HashMap<&str, &str> = expected
        .values()
        .flatten()
        .map(|row| (row.0.id.as_str(), row.0.text.as_str()))
        .collect();
    for r in &stored {
        let text = texts.get(r.id.as_str()).copied().unwrap_or("");
        let kind = match Source::parse(&r.source) {
            Some(Source::Entries) => RowKind::Entry,
            Some(Source::Core) => RowKind::Core,
            _ => RowKind::Fact,
        };
        // A file changed since its sync (a forget changes every archive
        // file's fingerprint) is noted below, not a problem.
        let synced = Source::parse(&r.source)
            .and_then(|s| fresh.get(&s).copied())
            .is_some_and(|f| f == Freshness::Fresh);
        if synced && rows::hidden(tombstones, kind, &RowId::stored(&r.id), text) {
            report.problem(
                Kind::IndexRows,
                INDEX,
                None,
                format!("a row for {}, which is forgotten", r.id),
            );
        }
    }
    let mut have: HashMap<&str, HashMap<&str, &str>> = HashMap::new();
    for r in &stored {
        let rows = have.entry(r.source.as_str()).or_default();
        rows.insert(r.id.as_str(), r.hash.as_str());
    }
    for (source, state) in &fresh {
        source_rows(source, *state, &expected, &have, report);
    }
    let gone: HashSet<&str> = stored.iter().map(|r| r.source.as_str()).collect();
    let known = |s: &str| Source::parse(s).is_some_and(|s| fresh.contains_key(&s));
    for source in gone.into_iter().filter(|s| !known(s)) {
        let what = format!("rows of {source}, which no longer exists (not synced yet)");
        report.note(Kind::IndexUnsynced, INDEX, None, what);
    }
    words(layout, kept, report).await?;
    report.index_fixable = report.problems.len() > before;
    Ok(())
}

/// The table's rows and the rows the files call for, of every source, or
/// (a process that keeps what its last check found, unless `deep`) of the
/// sources whose rows may differ ([`rows_check`]); with the table's rows
/// counted in `report`. `None`: no table.
async fn rows_to_compare(
    layout: &Layout,
    kept: Option<&Index>,
    deep: bool,
    report: &mut Report,
) -> Result<Option<(Vec<table::StoredRow>, RowsBySource)>> {
    let Some(index) = kept.filter(|_| !deep) else {
        let Some(stored) = table::stored_rows(layout).await? else {
            return Ok(None);
        };
        report.index_rows = Some(stored.len());
        let days = kept.map(|index| index.writer.archive()).transpose()?;
        return Ok(Some((stored, rows::expected(layout, days.as_deref())?)));
    };
    let Some(compared) = rows_check::compare(layout, index).await? else {
        return Ok(None);
    };
    report.index_rows = Some(compared.rows);
    let only: HashSet<&Source> = (compared.prints.keys())
        .filter(|s| compared.differ.contains_key(&*s.rel()))
        .collect();
    // The files the comparison read are not read again.
    let (read_for_it, mut expected) = compared.read;
    let unread = only.iter().copied().filter(|s| !read_for_it.contains(*s));
    expected.extend(rows::expected_only(layout, &unread.collect())?);
    expected.retain(|s, _| only.contains(s));
    let mut stored = Vec::new();
    let mut read = BTreeSet::new();
    for (source, pairs) in &compared.differ {
        let want = Source::parse(source).and_then(|s| only.contains(&s).then(|| expected.get(&s)));
        match explained(source, pairs, want) {
            Some(rows) => stored.extend(rows),
            None => {
                read.insert(source.clone());
            }
        }
    }
    stored.extend(table::stored_rows_of(layout, &read).await?);
    Ok(Some((stored, expected)))
}

/// The rows `pairs` of `source` in the table ([`rows_check::Pair`]), as
/// read from it, when what they are is known without reading them: each
/// id once, and each one of the rows the file calls for (`want`: `None`
/// for a source no file is behind, whose rows are then only counted). A
/// row whose hash is not that of the file's row of its id is given a
/// hash no row has.
fn explained(
    source: &str,
    pairs: &[rows_check::Pair],
    want: Option<Option<&Vec<rows::Hashed>>>,
) -> Option<Vec<table::StoredRow>> {
    let mut ids = HashSet::with_capacity(pairs.len());
    if !pairs.iter().all(|(id, _)| ids.insert(*id)) {
        return None;
    }
    let row = |id: String, hash: String| table::StoredRow {
        id,
        source: source.to_string(),
        hash,
    };
    let Some(want) = want else {
        return Some(
            pairs
                .iter()
                .map(|(id, _)| row(format!("#{id:x}"), String::new()))
                .collect(),
        );
    };
    let by_id: HashMap<u64, &rows::Hashed> = (want.into_iter().flatten())
        .map(|r| (rows_check::pair(r.0.id.as_str(), &r.1).0, r))
        .collect();
    let mut out = Vec::with_capacity(pairs.len());
    for (id, hash) in pairs {
        let r = by_id.get(id)?;
        let same = rows_check::pair(r.0.id.as_str(), &r.1).1 == *hash;
        let hash = if same { r.1.clone() } else { String::new() };
        out.push(row(r.0.id.as_str().to_string(), hash));
    }
    Some(out)
}

/// The words file holds the words of the table's rows when it names the
/// table's version ([`crate::index::words`]).
async fn words(layout: &Layout, kept: Option<&Index>, report: &mut Report) -> Result<()> {
    use crate::index::words_check::{Found, compare};
    let file = rel::INDEX_WORDS;
    match compare(layout, kept.map(|i| &i.words_checked)).await? {
        Found::Differs => report.problem(
            Kind::IndexWords,
            file,
            None,
            "it names the table's version but holds other words than the table's rows",
        ),
        Found::Unreadable => report.note(
            Kind::IndexWords,
            file,
            None,
            "damaged: searches ignore it, and the next one that loads the words writes it anew",
        ),
        Found::Absent | Found::Other | Found::Same => {}
    }
    Ok(())
}

const INDEX: &str = rel::INDEX;

/// One source file's rows in the index against the rows it calls for: a
/// difference is a problem when the index says it synced the file as it
/// is, a note when the file changed since.
fn source_rows(
    source: &Source,
    state: Freshness,
    expected: &RowsBySource,
    stored: &HashMap<&str, HashMap<&str, &str>>,
    report: &mut Report,
) {
    let want: HashMap<&str, &str> = expected
        .get(source)
        .into_iter()
        .flatten()
        .map(|row| (row.0.id.as_str(), row.1.as_str()))
        .collect();
    let none = HashMap::new();
    let have = stored.get(&*source.rel()).unwrap_or(&none);
    if want == *have {
        return;
    }
    if state != Freshness::Fresh {
        let what = format!("{source} changed since the last sync ({state})");
        report.note(Kind::IndexUnsynced, INDEX, None, what);
        return;
    }
    let stale = have
        .iter()
        .filter(|(id, h)| want.get(*id) != Some(*h))
        .count();
    let missing = want.keys().filter(|id| !have.contains_key(*id)).count();
    let what = format!("{source}: {stale} stale and {missing} missing rows");
    report.problem(Kind::IndexRows, INDEX, None, what);
}
