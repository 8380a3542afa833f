//! After a merge, before it is committed: what each file's merge cannot
//! know alone, settled across files, so that `memd check` is clean on
//! the merge and no fact is hidden.
//!
//! - An entry a tombstone names (forgotten on one side, changed on the
//!   other, so the entries merge kept it) goes: a forget is never undone
//!   by a sync.
//! - A fact a forget names that a live entry holds (one side forgot it
//!   while the other consolidated it): the forget wins. So does an
//!   erasure for a fact of its text that its receipt does not list (the
//!   other side wrote it before the erasure arrived). An entry that
//!   holds nothing else goes (journaled as a `REMOVE` of the sync's run:
//!   the forget was of the fact, so taking it back brings the fact back,
//!   pending); one that holds more lets the fact go and is marked
//!   unreviewed, for the next run to say again without it. Either way the
//!   fact is no longer decided: its forget keeps it out, and a forget
//!   taken back leaves it pending.
//! - A fact two entries hold (both sides consolidated it) stays in the
//!   first of them only: one fact is held once. The other entry, when it
//!   then holds nothing and says the same (normalised) as the first, is
//!   a duplicate and goes, journaled as a `REMOVE` into the first (a run
//!   merges restatements only among the facts it decides, so without
//!   this both would stay). One that says something else stays, for a
//!   person or a later run.
//! - A fact decided that no entry holds and no tombstone covers (its
//!   entry went on the other side) is pending again: the next run
//!   decides it. Hidden it would be lost.
//! - The journal's last word on each entry agrees with the merged file
//!   (each side's records are merged by time, the file by entry): an
//!   entry a forget took out gets its `FORGET` when the journal still has
//!   it alive, and a live entry the records do not leave as the file has
//!   it gets an `EDIT` stating it whole, in one run of the sync's own
//!   (listed by `memd runs`, undone by `memd undo`).
//! - MEMORY.md's generated lines: one per live entry, dated as the
//!   merged entry is.
//! - An erasure of either side that the other side's files (or its
//!   versions) still hold is named, for the caller to run again
//!   ([`super::Synced::erased_again`]); so is one that reached a side
//!   that had written a fact of its text before it arrived
//!   ([`erasures_arrived`]: an erasure takes every fact of its text; a
//!   text written again by hand after the erasure is a person's, and
//!   `memd check` names it).
//!
//! - **A redaction without its receipt** ([`unreceipted`]) is not an
//!   erasure: the fact's line is put back as a side holding it live has
//!   it; **a fact taken out** of a day file otherwise is appended again
//!   ([`archive_kept`]).
//!
//! Every change here is made under the entries lock, with its version
//! recorded ([`crate::versions::Writing`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::archive;
use crate::consolidate::deleted_by_hand;
use crate::core_md::{self, CoreMd, Line};
use crate::entries::{Document, Entry};
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::journal;
use crate::layout::rel;
use crate::state::State;
use crate::text::{erased_hash, normalize};
use crate::tombstones::{Reason, Tombstone, Tombstones};
use crate::versions::{History, Writing};
use crate::{Layout, Memory, erase, runs};

/// An entry taken out of the file, by id.
type Gone = (String, Entry);

/// What settling changed, for the sync's report.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    pub forgotten_kept_out: usize,
    pub held_twice: usize,
    /// Entries that held only facts a forget names, taken out.
    pub emptied: usize,
    /// Forgotten facts let go by entries that hold more.
    pub let_go: usize,
    /// Entries that said what the entry holding their facts says, merged
    /// into it.
    pub duplicates: usize,
    pub pending_again: usize,
    /// Ids to erase again (entry or fact), each once.
    pub erasures: Vec<String>,
    /// Facts a redaction line took out with no erasure receipt naming
    /// them, put back ([`unreceipted`]).
    pub unredacted: Vec<FactId>,
    /// Facts this copy held that the merge took out of a day file,
    /// appended again ([`archive_kept`]).
    pub kept: Vec<FactId>,
}

