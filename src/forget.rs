//! Forgetting and lineage: `memd forget` and `memd history`.
//!
//! Forgetting an entry removes it from `consolidated/memory.md` and from
//! `MEMORY.md`, and appends tombstones for its normalised text, for the
//! text of each of its source facts and for their ids. Indexing and
//! consolidation skip anything a tombstone covers, so neither a rebuilt
//! index nor an archive line restating the fact word for word brings it
//! back. (A paraphrase is a new fact: memd cannot know it means the same.)
//! The archive itself is never rewritten.

use std::collections::HashSet;

use serde::Serialize;

use crate::archive::{self, Fact};
use crate::consolidate::deleted_by_hand;
use crate::core_md;
use crate::entries::Document;
use crate::error::{Result, bail};
use crate::ids::{EntryId, FactId, given};
use crate::index::RowKind;
use crate::journal::{self, Record, Stamp};
use crate::pending::{Journal, Pending, lift};
use crate::remedy::Remedy;
use crate::state::State;
use crate::text::normalize;
use crate::tombstones::{self, Reason, Tombstone, Tombstones};
use crate::versions::Writing;
use crate::{Error, Layout, Memory, entries};

/// Something that can be forgotten.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Candidate {
    /// `entry`, or `fact` (a fact not yet consolidated).
    pub kind: RowKind,
    pub id: String,
    pub text: String,
}

/// Entries and pending facts whose text contains `needle` (case and spacing
/// ignored).
pub fn candidates(layout: &Layout, needle: &str) -> Result<Vec<Candidate>> {
    let needle = normalize(needle);
    if needle.is_empty() {
        bail!("--match needs some text");
    }
    let doc = Document::read(&layout.entries_file())?;
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let state = State::load(&layout.state_file())?;
    let mut out: Vec<Candidate> = doc
        .entries()
        .filter(|e| normalize(&e.text).contains(&needle))
        .filter_map(|e| {
            Some(Candidate {
                kind: RowKind::Entry,
                id: e.id()?.to_string(),
                text: e.text.clone(),
            })
        })
        .collect();
    let (facts, _) = archive::read_all(layout)?;
    let pending = Pending::new(&state, &tombstones, &doc, Journal::of(layout));
    out.extend(
        facts
            .into_iter()
            .filter(|f| pending.is_pending(f))
            .filter(|f| normalize(&f.text).contains(&needle))
            .map(|f| Candidate {
                kind: RowKind::Fact,
                id: f.id.into(),
                text: f.text,
            }),
    );
    Ok(out)
}

/// Forget an entry (`e-…`) or a pending fact (`DAY#HASH`), stamped with
/// `memory`'s clock. Returns what was forgotten.
pub fn forget(memory: &Memory, id: &str) -> Result<Candidate> {
    let id = given(id);
    let layout = &memory.layout;
    let _lock = Writing::start(memory)?;
    let stamp = Stamp::new(memory.clock);
    let (facts, _) = archive::read_all(layout)?;
    let mut doc = Document::read(&layout.entries_file())?;
    // Entries deleted by hand since the last run are recorded first, so
    // that forgets apply in the order the user made them.
    deleted_by_hand::record(layout, &mut doc, &stamp)?;
    if let Some(entry) = doc.remove(id) {
        forget_entry(
            layout,
            &stamp,
            (&mut doc, &facts[..]),
            (EntryId::stored(id), &entry),
        )?;
        return Ok(Candidate {
            kind: RowKind::Entry,
            id: id.to_string(),
            text: entry.text,
        });
    }
    if let Some(f) = facts.iter().find(|f| f.id == id) {
        if let Some(done) = not_pending(layout, &doc, f)? {
            return done;
        }
        // The journal first: a forget that fails later has changed nothing
        // a user sees, and running it again finishes it.
        let mut r = stamp.record(journal::Op::Forget, id);
        r.before = Some(f.text.clone());
        r.sources = vec![f.id.clone()];
        journal::append(&layout.journal_file(), &[r])?;
        let stone = Tombstone::new(
            &stamp.clock,
            None,
            &f.text,
            vec![f.id.clone()],
            Reason::Forget,
        );
        tombstones::append(&layout.tombstones_file(), &[stone])?;
        return Ok(Candidate {
            kind: RowKind::Fact,
            id: id.to_string(),
            text: f.text.clone(),
        });
    }
    Err(Error::NotFound { id: id.to_string() })
}

