//! Erasure: `memd forget --erase`, the one sanctioned exception to the
//! append-only archive.
//!
//! `memd forget` hides a fact for good, but its text stays on disk: in
//! the day file, the journal, the tombstones and the index's old table
//! versions. An erasure takes the text out of every file memd keeps:
//!
//! - the day files: each erased fact's list item becomes a redaction line
//!   that keeps its id and the time of the erasure, nothing of its text
//!   ([`crate::archive::redaction`]);
//! - the journal: its records keep their ids, ops and hashes, not the texts
//!   before and after ([`crate::journal::Record::erased`]);
//! - the tombstones: an earlier forget's tombstone keeps the text out by its
//!   hash alone;
//! - the entries file and MEMORY.md: the entry and its history go;
//! - the recall log: the searches that returned it, or that asked for it;
//! - the versions of the entries file and MEMORY.md
//!   ([`crate::versions`]): the chunks that held it;
//! - the index: its rows, the deleted rows' bytes and every old version of
//!   the table; and the embedding cache, down to the rows the index holds.
//!
//! **What is erased.** An entry, with every entry merged into it, their
//! texts before and after each op, and their source facts; or a pending
//! fact. Every fact in the archive with the same normalised text goes with
//! them (it is the same text). A new erasure is refused before anything
//! is written (once made, running it again finishes it), naming what to
//! erase or edit first: an entry not erased that holds one of its
//! facts or says its text (a merged entry an undo brought back included),
//! another archive fact that says it within its own words, the person's
//! own text in MEMORY.md, a JSON-lines line memd cannot read that says it.
//! A record of another entry keeps its text but the side that says an
//! erased text.
//!
//! **Git.** When the memory directory is in a git repository, the reply
//! names the commits that still hold the texts and how to purge them
//! ([`crate::git`]); memd never rewrites git history.
//!
//! **The receipt** is a tombstone (reason `erase`) holding the entry's id,
//! the fact ids and the hashes of the texts ([`crate::text::erased_hash`]),
//! no text. It keeps the texts out, word for word (as normalised), and
//! nothing lifts it: an erasure cannot be undone. (A restatement in other
//! words is no longer kept out by an erased text, nor by an earlier
//! forget's tombstone of it that the erasure emptied: memd no longer has
//! the words to compare.)
//!
//! # Crash semantics
//!
//! First a mark that the erasure is due (`.memd/erase-pending.jsonl`,
//! which `memd check` reports until the index is purged), then the
//! receipt: from then on nothing of it is shown or taken in. Then the
//! recall log, the journal (a FORGET of a live entry, and its records
//! without their texts), the entries file and MEMORY.md, the day files
//! (under each one's lock), the earlier tombstones, the versions, and last
//! the index and the embedding cache. Each file is rewritten whole and atomically, and
//! the texts a later step needs are still on disk when it runs. A crash
//! between two steps leaves the erasure in force and unfinished: `memd
//! check` reports it, and running the same command again finishes it.

use std::borrow::Borrow;
use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::archive::{self, Fact};
use crate::clock::Clock;
use crate::consolidate::deleted_by_hand;
use crate::entries::Document;
use crate::error::{Error, Result};
use crate::git::{GitHistory, history_of};
use crate::ids::{EntryId, FactId, given};
use crate::journal::{self, Record, Stamp};
use crate::layout::rel;
use crate::pause::{Step, at};
use crate::remedy::Remedy;
use crate::review::{self, Proposal};
use crate::text::{erased_hash, normalize};
use crate::tombstones::{self, Reason, Tombstone, Tombstones};
use crate::versions::Writing;
use crate::{Layout, Memory, core_md, forget, jsonl, recall, versions};

/// What every surface says of a text the user erased that is added
/// again: it is not written (the receipt keeps it out for good).
pub const NOT_WRITTEN_AGAIN: &str = "the user erased this text, and it stays out for good";