/// `show(rev, path)`: a file as commit `rev` holds it, `HEAD` (ours) or
/// `MERGE_HEAD` (theirs) ([`erasures_arrived`]).
pub(crate) fn settle(
    memory: &Memory,
    show: impl Fn(&str, &str) -> Option<String>,
) -> Result<Settled> {
    let layout = &memory.layout;
    let _writing = Writing::start(memory)?;
    let mut out = Settled::default();
    // Entries deleted by hand (on either side) are recorded first, as a
    // forget or a run does: their facts are then forgotten, not hidden.
    let mut doc = Document::read(&layout.entries_file())?;
    let stamp = journal::Stamp::new(memory.clock);
    deleted_by_hand::record(layout, &mut doc, &stamp)?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    // Redactions first: a line put back is a fact the merge kept.
    out.unredacted = unreceipted(layout, &stones, &show)?;
    out.kept = archive_kept(layout, &stones, &show)?;
    // Settling changes no other day file: the facts are read once.
    let (facts, _) = archive::read_all(layout)?;
    let (doc, undecided) = entries(memory, doc, (&stones, &facts), &mut out)?;
    decided(layout, (&doc, &stones), (&facts, &undecided), &mut out)?;
    refresh_lines(layout, &doc, &stones)?;
    let mut due = erasures_due(layout, &stones, (&doc, &facts))?;
    due.extend(erasures_arrived(&facts, show));
    out.erasures = due.into_iter().collect();
    Ok(out)
}

/// The entries file settled (forgets win, a fact held once) and its
/// journal agreeing; the file, and the facts no longer decided.
fn entries(
    memory: &Memory,
    mut doc: Document,
    (stones, facts): (&Tombstones, &[archive::Fact]),
    out: &mut Settled,
) -> Result<(Document, Vec<FactId>)> {
    let layout = &memory.layout;
    let named: Vec<String> = doc
        .entries()
        .filter_map(|e| e.id())
        .filter(|id| stones.names_entry(id.as_str()))
        .map(|id| id.to_string())
        .collect();
    let removed: Vec<Gone> = named
        .iter()
        .filter_map(|id| Some((id.clone(), doc.remove(id)?)))
        .collect();
    out.forgotten_kept_out = named.len();
    let (held_twice, duplicates) = hold_once(&mut doc);
    out.held_twice = held_twice;
    let merged: Vec<(Gone, String)> = duplicates
        .into_iter()
        .filter_map(|(id, into)| Some(((id.clone(), doc.remove(&id)?), into)))
        .collect();
    out.duplicates = merged.len();
    // An erasure takes every fact of its text: the other side's too,
    // written before it arrived, which its receipt does not list yet.
    let erased: HashSet<&FactId> = facts
        .iter()
        .filter(|f| stones.erased(&f.text))
        .map(|f| &f.id)
        .collect();
    let named = |f: &FactId| stones.names_fact(f.as_str()) || erased.contains(f);
    let (whole, let_go) = let_go_forgotten(&mut doc, named);
    let emptied: Vec<Gone> = whole
        .iter()
        .filter_map(|id| Some((id.clone(), doc.remove(id)?)))
        .collect();
    out.emptied = emptied.len();
    out.let_go = let_go.len();
    // Saved when settling changed it, or recording hand deletions did (a
    // block given back its id); a file that is not UTF-8 only when memd
    // must change it (and then the save says why it will not).
    let on_disk = std::fs::read(layout.entries_file()).unwrap_or_default();
    let reclaimed = std::str::from_utf8(&on_disk).is_ok_and(|t| t != doc.render());
    if reclaimed || out.forgotten_kept_out + out.held_twice + out.emptied + out.let_go > 0 {
        doc.save(&layout.entries_file(), &memory.clock.today())?;
    }
    journal_agrees(memory, &doc, (&removed, &emptied, &merged))?;
    // Their forgets decide them, and a forget taken back makes them
    // pending again: no run decided them as they now stand.
    let undecided = emptied
        .iter()
        .filter_map(|(_, e)| e.meta.as_ref())
        .flat_map(|m| m.sources.iter().cloned())
        .chain(let_go)
        .collect();
    Ok((doc, undecided))
}

/// The state without `undecided` and without any decided fact no entry
/// holds and no tombstone covers (pending again, not hidden).
fn decided(
    layout: &Layout,
    (doc, stones): (&Document, &Tombstones),
    (facts, undecided): (&[archive::Fact], &[FactId]),
    out: &mut Settled,
) -> Result<()> {
    let mut state = State::load(&layout.state_file())?;
    let held: HashSet<&FactId> = doc
        .entries()
        .filter_map(|e| e.meta.as_ref())
        .flat_map(|m| &m.sources)
        .collect();
    let hidden: Vec<FactId> = facts
        .iter()
        .filter(|f| state.watermark.done.contains(&f.id))
        .filter(|f| !held.contains(&f.id) && !stones.covers(f.id.as_str(), &f.text))
        .map(|f| f.id.clone())
        .collect();
    for f in hidden.iter().chain(undecided) {
        state.watermark.done.remove(f);
    }
    out.pending_again = hidden.len();
    if !hidden.is_empty() || !undecided.is_empty() {
        state.save(&layout.state_file())?;
    }
    Ok(())
}

