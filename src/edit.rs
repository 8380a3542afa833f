//! `memd edit`: one entry changed through memd (its text, its pin, its
//! category) by a person or an agent. It is the edit a person makes by hand
//! in `consolidated/memory.md`, made safe against one: the change lands
//! only if the file is still as it was read (else it is read again and the
//! change made again on what is there), and it is journaled as `EDIT` with
//! the entry whole before and after, under a run id of its own. So
//! `memd undo RUN` takes it back, `memd history ID` shows it, and a later
//! consolidation treats the new text as memd's own (not a hand edit it
//! must leave alone). The entry keeps its id and its facts.
//!
//! Text is stored as one block ([`crate::entries::sanitize_text`]: blank
//! lines would split it in two); an empty text is refused (forgetting is
//! `memd forget`). A category set here is the entry's own: it takes the
//! place of the categories of its facts, and an empty one clears it.
//!
//! Crash order, under the entries lock: the `EDIT` record, appended once
//! the file is known to be as read and just before the new text replaces
//! it (atomically); then the line of `MEMORY.md` naming the entry shows
//! its new text. A death between the record and the rename leaves a
//! record of a change the file does not have: `memd check` reports it, and
//! making the same edit again settles it (undoing that run does not: the
//! file already is as the run found it, so the undo has nothing to do).

use crate::consolidate::promote;
use crate::core_md::{self, CoreMd};
use crate::entries::{self, Document, text_hash};
use crate::error::{Result, bail};
use crate::ids::{EntryId, RunId};
use crate::journal::{self, Op, Stamp};
use crate::limits::MAX_FACT_BYTES;
use crate::pause::Step;
use crate::tombstones::Tombstones;
use crate::versions::Writing;
use crate::{Error, Layout, Memory, runs};

/// What to change; `None` leaves it as it is.
#[derive(Debug, Clone, Default)]
pub struct Change {
    pub text: Option<String>,
    pub pinned: Option<bool>,
    /// The entry's own category; empty clears it.
    pub category: Option<String>,
}

/// How many times the edit starts again when the entries file keeps
/// changing under it.
const ATTEMPTS: usize = 10;

/// Apply `change` to live entry `id`. The run that journaled it, or
/// `None` when the entry already was as asked.
pub fn edit(memory: &Memory, id: &EntryId, change: &Change) -> Result<Option<RunId>> {
    let text = valid_text(change.text.as_deref())?;
    let layout = &memory.layout;
    let _lock = Writing::start(memory)?;
    let stamp = Stamp::new(memory.clock);
    for _ in 0..ATTEMPTS {
        let (mut doc, original) = Document::read_for_update(&layout.entries_file())?;
        let stones = Tombstones::load(&layout.tombstones_file())?;
        let live = doc
            .get(id.as_str())
            .filter(|_| !stones.names_entry(id.as_str()));
        let Some((before_text, Some(before_meta))) = live.map(|e| (e.text.clone(), e.meta.clone()))
        else {
            return Err(Error::NotFound { id: id.to_string() });
        };
        let after_text = text.clone().unwrap_or_else(|| before_text.clone());
        let mut meta = before_meta.clone();
        if after_text != before_text {
            meta.hash = text_hash(&after_text);
            meta.updated = stamp.today();
        }
        if let Some(p) = change.pinned {
            meta.pinned = p;
        }
        if let Some(c) = &change.category {
            meta.category = Some(c.trim().to_string()).filter(|c| !c.is_empty());
        }
        if after_text == before_text && meta == before_meta {
            return Ok(None);
        }
        if let Some(e) = doc.get_mut(id.as_str()) {
            e.text = after_text.clone();
            e.meta = Some(meta.clone());
        }
        let mut r = stamp.record(Op::Edit, id.as_str());
        r.before = Some(before_text);
        r.after = Some(after_text.clone());
        r.meta_before = Some(before_meta);
        r.meta_after = Some(meta);
        let today = stamp.today();
        let saved = runs::save_journaled(
            layout,
            &mut doc,
            (original.as_deref(), &today),
            (&[r], Step::EditJournaled),
        )?;
        let Some(adopted) = saved else {
            tracing::info!("consolidated/memory.md changed during the edit; editing again");
            continue;
        };
        journal::append(&layout.journal_file(), &stamp.adoptions(&doc, &adopted))?;
        core_line(layout, id, &after_text)?;
        return Ok(Some(stamp.run));
    }
    bail!("consolidated/memory.md kept changing during the edit; nothing was changed, run it again")
}

/// The text to store, one block; an error if it is empty or too long.
fn valid_text(text: Option<&str>) -> Result<Option<String>> {
    let Some(text) = text else { return Ok(None) };
    if text.len() > MAX_FACT_BYTES {
        return Err(Error::Invalid(format!(
            "the text is {} bytes; an entry holds at most {}",
            text.len(),
            MAX_FACT_BYTES
        )));
    }
    let text = entries::sanitize_text(text);
    if text.is_empty() {
        return Err(Error::Invalid(
            "the text is empty; an edit cannot empty an entry (forget it instead)".into(),
        ));
    }
    Ok(Some(text))
}

/// The line of `MEMORY.md` naming `id`, if there is one, shows `text`.
fn core_line(layout: &Layout, id: &EntryId, text: &str) -> Result<()> {
    let md = CoreMd::read(&layout.memory_md())?;
    let mut lines = md.lines();
    let Some(line) = lines.iter_mut().find(|l| l.entry_id == *id) else {
        return Ok(());
    };
    line.text = promote::line_text(text);
    core_md::write_lines(&layout.memory_md(), &lines)?;
    Ok(())
}