/// Whether `t` occurs in `n` with no letter or digit joined to either of
/// its ends: "yes" is not said in "yesterday", "koala-3321" is in "the
/// code is koala-3321, said the user". Both normalised
/// ([`crate::text::normalize`]).
pub fn said_within(n: &str, t: &str) -> bool {
    !t.is_empty()
        && n.match_indices(t).any(|(i, _)| {
            let before = n[..i].chars().next_back();
            let after = n[i + t.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
}

/// What an erasure took out of the files.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Erasure {
    /// The entry or fact id erased.
    pub id: String,
    /// The entries erased: the one named, and those merged into it.
    pub entries: Vec<EntryId>,
    /// The archive facts erased (their lines are redaction lines now).
    pub facts: Vec<FactId>,
    /// Journal records that lost their texts, by this run of the command.
    pub journal_records: usize,
    /// Recall-log lines dropped, by this run of the command.
    pub recalls: usize,
    /// When the memory directory is in a git repository: the commits that
    /// still hold the text, and how to purge them (memd never rewrites
    /// git history).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitHistory>,
}

/// What one erasure covers (see the module doc), gathered from the files
/// and from an earlier receipt of the same erasure.
#[derive(Debug, Default)]
struct Scope {
    /// The id given, when it is an entry's.
    entry: Option<EntryId>,
    /// The entry and those merged into it.
    entries: BTreeSet<String>,
    facts: BTreeSet<FactId>,
    /// The normalised texts still on disk somewhere.
    texts: BTreeSet<String>,
    hashes: BTreeSet<String>,
}

impl Scope {
    /// Whether `text` says an erased text: whole, or inside it as words
    /// of their own ([`said_within`]), whatever its length: an alarm code
    /// erased is said in "The alarm code is KOALA-3321, said the user".
    fn holds(&self, text: &str) -> bool {
        let n = normalize(text);
        self.hashes.contains(&erased_hash(&n)) || self.texts.iter().any(|t| said_within(&n, t))
    }

    /// Whether a chunk of a version of the entries file or of MEMORY.md
    /// ([`crate::versions`]) holds what this erasure covers: an entry of
    /// it (by id, or by one of its facts), a line of one, or its text.
    fn in_chunk(&self, file: versions::File, chunk: &str) -> bool {
        versions::said(file, chunk).iter().any(|s| {
            s.entry
                .as_ref()
                .is_some_and(|e| self.entries.contains(e.as_str()))
                || s.sources.iter().any(|f| self.facts.contains(f))
                || self.holds(&s.text)
        })
    }

    /// The erased texts as the files say them (what `git log -S` looks
    /// for): its facts', its entries' and their records' texts.
    fn said(&self, (doc, facts, records): (&Document, &[Fact], &[Record])) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = facts
            .iter()
            .filter(|f| self.facts.contains(&f.id))
            .map(|f| f.text.clone())
            .collect();
        let entries = doc
            .entries()
            .filter(|e| e.id().is_some_and(|i| self.names(i.as_str())));
        out.extend(entries.map(|e| e.text.clone()));
        for r in records.iter().filter(|r| self.about(r)) {
            out.extend([&r.before, &r.after].into_iter().flatten().cloned());
        }
        out
    }

    /// Whether search `query` asked for an erased text: it says one, or
    /// is a part of one (a search for the secret word of a sentence).
    fn asked(&self, query: &str) -> bool {
        let q = normalize(query);
        self.holds(query) || (!q.is_empty() && self.texts.iter().any(|t| t.contains(q.as_str())))
    }

    fn names(&self, id: &str) -> bool {
        self.entries.contains(id) || self.facts.iter().any(|f| f.as_str() == id)
    }

    /// Whether tombstone `t` was written for what this erasure covers: a
    /// forget of its entry, or of its facts only.
    fn tombstone_of(&self, t: &Tombstone) -> bool {
        t.entry
            .as_ref()
            .is_some_and(|e| self.entries.contains(e.as_str()))
            || (!t.sources.is_empty() && t.sources.iter().all(|f| self.facts.contains(f)))
    }

    /// Whether record `r` is about what this erasure covers (by its ids).
    fn about(&self, r: &Record) -> bool {
        self.names(&r.entry)
            || r.into
                .as_ref()
                .is_some_and(|i| self.entries.contains(i.as_str()))
            || r.sources.iter().any(|s| self.facts.contains(s))
    }

    /// Whether a proposal of review mode ([`crate::review`]) acts on what
    /// this erasure covers, or says its text.
    fn proposal(&self, p: &Proposal) -> bool {
        p.op.from().iter().any(|f| self.facts.contains(f))
            || p.op
                .target()
                .is_some_and(|t| self.entries.contains(t.as_str()))
            || p.entries
                .iter()
                .any(|e| self.entries.contains(e.id.as_str()) || self.holds(&e.text))
            || p.op.text().is_some_and(|t| self.holds(t))
    }

    /// Record `r` without the texts this erasure takes: both of a record
    /// about what it covers; of another entry's record, only the side
    /// that says an erased text (`None`: left as it is).
    fn scrub(&self, r: &Record, ts: &str) -> Option<Record> {
        if r.erased.is_some() && r.before.is_none() && r.after.is_none() {
            return None;
        }
        let about = self.about(r);
        let says = |t: &Option<String>| t.as_deref().is_some_and(|t| self.holds(t));
        let (before, after) = (about || says(&r.before), about || says(&r.after));
        if !before && !after {
            return None;
        }
        let mut r = r.clone();
        if before {
            r.before = None;
        }
        if after {
            r.after = None;
        }
        r.erased = Some(ts.to_string());
        Some(r)
    }

    /// A recall line without what the erasure takes: a hit on what it
    /// covers goes; a search that asked for an erased text keeps its hit
    /// on another row (promotion counts it) without the query.
    fn recall(&self, h: &recall::Hit) -> Option<Option<recall::Hit>> {
        if self.names(given(h.id.as_str())) {
            return Some(None);
        }
        if h.query.is_empty() || !self.asked(&h.query) {
            return None;
        }
        let mut h = h.clone();
        h.query = String::new();
        Some(Some(h))
    }

    /// A tombstone of an erased text, emptied to its hash (it keeps the
    /// text out by the hash); the receipt and others are left.
    fn empty_tombstone(&self, t: &Tombstone) -> Option<Option<Tombstone>> {
        if t.text.is_empty() || !(self.holds(&t.text) || self.tombstone_of(t)) {
            return None;
        }
        let mut t = t.clone();
        t.hashes.push(erased_hash(&t.text));
        t.text = String::new();
        Some(Some(t))
    }

    /// Whether receipt `t` (of erasing `id`) already covers this scope.
    fn receipt_covers(&self, t: &Tombstone, id: &str) -> bool {
        receipt_of(t, id)
            && self.facts.iter().all(|f| t.sources.contains(f))
            && self.hashes.iter().all(|h| t.hashes.contains(h))
    }

    fn receipt(&self, id: &str, clock: &Clock) -> Tombstone {
        let mut sources: Vec<FactId> = self.facts.iter().cloned().collect();
        // The fact named first: the receipt is found by it.
        if let Some(at) = sources.iter().position(|f| f.as_str() == id) {
            let f = sources.remove(at);
            sources.insert(0, f);
        }
        let mut t = Tombstone::new(clock, self.entry.clone(), "", sources, Reason::Erase);
        t.hashes = self.hashes.iter().cloned().collect();
        t
    }
}

/// Whether `t` is the receipt of erasing `id`.
fn receipt_of(t: &Tombstone, id: &str) -> bool {
    t.reason == Reason::Erase
        && (t.entry.as_ref().is_some_and(|e| e == id)
            || (t.entry.is_none() && t.sources.first().is_some_and(|f| f == id)))
}

/// Erase entry or fact `id` from the files (the index is the caller's:
/// [`crate::index::Writer::purge`], then [`purged`]), stamped with
/// `memory`'s clock. Refused (see the module doc) only while the erasure
/// is not made: once its receipt is written, running it again finishes
/// it, whatever was written since. A person's entry or line saying the
/// text again is theirs (notes); what a sync merged in from the other
/// copy's files before the erasure reached it (its journal records, its
/// versions, its facts of the text) loses the text.
pub fn erase(memory: &Memory, id: &str) -> Result<Erasure> {
    let id = given(id);
    let layout = &memory.layout;
    let _lock = Writing::start(memory)?;
    let stamp = Stamp::new(memory.clock);
    let mut doc = Document::read(&layout.entries_file())?;
    deleted_by_hand::record(layout, &mut doc, &stamp)?;
    let (facts, _) = archive::read_all(layout)?;
    let records = journal::read(&layout.journal_file())?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let scope = scope(id, (&doc, &facts, &records, &stones))?;
    // Refused only before the erasure is made (see the doc above).
    if !stones.all.iter().any(|t| receipt_of(t, id)) {
        held_elsewhere(&scope, id, &doc)?;
        said_elsewhere(layout, id, &scope, &facts)?;
    }
    let said = scope.said((&doc, &facts, &records));
    let ts = stamp.clock.timestamp();
    // Due until the index is purged too ([`purged`]): check reports it.
    std::fs::create_dir_all(layout.runtime_dir())?;
    jsonl::append(&layout.erase_pending(), &[id.to_string()])?;

    if !stones.all.iter().any(|t| scope.receipt_covers(t, id)) {
        tombstones::append(
            &layout.tombstones_file(),
            &[scope.receipt(id, &stamp.clock)],
        )?;
    }
    at(layout, Step::EraseReceipt);
    let recalls = recall::erase(&layout.recall_log(), |h| scope.recall(h))?;
    let live: Vec<EntryId> = doc
        .entries()
        .filter_map(|e| e.id())
        .filter(|e| scope.entries.contains(e.as_str()))
        .cloned()
        .collect();
    let forgets: Vec<Record> = live
        .iter()
        .map(|e| forget_record(&stamp, &doc, e, &ts))
        .collect();
    let journal_records =
        journal::erase(&layout.journal_file(), |r| scope.scrub(r, &ts), &forgets)?;
    review::erase(layout, |p| scope.proposal(p), &ts)?;
    at(layout, Step::EraseJournaled);
    remove_entries(layout, &mut doc, &live, &stamp)?;
    at(layout, Step::EraseEntriesWritten);
    redact(layout, &scope, &facts, &ts)?;
    at(layout, Step::EraseArchiveWritten);
    tombstones::erase(&layout.tombstones_file(), |t| scope.empty_tombstone(t), &[])?;
    versions::erase(layout, |file, chunk| scope.in_chunk(file, chunk), &ts)?;
    Ok(Erasure {
        id: id.to_string(),
        entries: scope.entries.iter().map(|e| EntryId::stored(e)).collect(),
        facts: scope.facts.iter().cloned().collect(),
        journal_records,
        recalls,
        git: history_of(&layout.root, &said),
    })
}

/// The index purged after an erasure ([`erase`]): the mark that it was
/// due goes (`memd check` reports an erasure while it is there).
pub fn purged(layout: &Layout) -> Result<()> {
    match std::fs::remove_file(layout.erase_pending()) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// The erasures whose index purge has not finished (a crash, or a failure
/// of the index, after the files): their ids.
pub(crate) fn purge_pending(layout: &Layout) -> Result<Vec<String>> {
    let (ids, _) = jsonl::read::<String>(&layout.erase_pending())?;
    Ok(ids)
}

/// A `FORGET` of live entry `e` by the erasure, without its text.
fn forget_record(stamp: &Stamp, doc: &Document, e: &EntryId, ts: &str) -> Record {
    let mut r = stamp.record(journal::Op::Forget, e.as_str());
    r.sources = doc
        .get(e.as_str())
        .and_then(|x| x.meta.as_ref())
        .map(|m| m.sources.clone())
        .unwrap_or_default();
    r.erased = Some(ts.to_string());
    r
}

/// What erasing `id` covers. An id that names nothing memd knows, and that
/// no receipt names, is [`Error::NotFound`].
fn scope(
    id: &str,
    (doc, facts, records, stones): (&Document, &[Fact], &[Record], &Tombstones),
) -> Result<Scope> {
    let mut s = Scope::default();
    let receipts: Vec<&Tombstone> = stones.all.iter().filter(|t| receipt_of(t, id)).collect();
    let mut known = !receipts.is_empty();
    for t in &receipts {
        s.facts.extend(t.sources.iter().cloned());
        s.hashes.extend(t.hashes.iter().cloned());
    }
    // The facts an entry holds now are its erasure's only the first time:
    // run again (after a crash, or on a merge), the receipt names them.
    // A fact another copy folded into the entry since (an update of it)
    // says something else: it stays, pending again with the entry gone.
    let mut held: BTreeSet<FactId> = BTreeSet::new();
    if EntryId::looks_like(id) {
        s.entry = Some(EntryId::stored(id));
        s.entries = forget::lineage_ids(records, id).into_iter().collect();
        for e in doc
            .entries()
            .filter(|e| e.id().is_some_and(|i| s.entries.contains(i.as_str())))
        {
            known = true;
            s.texts.insert(normalize(&e.text));
            held.extend(e.meta.iter().flat_map(|m| m.sources.iter().cloned()));
        }
        for r in records.iter().filter(|r| s.entries.contains(&r.entry)) {
            known = true;
            s.texts.extend(
                [&r.before, &r.after]
                    .into_iter()
                    .flatten()
                    .map(|t| normalize(t)),
            );
            held.extend(r.sources.iter().cloned());
        }
        if receipts.is_empty() {
            s.facts.extend(held);
        }
    } else if let Some(f) = facts.iter().find(|f| f.id == id) {
        known = true;
        s.facts.insert(f.id.clone());
    }
    if !known {
        return Err(Error::NotFound { id: id.to_string() });
    }
    let forgotten: Vec<String> = stones
        .all
        .iter()
        .filter(|t| !t.text.is_empty() && s.tombstone_of(t))
        .map(|t| t.text.clone())
        .collect();
    s.texts.extend(forgotten);
    for f in facts.iter().filter(|f| s.facts.contains(&f.id)) {
        s.texts.insert(normalize(&f.text));
    }
    s.hashes.extend(s.texts.iter().map(|t| erased_hash(t)));
    for f in facts
        .iter()
        .filter(|f| s.hashes.contains(&erased_hash(&f.text)))
    {
        s.facts.insert(f.id.clone());
    }
    Ok(s)
}

/// An entry not erased that holds a fact of the erasure, or says one of
/// its texts: refused, naming the entry (the erasure would leave that
/// entry saying it).
fn held_elsewhere(s: &Scope, erased: &str, doc: &Document) -> Result<()> {
    for e in doc.entries() {
        let id = e.id();
        if let Some(id) = id.filter(|i| s.entries.contains(i.as_str())) {
            if id.as_str() != erased {
                return Err(Error::Invalid(format!(
                    "entry {id} was merged into {erased} and is in the file again (an undo): erase it on its own first; nothing was erased"
                )));
            }
            continue;
        }
        let sources = e.meta.iter().flat_map(|m| m.sources.iter());
        let held = sources.into_iter().find(|f| s.facts.contains(*f));
        let what = match id {
            Some(id) => format!("entry {id}"),
            None => {
                let start: String = e.text.chars().take(40).collect();
                format!("an entry written by hand ({start:?}…)")
            }
        };
        let why = match held {
            Some(f) => format!("fact {f} is held by {what}"),
            None if s.holds(&e.text) => format!("{what} says it too"),
            None => continue,
        };
        return Err(Error::Invalid(format!(
            "{why}: erase that entry, or edit it, first; nothing was erased"
        )));
    }
    Ok(())
}

/// What says an erased text and is not the erasure's to take, refused
/// before anything is written, named: another archive fact that says it
/// within its own words, the person's own text in MEMORY.md, a line of a
/// JSON-lines file memd cannot read (it cannot be rewritten without it).
fn said_elsewhere(layout: &Layout, id: &str, s: &Scope, facts: &[Fact]) -> Result<()> {
    let refuse = |what: String| {
        Err(Error::Invalid(format!(
            "{what} says what erasing {id} takes: erase or edit it first; nothing was erased"
        )))
    };
    let ours = |f: &Fact| s.facts.contains(&f.id) || s.hashes.contains(&erased_hash(&f.text));
    if let Some(f) = facts.iter().find(|f| !ours(f) && s.holds(&f.text)) {
        return refuse(format!(
            "fact {} (archive/{}.md line {})",
            f.id, f.day, f.line
        ));
    }
    let core = core_md::CoreMd::read(&layout.memory_md())?;
    if s.holds(&core.notes()) {
        return refuse("MEMORY.md's own text (outside memd's markers)".into());
    }
    let files = [
        (
            rel::JOURNAL,
            jsonl::unreadable::<Record>(&layout.journal_file())?,
        ),
        (
            rel::TOMBSTONES,
            jsonl::unreadable::<Tombstone>(&layout.tombstones_file())?,
        ),
        (
            rel::RECALL_LOG,
            jsonl::unreadable::<recall::Hit>(&layout.recall_log())?,
        ),
    ];
    for (file, lines) in files {
        if let Some((n, _)) = lines.iter().find(|(_, l)| s.holds(l)) {
            return refuse(format!("{file} line {n}, which memd cannot read,"));
        }
    }
    Ok(())
}

/// The live entries of the erasure out of the file, and their lines out
/// of MEMORY.md.
fn remove_entries(
    layout: &Layout,
    doc: &mut Document,
    live: &[EntryId],
    stamp: &Stamp,
) -> Result<()> {
    let gone: HashSet<&str> = live.iter().map(|e| e.as_str()).collect();
    core_md::drop_lines(&layout.memory_md(), &gone)?;
    if live.is_empty() {
        return Ok(());
    }
    for e in live {
        doc.remove(e.as_str());
    }
    forget::save(layout, doc, stamp)
}

/// Each erased fact's line (by its id, or its text's hash: a line said
/// again meanwhile too), a redaction line, day by day.
fn redact(layout: &Layout, scope: &Scope, facts: &[Fact], ts: &str) -> Result<()> {
    let gone =
        |f: &Fact| scope.facts.contains(&f.id) || scope.hashes.contains(&erased_hash(&f.text));
    let mut days: BTreeSet<&str> = facts
        .iter()
        .filter(|f| gone(f))
        .map(|f| f.day.as_str())
        .collect();
    days.extend(
        scope
            .facts
            .iter()
            .filter_map(|f| f.as_str().split_once('#').map(|(d, _)| d)),
    );
    for day in days {
        archive::redact(layout, day, &gone, ts)?;
    }
    Ok(())
}

/// A version ([`crate::versions`]) that still holds an entry a receipt
/// erased, or an entry holding one of its facts: what to run to finish
/// that erasure. By ids, as the journal's records are checked: a person
/// who writes an erased text again after the erasure writes an entry of
/// another id (its versions are theirs, as a line said again is).
pub(crate) fn in_versions(
    stones: &Tombstones,
    history: &versions::History,
) -> Option<(String, Remedy)> {
    for t in stones.receipts() {
        let holds = |(file, chunk): (versions::File, &str)| {
            versions::said(file, chunk).iter().any(|s| {
                s.entry.is_some() && s.entry == t.entry
                    || s.sources.iter().any(|f| t.sources.contains(f))
            })
        };
        if history.texts().any(holds) {
            let what = t.entry.as_ref().map_or_else(
                || t.sources.first().map(|f| f.to_string()).unwrap_or_default(),
                |e| e.to_string(),
            );
            let said = format!(
                "a version of the entries file or of MEMORY.md still holds what erasing {what} took"
            );
            return Some((said, Remedy::Erase { id: what }));
        }
    }
    None
}

/// What `memd check` finds of erasures ([`check`]).
#[derive(Debug, Default)]
pub(crate) struct Findings {
    /// Erasures that did not finish: a file still holds a text one took
    /// out, or the entry it erased.
    pub unfinished: Vec<(String, Remedy)>,
    /// Archive lines that say an erased text again (a person wrote them:
    /// memd's own appends never do), kept out by the receipt.
    pub said_again: Vec<(FactId, usize)>,
}

/// Each receipt against the files: what still holds its text.
pub(crate) fn check<F: Borrow<Fact>>(
    stones: &Tombstones,
    (doc, facts, records): (&Document, &[F], &[Record]),
    redacted: &HashSet<FactId>,
) -> Findings {
    let mut out = Findings::default();
    for t in stones.receipts() {
        let hashes: HashSet<&str> = t.hashes.iter().map(String::as_str).collect();
        let said = |text: &str| hashes.contains(erased_hash(text).as_str());
        let what = t.entry.as_ref().map_or_else(
            || t.sources.first().map(|f| f.to_string()).unwrap_or_default(),
            |e| e.to_string(),
        );
        let mut unfinished = |s: String| {
            let fix = Remedy::Erase { id: what.clone() };
            out.unfinished
                .push((format!("{s}: its erasure did not finish"), fix))
        };
        if let Some(e) = &t.entry
            && doc.get(e.as_str()).is_some()
        {
            unfinished(format!("erased entry {e} is still in the entries file"));
        }
        let metas = doc.entries().filter_map(|e| e.meta.as_ref());
        for m in metas.filter(|m| Some(&m.id) != t.entry.as_ref()) {
            if let Some(f) = m.sources.iter().find(|f| t.sources.contains(f)) {
                unfinished(format!("entry {} holds erased fact {f}", m.id));
            }
        }
        for f in (facts.iter().map(|f| f.borrow()))
            .filter(|f| t.sources.contains(&f.id) || said(&f.text))
        {
            match t.sources.contains(&f.id) && !redacted.contains(&f.id) {
                true => unfinished(format!("fact {} still holds its text", f.id)),
                false => out.said_again.push((f.id.clone(), f.line)),
            }
        }
        // Records and tombstones of what it erased (one that says its text
        // since is a person's, as a line said again is).
        let of_it = |entry: &str, sources: &[FactId]| {
            t.entry.as_ref().is_some_and(|e| e == entry)
                || sources.iter().any(|f| t.sources.contains(f))
                || t.sources.iter().any(|f| f == entry)
        };
        let kept = records
            .iter()
            .filter(|r| r.erased.is_none())
            .filter(|r| {
                of_it(&r.entry, &r.sources)
                    || r.into.as_ref().is_some_and(|i| of_it(i.as_str(), &[]))
            })
            .find(|r| [&r.before, &r.after].into_iter().flatten().any(|x| said(x)));
        if let Some(r) = kept {
            unfinished(format!(
                "a journal record of {} ({:?}) holds an erased text",
                r.entry, r.op
            ));
        }
        let entry_of = |s: &Tombstone| s.entry.as_ref().map_or(String::new(), |e| e.to_string());
        if stones
            .all
            .iter()
            .any(|s| !s.text.is_empty() && said(&s.text) && of_it(&entry_of(s), &s.sources))
        {
            unfinished("a tombstone holds an erased text".to_string());
        }
    }
    out.said_again.sort();
    out.said_again.dedup();
    out
}