/// Every erasure's id, when one is unfinished on the merge: the files, or
/// (the other side's own chunks, written with the fact before the erasure
/// reached it) the versions, still hold an erased text.
fn erasures_due(
    layout: &Layout,
    stones: &Tombstones,
    (doc, facts): (&Document, &[archive::Fact]),
) -> Result<BTreeSet<String>> {
    let records = journal::read(&layout.journal_file())?;
    let redacted = archive::erased_all(layout)?.into_iter().collect();
    let found = erase::check(stones, (doc, facts, &records), &redacted);
    let history = History::load(layout, None)?;
    if found.unfinished.is_empty() && erase::in_versions(stones, &history).is_none() {
        return Ok(BTreeSet::new());
    }
    Ok(stones.receipts().filter_map(receipt_id).collect())
}

/// The id an erasure was run with (its receipt's entry, or its first
/// fact): what `memd forget --erase` is run with again to finish it.
fn receipt_id(t: &Tombstone) -> Option<String> {
    t.entry
        .as_ref()
        .map(|e| e.to_string())
        .or_else(|| t.sources.first().map(|f| f.to_string()))
}

/// The archive is only ever appended to, by a merge too: a fact this
/// copy's last commit holds that the merged day file no longer says (a
/// remote that took lines out, or whose link or deletion put back this
/// copy's older file over lines the remote had brought) is appended again
/// under its heading's time, its text as this copy wrote it, and so is a
/// redaction line of ours it lost. One an erasure receipt names is gone by
/// right. Counted by text, not by id
/// (an id counts the earlier facts of its text in the file).
fn archive_kept(
    layout: &Layout,
    stones: &Tombstones,
    show: &impl Fn(&str, &str) -> Option<String>,
) -> Result<Vec<FactId>> {
    let named: HashSet<&FactId> = stones.receipts().flat_map(|t| t.sources.iter()).collect();
    let mut kept = Vec::new();
    for day in layout.archive_days()? {
        let path = format!("{}{day}.md", rel::ARCHIVE);
        let Some(head) = show("HEAD", &path) else {
            continue;
        };
        let merged = archive::read_day(layout, &day)?;
        let mut left: HashMap<String, usize> = HashMap::new();
        for f in &merged.facts {
            *left.entry(normalize(&f.text)).or_default() += 1;
        }
        let ours = archive::parse(&day, &head);
        let mut missing = String::new();
        for f in ours.facts {
            let n = left.entry(normalize(&f.text)).or_default();
            match *n {
                0 if !named.contains(&f.id) => {
                    let time = f.time.as_deref().unwrap_or("00:00:00");
                    let item = archive::item_of(&f, &head).trim_end();
                    missing.push_str(&format!("\n## {time}\n{item}\n"));
                    kept.push(f.id);
                }
                0 => {}
                _ => *n -= 1,
            }
        }
        // A redaction line of ours the merge lost goes back too (one
        // whose fact the merge says live is redacted again below, by its
        // receipt: erasures_due).
        let erased: HashSet<&FactId> = merged
            .erased
            .iter()
            .map(|e| &e.id)
            .chain(merged.facts.iter().map(|f| &f.id))
            .collect();
        for e in ours.erased.iter().filter(|e| !erased.contains(&e.id)) {
            if let Some(line) = head.lines().nth(e.line - 1) {
                missing.push_str(&format!("\n{}\n", line.trim_start()));
                kept.push(e.id.clone());
            }
        }
        if !missing.is_empty() {
            archive::append_raw(layout, &day, missing.as_bytes())?;
        }
    }
    Ok(kept)
}

