//! Review mode's invariants ([`crate::review`]): no run that proposed
//! applied an op; REVIEW.md's items name open proposals; what the next
//! carry-out will do with items gone or carried out before.

use std::collections::HashSet;

use super::{Kind, Report};
use crate::Layout;
use crate::error::Result;
use crate::journal::{Op, Record};
use crate::layout::rel;
use crate::review::sheet::Sheet;
use crate::review::{self, Proposals};
use crate::tombstones::Tombstones;

pub(super) fn check(
    layout: &Layout,
    (journal, stones): (&[Record], &Tombstones),
    report: &mut Report,
) -> Result<()> {
    let props = Proposals::load(layout)?;
    bypassed(&props, journal, report);
    for p in &props.all {
        let texts = p.entries.iter().map(|e| e.text.as_str()).chain(p.op.text());
        if texts.filter(|t| !t.is_empty()).any(|t| stones.erased(t)) {
            let what = format!(
                "proposal {} still holds a text an erasure took (running the erasure again finishes it)",
                p.item
            );
            report.problem(Kind::EraseUnfinished, rel::PROPOSALS, None, what);
        }
    }
    let sheet = match Sheet::read(&layout.review_md()) {
        Ok(s) => s,
        Err(e) => {
            report.problem(Kind::Unreadable, rel::REVIEW, None, e.to_string());
            return Ok(());
        }
    };
    for (line, text) in &sheet.unreadable {
        let what = format!(
            "not an item memd can read (`- [ ] p-…` or `- [x] p-…`), so no item gone from the file is taken as rejected: {text}"
        );
        report.note(Kind::ReviewUnreadable, rel::REVIEW, Some(*line), what);
    }
    for item in &sheet.items {
        let line = Some(item.line + 1);
        match (props.get(&item.id), props.decided.get(&item.id)) {
            (None, _) => {
                let what = format!("{} names no proposal memd made: it is left alone", item.id);
                report.note(Kind::ReviewUnknown, rel::REVIEW, line, what);
            }
            (Some(_), Some(d)) => {
                let what = format!(
                    "{} was carried out already ({:?}): the next carry-out takes its item out, applying nothing twice",
                    item.id, d.decision
                );
                report.note(Kind::ReviewDecided, rel::REVIEW, line, what);
            }
            (Some(_), None) => {}
        }
    }
    let present: HashSet<_> = sheet.ids();
    for p in props
        .open()
        .filter(|p| props.shown(&p.item) && !present.contains(&p.item))
    {
        let what = format!(
            "{}'s item is gone: the next carry-out rejects it and keeps its facts word for word ({})",
            p.item,
            review::words(p)
        );
        report.note(Kind::ReviewRejected, rel::REVIEW, None, what);
    }
    Ok(())
}

/// A run that proposed ops applied none: the journal holds no ADD,
/// REPLACE, REMOVE or KEEP of it that a judge decided. Every judge's
/// decision is journaled with the judge that made it (`model`: the LLM's,
/// "built-in", "declared", the sync's); a run's other records are not its
/// decisions. One such is the merge of an entry a person deleted by hand
/// while its twin still says the same (a REMOVE `into` the twin, with no
/// model: [`crate::consolidate::deleted_by_hand::merge_copies`]), which
/// carries out the person's edit and which a run in review makes too.
fn bypassed(props: &Proposals, journal: &[Record], report: &mut Report) {
    let proposing: HashSet<&str> = props.all.iter().map(|p| p.run.as_str()).collect();
    for r in journal
        .iter()
        .filter(|r| proposing.contains(r.run.as_str()) && r.model.is_some())
    {
        if matches!(r.op, Op::Add | Op::Replace | Op::Remove | Op::Keep) {
            let what = format!(
                "run {} proposed its ops for review and applied {:?} on {} all the same",
                r.run, r.op, r.entry
            );
            report.problem(Kind::ReviewBypassed, rel::JOURNAL, None, what);
        }
    }
}