/// A fact that is not pending is not forgotten by its id: one an entry
/// holds is that entry's to forget (the entry says it; forgetting the fact
/// alone would leave it said); one already forgotten itself (by its own
/// forget, or as a fact of a forgotten entry) is forgotten (`Ok`, nothing
/// written). One kept out only for another's sake (it says what was
/// forgotten: a restatement, or the same text) gets its own forget, so
/// that taking that other forget back never brings it back: `None`, and
/// the caller forgets it as a pending fact.
fn not_pending(layout: &Layout, doc: &Document, f: &Fact) -> Result<Option<Result<Candidate>>> {
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let done = Ok(Some(Ok(Candidate {
        kind: RowKind::Fact,
        id: f.id.to_string(),
        text: f.text.clone(),
    })));
    let holder = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .find(|m| m.sources.contains(&f.id));
    // Its entry's forget did not finish (the entry is still in the file):
    // forgetting the entry again finishes it.
    if let Some(m) = holder.filter(|m| tombstones.names_entry(m.id.as_str())) {
        let said = format!(
            "fact {} is in entry {}, whose forget did not finish",
            f.id, m.id
        );
        let fix = Remedy::Forget {
            id: m.id.to_string(),
        };
        return Ok(Some(Err(Error::Invalid(said).remedied(fix))));
    }
    let itself = |t: &Tombstone| t.reason != Reason::RestatesForgotten && t.sources.contains(&f.id);
    if tombstones.all.iter().any(itself) {
        return done;
    }
    match holder {
        Some(_) if tombstones.covers(&f.id, &f.text) => done,
        Some(m) => Ok(Some(Err(Error::Invalid(format!(
            "fact {} is consolidated into entry {}: forget or edit that entry",
            f.id, m.id
        ))
        .remedied(Remedy::Forget {
            id: m.id.to_string(),
        })))),
        None => Ok(None),
    }
}

/// Forget `entry` (already taken out of `doc`): its tombstones, the file
/// without it, the journal, and MEMORY.md without its line.
fn forget_entry(
    layout: &Layout,
    stamp: &Stamp,
    (doc, facts): (&mut Document, &[Fact]),
    (id, entry): (EntryId, &entries::Entry),
) -> Result<()> {
    let sources: Vec<FactId> = entry
        .meta
        .as_ref()
        .map(|m| m.sources.clone())
        .unwrap_or_default();
    let source_facts: Vec<&Fact> = facts.iter().filter(|f| sources.contains(&f.id)).collect();
    let stone = |text: &str, sources: Vec<FactId>| {
        Tombstone::new(
            &stamp.clock,
            Some(id.clone()),
            text,
            sources,
            Reason::Forget,
        )
    };
    let mut stones = vec![stone(&entry.text, sources.clone())];
    let mut texts: HashSet<String> = HashSet::from([normalize(&entry.text)]);
    for f in source_facts {
        if texts.insert(normalize(&f.text)) {
            stones.push(stone(&f.text, vec![f.id.clone()]));
        }
    }
    // Crash order: the journal (with the entry whole, so an undo restores
    // it exactly), the tombstones, MEMORY.md without its line, the file
    // without it. A failure before the tombstones changes nothing a user
    // sees; after them, the entry is still in the file, kept out of search,
    // and `memd check` reports the forget as unfinished. Running the forget
    // again finishes it (the file goes last, so it still finds the entry).
    let mut r = stamp.record(journal::Op::Forget, &id);
    r.before = Some(entry.text.clone());
    r.sources = sources;
    r.meta_before = entry.meta.clone();
    journal::append(&layout.journal_file(), &[r])?;
    tombstones::append(&layout.tombstones_file(), &stones)?;
    core_md::drop_lines(&layout.memory_md(), &HashSet::from([id.as_str()]))?;
    save(layout, doc, stamp)
}

