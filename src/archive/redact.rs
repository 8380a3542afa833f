//! The one sanctioned rewrite of the archive: an erased fact's list item
//! becomes a redaction line with its id and no text ([`redact`]), and a
//! redaction no erasure accounts for is put back ([`unredact`]).

use super::{ERASED_OPEN, Erased, Fact, KEY_OPEN, decode, parse};
use crate::error::{Context, Result, bail};
use crate::ids::FactId;
use crate::{Layout, atomic};

/// The line an erased fact's list item becomes (`memd forget --erase`):
/// its id and the time of the erasure, its idempotency key (so that a
/// retried append is still known as written), nothing of its text.
/// Appended text never reads as one: a fact opening with `<` is escaped.
pub(crate) fn redaction(f: &Fact, ts: &str) -> String {
    let key = f
        .key
        .as_ref()
        .map(|k| format!(" {KEY_OPEN}{k} -->"))
        .unwrap_or_default();
    format!("- {ERASED_OPEN}{} {ts} -->{key}", f.id)
}

/// Rewrite the list items of the facts of day `day` that `gone` picks as
/// redaction lines ([`redaction`]), atomically and under the day file's
/// lock (an append waits, then finds the file the path names:
/// [`crate::atomic::open_locked`]): the one sanctioned rewrite of the
/// archive. Every other byte stays as it was, invalid UTF-8 included (the
/// items are found in the decoded text and replaced line for line in the
/// bytes). Returns how many were rewritten (0: the file is untouched).
pub(crate) fn redact(
    layout: &Layout,
    day: &str,
    gone: &dyn Fn(&Fact) -> bool,
    ts: &str,
) -> Result<usize> {
    let path = layout.archive_file(day);
    if !path.exists() {
        return Ok(0);
    }
    let _lock = atomic::open_locked(&path)
        .with_context(|| format!("opening and locking {}", path.display()))?;
    let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let src = decode(&raw).0;
    let parsed = parse(day, &src);
    let mut gone: Vec<&Fact> = parsed.facts.iter().filter(|f| gone(f)).collect();
    if gone.is_empty() {
        return Ok(0);
    }
    gone.sort_by_key(|f| std::cmp::Reverse(f.span.start));
    let (text_lines, raw_lines) = (line_starts(src.as_bytes()), line_starts(&raw));
    let mut out = raw.clone();
    for f in &gone {
        let line = text_lines.partition_point(|&s| s <= f.span.start) - 1;
        let last = text_lines.partition_point(|&s| s < f.span.end) - 1;
        let indent = &src[text_lines[line]..f.span.start];
        if !indent.is_ascii() {
            bail!(
                "archive/{day}.md line {}: the item to erase opens after bytes memd cannot read; mend them by hand first",
                line + 1
            );
        }
        let from = raw_lines[line] + indent.len();
        let to = raw_lines.get(last + 1).map_or(raw.len(), |&n| n);
        let to = from.max(
            to - raw[..to]
                .iter()
                .rev()
                .take_while(|&&b| b == b'\n' || b == b'\r')
                .count(),
        );
        out.splice(from..to, redaction(f, ts).into_bytes());
    }
    atomic::write(&path, &out).with_context(|| format!("rewriting {}", path.display()))?;
    Ok(gone.len())
}

/// Put back facts of day `day` whose lines are redactions, each as
/// `items` gives its list item (fact id → the item as a copy that holds
/// it live wrote it): a redaction no erasure receipt accounts for is not
/// an erasure (a remote's, [`crate::sync`]). Atomically and under the day
/// file's lock, as [`redact`]; each redaction line's indent stays. Returns
/// the ids put back.
pub(crate) fn unredact(
    layout: &Layout,
    day: &str,
    items: &std::collections::HashMap<FactId, String>,
) -> Result<Vec<FactId>> {
    let path = layout.archive_file(day);
    let _lock = atomic::open_locked(&path)
        .with_context(|| format!("opening and locking {}", path.display()))?;
    let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let parsed = parse(day, &decode(&raw).0);
    let mut back: Vec<(&Erased, &String)> = parsed
        .erased
        .iter()
        .filter_map(|e| items.get(&e.id).map(|item| (e, item)))
        .collect();
    if back.is_empty() {
        return Ok(Vec::new());
    }
    back.sort_by_key(|(e, _)| std::cmp::Reverse(e.line));
    let starts = line_starts(&raw);
    let mut out = raw.clone();
    for (e, item) in &back {
        let from = starts[e.line - 1];
        let end = starts.get(e.line).map_or(raw.len(), |&n| n);
        let line = &raw[from..end];
        let indent = line
            .iter()
            .take_while(|b| **b == b' ' || **b == b'\t')
            .count();
        let text_end = end
            - line
                .iter()
                .rev()
                .take_while(|b| **b == b'\n' || **b == b'\r')
                .count();
        out.splice(from + indent..text_end, item.trim_end().bytes());
    }
    atomic::write(&path, &out).with_context(|| format!("rewriting {}", path.display()))?;
    Ok(back.iter().map(|(e, _)| e.id.clone()).collect())
}

/// The offset of each line's first byte.
fn line_starts(bytes: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect()
}