/// A redaction is an erasure's only with its receipt: a redaction line
/// the merge brought whose fact no receipt of the merged tombstones names
/// (a remote's, or a hand edit's on one side) is put back as the side
/// that holds the fact live has it (ours first). One neither side holds
/// live stays, and `memd check` names it.
fn unreceipted(
    layout: &Layout,
    stones: &Tombstones,
    show: &impl Fn(&str, &str) -> Option<String>,
) -> Result<Vec<FactId>> {
    let named: HashSet<&FactId> = stones.receipts().flat_map(|t| t.sources.iter()).collect();
    let mut back = Vec::new();
    for day in layout.archive_days()? {
        let parsed = archive::read_day(layout, &day)?;
        let lacking: HashSet<&FactId> = parsed
            .erased
            .iter()
            .map(|e| &e.id)
            .filter(|id| !named.contains(id))
            .collect();
        if lacking.is_empty() {
            continue;
        }
        let mut items: HashMap<FactId, String> = HashMap::new();
        for rev in ["HEAD", "MERGE_HEAD"] {
            let path = format!("{}{day}.md", rel::ARCHIVE);
            let text = show(rev, &path).unwrap_or_default();
            for f in archive::parse(&day, &text).facts {
                if lacking.contains(&f.id) && !items.contains_key(&f.id) {
                    let item = archive::item_of(&f, &text).to_string();
                    items.insert(f.id, item);
                }
            }
        }
        back.extend(archive::unredact(layout, &day, &items)?);
    }
    Ok(back)
}

/// Erasures that reached a side holding a fact of their text written
/// there before they arrived (that side's commit holds the fact and not
/// the receipt): ids to finish on the merge, since an erasure takes every
/// fact of its text. (Finishing it takes them all: one a person wrote
/// again by hand on the side that knew of the erasure goes too, which an
/// erasure finished on one copy would leave, noted by `memd check`.)
/// `show(rev, path)` is the file as `rev` holds it: `HEAD` (ours) or
/// `MERGE_HEAD` (theirs).
fn erasures_arrived(
    facts: &[archive::Fact],
    show: impl Fn(&str, &str) -> Option<String>,
) -> BTreeSet<String> {
    let receipts = |rev: &str| -> Vec<Tombstone> {
        let text = show(rev, rel::TOMBSTONES).unwrap_or_default();
        let all = text.lines().filter_map(|l| serde_json::from_str(l).ok());
        all.filter(|t: &Tombstone| t.reason == Reason::Erase)
            .collect()
    };
    // By text, not by id: a fact's id counts the earlier facts of its
    // text in its file, which a redaction line merged in above it changes.
    let mut days: HashMap<(&str, String), HashSet<String>> = HashMap::new();
    let mut wrote = |rev: &'static str, f: &archive::Fact| {
        let said = days.entry((rev, f.day.clone())).or_insert_with(|| {
            let text = show(rev, &format!("{}{}.md", rel::ARCHIVE, f.day));
            let day = archive::parse(&f.day, &text.unwrap_or_default());
            day.facts.iter().map(|f| erased_hash(&f.text)).collect()
        });
        said.contains(&erased_hash(&f.text))
    };
    let mut due = BTreeSet::new();
    let (ours, theirs) = (receipts("HEAD"), receipts("MERGE_HEAD"));
    for (lacking, known, arrived) in [("HEAD", &ours, &theirs), ("MERGE_HEAD", &theirs, &ours)] {
        for r in arrived.iter().filter(|r| !known.contains(r)) {
            let said = |f: &&archive::Fact| r.hashes.contains(&erased_hash(&f.text));
            if facts.iter().filter(said).any(|f| wrote(lacking, f)) {
                due.extend(receipt_id(r));
            }
        }
    }
    due
}

/// Journal records that make the merged journal's last word on each
/// entry the merged file's (see the module doc).
fn journal_agrees(
    memory: &Memory,
    doc: &Document,
    (removed, emptied, merged): (&[Gone], &[Gone], &[(Gone, String)]),
) -> Result<()> {
    use crate::journal::{Op, Stamp};
    let path = memory.layout.journal_file();
    let records = journal::read(&path)?;
    let lineage = journal::lineage(&records);
    let mut last: std::collections::HashMap<&str, &journal::Record> = Default::default();
    for r in records.iter().filter(|r| r.op != Op::Suppress) {
        last.insert(r.entry.as_str(), r);
    }
    let stamp = Stamp::new(memory.clock);
    let mut out = Vec::new();
    let gone = removed
        .iter()
        .map(|r| (Op::Forget, r, None))
        .chain(emptied.iter().map(|r| (Op::Remove, r, None)))
        .chain(merged.iter().map(|(r, into)| (Op::Remove, r, Some(into))));
    for (op, (id, e), into) in gone {
        if lineage.get(id.as_str()).is_some_and(|l| l.alive) {
            let mut r = stamp.record(op, id);
            r.into = into.map(|i| EntryId::stored(i));
            r.before = Some(e.text.clone());
            r.sources = e
                .meta
                .as_ref()
                .map(|m| m.sources.clone())
                .unwrap_or_default();
            r.meta_before = e.meta.clone();
            out.push(r);
        }
    }
    let norm = normalize;
    for e in doc.entries() {
        let Some(m) = &e.meta else { continue };
        let Some(l) = lineage.get(m.id.as_str()) else {
            continue;
        };
        let said = l.text.as_deref().map(norm) == Some(norm(&e.text));
        let edit_landed = last.get(m.id.as_str()).is_none_or(|r| {
            r.op != Op::Edit || r.after.as_deref().map(str::trim) == Some(e.text.trim())
        });
        // A person's edit since memd last wrote the entry is theirs to
        // keep, not the journal's to state.
        if l.alive && edit_landed && (said || e.edited_by_hand()) {
            continue;
        }
        let mut r = stamp.record(Op::Edit, m.id.as_str());
        r.before = l.text.clone();
        r.after = Some(e.text.clone());
        r.meta_after = Some(m.clone());
        out.push(r);
    }
    for r in &mut out {
        r.model = Some(runs::SYNC_JUDGE.to_string());
    }
    journal::append(&path, &out)
}

