//! What undoing one journal record calls for ([`Verdict`]): steps that
//! move entries back, nothing, or a reason to leave the entry as it is
//! (it changed since the run).

use super::{Slot, Step};
use crate::entries::{Document, Entry, Meta, text_hash};
use crate::ids::{EntryId, FactId};
use crate::journal::{Op, Record};
use crate::remedy::Remedy;

/// What undoing one record calls for.
pub(super) enum Verdict {
    Steps(Vec<Step>),
    /// Already as the run found it.
    Done,
    Left(String),
    /// Left, and what the caller can do instead.
    LeftFor(String, Remedy),
    /// Nothing to undo or report (metadata given to a hand-written block).
    Nothing,
}

pub(super) fn slot(doc: &Document, id: &str) -> Slot {
    let e = doc.get(id)?;
    Some((e.text.clone(), e.meta.clone()?))
}

pub(super) fn same_text(a: &str, b: Option<&String>) -> bool {
    b.is_some_and(|b| a.trim() == b.trim())
}

pub(super) fn same_slot(a: &Slot, b: &Slot) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some((ta, ma)), Some((tb, mb))) => ta.trim() == tb.trim() && ma == mb,
        _ => false,
    }
}

pub(super) fn without(meta: &Meta, sources: &[FactId]) -> Meta {
    let mut m = meta.clone();
    m.sources.retain(|s| !sources.contains(s));
    m
}

/// Put `meta` (current) back to before `r`: the op's facts out, and what
/// the op stamped (`updated`, the review mark, the hash) as it was.
pub(super) fn meta_before_op(meta: &Meta, r: &Record, text: &str) -> Meta {
    let mut m = without(meta, &r.sources);
    m.hash = text_hash(text);
    if let Some(was) = &r.meta_before {
        m.updated = was.updated.clone();
        m.unreviewed = was.unreviewed;
        m.hash = was.hash.clone();
    }
    m
}

pub(super) fn step(entry: &str, from: Slot, to: Slot) -> Verdict {
    Verdict::Steps(vec![Step {
        entry: entry.to_string(),
        from,
        to,
    }])
}

pub(super) const CHANGED: &str = "changed since the run (by hand or by a later run): left as it is";

pub(super) fn undo_add(doc: &Document, r: &Record) -> Verdict {
    let Some((text, meta)) = slot(doc, &r.entry) else {
        return Verdict::Done;
    };
    if !same_text(&text, r.after.as_ref()) {
        return Verdict::Left(CHANGED.into());
    }
    if meta.sources.iter().any(|s| !r.sources.contains(s)) {
        return Verdict::Left("facts were folded into it since the run: left as it is".into());
    }
    step(&r.entry, Some((text, meta)), None)
}

pub(super) fn undo_replace(doc: &Document, r: &Record) -> Verdict {
    let (Some(before), Some((text, meta))) = (&r.before, slot(doc, &r.entry)) else {
        return Verdict::Left("no longer in the file".into());
    };
    if !same_text(&text, r.after.as_ref()) {
        return match same_text(&text, Some(before)) {
            true => Verdict::Done,
            false => Verdict::Left(CHANGED.into()),
        };
    }
    let to = meta_before_op(&meta, r, before);
    step(&r.entry, Some((text, meta)), Some((before.clone(), to)))
}

pub(super) fn undo_keep(doc: &Document, r: &Record) -> Verdict {
    let Some((text, meta)) = slot(doc, &r.entry) else {
        return Verdict::Left("no longer in the file".into());
    };
    if !meta.sources.iter().any(|s| r.sources.contains(s)) {
        return Verdict::Done;
    }
    if doc.get(&r.entry).is_some_and(Entry::edited_by_hand) {
        return Verdict::Left("edited by hand since the run: left as it is".into());
    }
    let to = meta_before_op(&meta, r, &text);
    step(&r.entry, Some((text.clone(), meta)), Some((text, to)))
}

/// A merge undone: the entry back, and its facts out of the survivor.
pub(super) fn undo_remove(doc: &Document, r: &Record, today: &str) -> Verdict {
    let Some(before) = &r.before else {
        return Verdict::Left("the journal does not hold its text".into());
    };
    if let Some((text, _)) = slot(doc, &r.entry) {
        return match text.trim() == before.trim() {
            true => Verdict::Done,
            false => Verdict::Left("an entry with its id is in the file".into()),
        };
    }
    let meta = r.meta_before.clone().unwrap_or_else(|| {
        let mut m = doc.new_meta(before, today, r.sources.clone());
        m.id = EntryId::stored(&r.entry);
        m.hash = text_hash(before);
        m
    });
    let mut steps = vec![Step {
        entry: r.entry.clone(),
        from: None,
        to: Some((before.clone(), meta)),
    }];
    if let Some(into) = &r.into
        && let Some((text, m)) = slot(doc, into)
        && m.sources.iter().any(|s| r.sources.contains(s))
    {
        let to = without(&m, &r.sources);
        steps.push(Step {
            entry: into.to_string(),
            from: Some((text.clone(), m)),
            to: Some((text, to)),
        });
    }
    Verdict::Steps(steps)
}

/// An undo (or an edit) undone: the entry back to the state it found.
pub(super) fn undo_whole(doc: &Document, r: &Record) -> Verdict {
    let now = slot(doc, &r.entry);
    let after = r.after.clone().zip(r.meta_after.clone());
    let before = r.before.clone().zip(r.meta_before.clone());
    if same_slot(&now, &after) {
        step(&r.entry, now, before)
    } else if same_slot(&now, &before) {
        Verdict::Done
    } else {
        Verdict::Left(CHANGED.into())
    }
}

pub(super) fn verdict(doc: &Document, r: &Record, today: &str) -> Verdict {
    if r.erased.is_some() {
        return Verdict::Left("erased: its texts are gone".into());
    }
    match r.op {
        Op::Add => undo_add(doc, r),
        Op::Replace => undo_replace(doc, r),
        Op::Keep => undo_keep(doc, r),
        Op::Remove => undo_remove(doc, r, today),
        Op::Undo | Op::Edit => undo_whole(doc, r),
        Op::Adopt => Verdict::Nothing,
        Op::Forget | Op::Unforget => Verdict::LeftFor(
            "forgotten (an undo of a run does not bring it back)".into(),
            Remedy::Unforget {
                id: r.entry.to_string(),
            },
        ),
        Op::HandRemove => Verdict::LeftFor(
            "deleted by hand".into(),
            Remedy::Unforget {
                id: r.entry.to_string(),
            },
        ),
        Op::Suppress => {
            let forgotten = r.into.as_deref().unwrap_or(r.entry.as_str());
            Verdict::LeftFor(
                format!("kept out as a restatement of forgotten {forgotten}"),
                Remedy::Unforget {
                    id: forgotten.to_string(),
                },
            )
        }
    }
}