/// Save `doc`, journaling the blocks written by hand it gives ids as
/// `ADOPT` (a crash in between leaves them for the next run's adoption,
/// which journals any entry the journal does not know).
pub(crate) fn save(layout: &Layout, doc: &mut Document, stamp: &Stamp) -> Result<()> {
    let adopted = doc.save(&layout.entries_file(), &stamp.today())?;
    journal::append(&layout.journal_file(), &stamp.adoptions(doc, &adopted))
}

/// Undo `memd forget ID` (or the deletion by hand of entry `ID`): its
/// tombstones are lifted, and those of facts later kept out for saying the
/// same, so its facts count again; a forgotten entry is back in
/// `consolidated/memory.md` with its id, text and sources, from the
/// journal. One the journal does not know either (`consolidated/` was
/// deleted since) is not rebuilt from a tombstone's folded text: its facts
/// are pending again, and the next run makes them an entry from their own
/// words, as it does every fact of a deleted `consolidated/`
/// ([`crate::pending`]); only an entry of no facts (written by hand) comes
/// back as the tombstone says it. Journaled as `UNFORGET`.
///
/// Crash order: the entry first, then the lift, then the journal. A crash
/// before the lift leaves the tombstones in force, and running the undo
/// again finishes it (the entry is not restored twice).
pub fn undo(memory: &Memory, id: &str) -> Result<Candidate> {
    let id = given(id);
    let layout = &memory.layout;
    let stamp = Stamp::new(memory.clock);
    let _lock = Writing::start(memory)?;
    let mut doc = Document::read(&layout.entries_file())?;
    deleted_by_hand::record(layout, &mut doc, &stamp)?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    refuse_erased(&stones, id)?;
    let Some(first) = stones.all.iter().find(|t| t.of(id)) else {
        return Err(Error::NotFound { id: id.to_string() });
    };
    let records = journal::read(&layout.journal_file())?;
    let forgot = forgetting(&records, id);
    refuse_text_erased(&stones, forgot.as_ref(), id)?;
    let mut text = forgot
        .as_ref()
        .and_then(|r| r.before.clone())
        .unwrap_or_else(|| first.text.clone());
    // A fact id is never an entry's, whatever a record names (an older
    // memd wrote fact ids as hand-deleted entries).
    let is_entry = first
        .entry
        .as_ref()
        .is_some_and(|e| !FactId::looks_like(e.as_str()));
    // What the tombstones say its facts were, for an entry the journal
    // does not know (`consolidated/` deleted since).
    let stoned: Vec<FactId> = stones
        .all
        .iter()
        .filter(|t| t.of(id))
        .flat_map(|t| t.sources.iter().cloned())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut restored = true;
    if is_entry {
        let of_facts = !stoned.is_empty();
        (text, restored) = put_back(
            layout,
            &mut doc,
            &stamp,
            id,
            forgot.as_ref(),
            of_facts,
            text,
        )?;
    }
    lift(layout, &stones, vec![Tombstone::lift(&stamp.clock, id)])?;
    let mut r = stamp.record(journal::Op::Unforget, id);
    // No text when nothing was put back: the journal then says the entry
    // is not there ([`journal::lineage`]).
    r.after = restored.then(|| text.clone());
    r.sources = forgot.map(|r| r.sources).unwrap_or(stoned);
    journal::append(&layout.journal_file(), &[r])?;
    Ok(Candidate {
        kind: if is_entry {
            RowKind::Entry
        } else {
            RowKind::Fact
        },
        id: id.to_string(),
        text,
    })
}

/// `Err` when `id` itself was erased: an erasure cannot be undone.
fn refuse_erased(stones: &Tombstones, id: &str) -> Result<()> {
    let named = |t: &Tombstone| {
        t.entry.as_ref().is_some_and(|e| e == id) || t.sources.iter().any(|f| f == id)
    };
    match stones.receipts().any(named) {
        true => Err(Error::Invalid(format!(
            "{id} was erased: an erasure cannot be undone"
        ))),
        false => Ok(()),
    }
}