/// Live entries holding facts a tombstone names: those holding only such
/// facts (to take out), and the facts entries holding more let go.
fn let_go_forgotten(
    doc: &mut Document,
    named: impl Fn(&FactId) -> bool,
) -> (Vec<String>, Vec<FactId>) {
    let mut whole = Vec::new();
    let mut part: Vec<String> = Vec::new();
    for e in doc.entries() {
        let Some(m) = &e.meta else { continue };
        let named = m.sources.iter().filter(|f| named(f)).count();
        match named {
            0 => {}
            n if n == m.sources.len() => whole.push(m.id.to_string()),
            _ => part.push(m.id.to_string()),
        }
    }
    let mut gone = Vec::new();
    for id in part {
        if let Some(m) = doc.get_mut(&id).and_then(|e| e.meta.as_mut()) {
            let (named, kept) = m.sources.drain(..).partition(&named);
            m.sources = kept;
            m.unreviewed = true;
            gone.extend::<Vec<FactId>>(named);
        }
    }
    (whole, gone)
}

/// Each fact in the sources of the first entry that holds it only.
/// Returns how many facts were held twice, and the entries that then hold
/// nothing and say what an entry holding their facts says (both sides
/// consolidated the same facts alike), each with that entry: duplicates.
fn hold_once(doc: &mut Document) -> (usize, Vec<(String, String)>) {
    let mut first: BTreeMap<FactId, String> = BTreeMap::new();
    let mut extra: BTreeMap<String, Vec<FactId>> = BTreeMap::new();
    for e in doc.entries() {
        let Some(m) = &e.meta else { continue };
        for f in &m.sources {
            match first.get(f) {
                Some(holder) if *holder != m.id.as_str() => {
                    extra.entry(m.id.to_string()).or_default().push(f.clone())
                }
                _ => {
                    first.insert(f.clone(), m.id.to_string());
                }
            }
        }
    }
    let mut n = 0;
    let mut duplicates = Vec::new();
    let norm = normalize;
    for (id, gone) in extra {
        let holder = first[&gone[0]].clone();
        let said = doc.get(&holder).map(|h| norm(&h.text));
        if let Some(e) = doc.get_mut(&id)
            && let Some(m) = e.meta.as_mut()
        {
            m.sources.retain(|f| !gone.contains(f));
            n += gone.len();
            if m.sources.is_empty() && said == Some(norm(&e.text)) {
                duplicates.push((id, holder));
            }
        }
    }
    (n, duplicates)
}

/// MEMORY.md's generated lines: the first line of each live entry, dated
/// as that entry now is (its text is the side's that last promoted it).
fn refresh_lines(layout: &Layout, doc: &Document, stones: &Tombstones) -> Result<()> {
    let md = CoreMd::read(&layout.memory_md())?;
    if md.generated().is_none() {
        return Ok(());
    }
    let mut seen = HashSet::new();
    let lines: Vec<Line> = md
        .lines()
        .into_iter()
        .filter(|l| seen.insert(l.entry_id.clone()))
        .filter(|l| !stones.names_entry(l.entry_id.as_str()))
        .filter_map(|mut l| {
            let e = doc.get(l.entry_id.as_str())?;
            l.date = e.meta.as_ref().map(|m| m.updated.clone()).or(l.date);
            Some(l)
        })
        .collect();
    core_md::write_lines(&layout.memory_md(), &lines)?;
    Ok(())
}