/// `Err` when an erasure took the text forgotten `id` says (of this
/// forget, `forgot`, or of another's with the same words): nothing to put
/// back.
fn refuse_text_erased(
    stones: &Tombstones,
    forgot: Option<&journal::Record>,
    id: &str,
) -> Result<()> {
    let emptied = stones
        .all
        .iter()
        .any(|t| t.of(id) && t.text.is_empty() && !t.hashes.is_empty());
    match emptied || forgot.is_some_and(|r| r.erased.is_some()) {
        true => Err(Error::Invalid(format!(
            "{id} says a text that was erased: it cannot be brought back"
        ))),
        false => Ok(()),
    }
}

/// Forgotten entry `id`, put back in the file if it is not there: its
/// text (the file's, or `text`) and whether it is back. Neither the file
/// nor the journal holds it and it was made of facts (`of_facts`): not
/// put back; lifted, its facts are pending again, and the next run makes
/// them an entry from their own words (a tombstone keeps only a folded
/// text to match).
fn put_back(
    layout: &Layout,
    doc: &mut Document,
    stamp: &Stamp,
    id: &str,
    forgot: Option<&journal::Record>,
    of_facts: bool,
    text: String,
) -> Result<(String, bool)> {
    if let Some(e) = doc.get(id) {
        return Ok((e.text.clone(), true));
    }
    if forgot.is_none() && of_facts {
        return Ok((text, false));
    }
    let meta = match forgot.and_then(|r| r.meta_before.clone()) {
        // The entry as it was: its id, sources and dates.
        Some(meta) => meta,
        None => {
            let sources = forgot.map(|r| r.sources.clone()).unwrap_or_default();
            let mut meta = doc.new_meta(&text, &stamp.today(), sources);
            meta.id = EntryId::stored(id);
            meta
        }
    };
    doc.push(&text, meta);
    save(layout, doc, stamp)?;
    Ok((text, true))
}

/// The journal's record of how `id` was forgotten. A forget an older memd
/// did not journal (its journal write failed after the tombstones) is
/// made up from the entry's lineage, so an undo still restores its text
/// and sources as memd last wrote them.
fn forgetting(records: &[Record], id: &str) -> Option<Record> {
    let found = records
        .iter()
        .rev()
        .find(|r| r.entry == id && matches!(r.op, journal::Op::Forget | journal::Op::HandRemove));
    if let Some(r) = found {
        return Some(r.clone());
    }
    let l = journal::lineage(records).remove(id)?;
    let last = records.iter().rev().find(|r| r.entry == id)?;
    let mut r = last.clone();
    r.op = journal::Op::Forget;
    r.before = l.text;
    r.sources = l.sources;
    r.meta_before = None;
    Some(r)
}

/// The journal records of an entry's lineage, oldest first: its own, and
/// those of every entry merged into it (recursively).
pub fn history(layout: &Layout, id: &str) -> Result<Vec<Record>> {
    let id = given(id);
    let all = journal::read(&layout.journal_file())?;
    let ids = lineage_ids(&all, id);
    Ok(all
        .into_iter()
        .filter(|r| {
            ids.contains(&r.entry) || r.into.as_ref().is_some_and(|i| ids.contains(i.as_str()))
        })
        .collect())
}

/// Entry `id` and every entry merged into it (recursively), by `all`.
pub(crate) fn lineage_ids(all: &[Record], id: &str) -> HashSet<String> {
    let mut ids: HashSet<String> = HashSet::from([id.to_string()]);
    loop {
        let merged: Vec<String> = all
            .iter()
            .filter(|r| r.into.as_ref().is_some_and(|i| ids.contains(i.as_str())))
            .map(|r| r.entry.clone())
            .filter(|e| !ids.contains(e))
            .collect();
        if merged.is_empty() {
            return ids;
        }
        ids.extend(merged);
    }
}
