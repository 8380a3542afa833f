//! Tier 1: the append-only daily logs `archive/YYYY-MM-DD.md`. The one
//! rewrite is an erasure's ([`redact`], `memd forget --erase`): an erased
//! fact's item becomes a redaction line with its id and no text.
//!
//! ```text
//! # 2026-11-22
//!
//! ## 14:05:12 · session 7f3a
//! - [preference] User prefers compact dashboards
//! - User now works at Microsoft <!-- key:turn-41 -->
//! ```
//!
//! A fact is one list item; a leading `[tag]` is its category; a trailing
//! `<!-- key:K -->` is the idempotency key of the append that wrote it
//! (it renders invisibly). Before it, `<!-- supersedes:e-1 e-2 -->` names
//! the entries the fact declares no longer true (an update the agent
//! knows it makes): the next run replaces them with the fact, keeping
//! them as history. It may name pending facts too (`2026-11-22#a1b2c3d4`):
//! the next run folds them into the fact's entry as history. Level-2
//! headings carry the time and session of the facts below them: an
//! append at another second, or of another session, starts a section of
//! its own.
//!
//! A fact's id is `DAY#HASH` where HASH hashes the normalised text, and the
//! n-th occurrence of the same normalised text that day gets `.n`
//! (`2026-11-22#a1b2c3d4.2`). Because the file is only ever appended to, the
//! ids are stable however often the file is parsed. An erasure's redaction
//! line keeps its fact's place in that count (it names its id), so a fact
//! after it keeps its id too.
//!
//! Parsing goes through pulldown-cmark so that hand edits are read the way a
//! markdown viewer shows them (any bullet style, nested lists, code blocks
//! that merely look like lists); the fact text itself is taken from the raw
//! source of the item, so what is hashed is exactly what is written.
//!
//! A reader that parses the same file again and again (the index's
//! writer) keeps the parse ([`Parsed`]) and, when the file was only
//! appended to, parses again from its last top-level list item only: an
//! append to a day of 10,000 facts costs what it adds, not the day.

mod append;
mod redact;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag};
use serde::Serialize;

use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId};
use crate::layout::rel;
use crate::text::{self, norm_hash};
use crate::{Layout, atomic};

pub use append::{Appended, InvalidFact, NewFact, append, new_facts};
pub(crate) use append::{append_raw, append_unless_erased};
pub(crate) use redact::{redact, unredact};

/// One fact of a daily log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Fact {
    /// `DAY#HASH` or `DAY#HASH.N`.
    pub id: FactId,
    pub day: String,
    pub text: String,
    pub category: Option<String>,
    pub session: Option<String>,
    /// `HH:MM:SS` from the heading above the fact, when it has one.
    pub time: Option<String>,
    pub key: Option<String>,
    /// The entries this fact declares it replaces (`supersedes`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<EntryId>,
    /// The facts (pending when it was written) this fact declares it
    /// replaces.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub supersedes_facts: Vec<FactId>,
    /// 1-based line of the fact in its file.
    pub line: usize,
    /// The bytes of its list item's own text in the file (a nested list
    /// under it not included).
    #[serde(skip)]
    pub span: Range<usize>,
}

/// A redaction line: a fact erased (`memd forget --erase`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Erased {
    pub id: FactId,
    /// 1-based line in its file.
    pub line: usize,
    /// The idempotency key it was appended with: a retry of that append
    /// is answered with its id, and writes nothing.
    pub key: Option<String>,
}

/// A parsed day file.
#[derive(Debug, Default)]
pub struct Day {
    pub facts: Vec<Fact>,
    /// The facts erased from the day (`memd forget --erase`): their
    /// redaction lines, which hold no text.
    pub erased: Vec<Erased>,
    /// Problems that did not stop the parse (invalid UTF-8, empty items).
    pub warnings: Vec<String>,
}

/// Parse the text of the day file for `day`.
pub fn parse(day: &str, src: &str) -> Day {
    parse_after(day, src, None).0
}

/// A day file as parsed, kept so that the next parse of the same file,
/// grown by appends, reads only from its last top-level list item on
/// ([`Parsed::new`], [`parse_after`]): every fact before that item keeps
/// its id, text, heading and line.
pub struct Parsed {
    text: String,
    pub day: Day,
    resume: Resume,
}

/// Where a later parse of the grown text starts (the last top-level list
/// item, or the last section's start), with the heading above it, the facts and warnings before it, and how often
/// each normalised text occurred before it (for the occurrence numbers).
#[derive(Default)]
struct Resume {
    at: usize,
    heading: Heading,
    facts: usize,
    warnings: usize,
    counts: HashMap<String, usize>,
}

/// The time and session of the last level-2 heading read.
#[derive(Debug, Clone, Default)]
struct Heading {
    session: Option<String>,
    time: Option<String>,
}

impl Parsed {
    /// Parse `text`, the day file for `day`. When `before` is a parse of
    /// a text that `text` begins with and that ends a line, the parse
    /// starts where `before` says it may resume; otherwise at the top. Also
    /// returns how many of the facts come from `before` unread (0 when
    /// parsed from the top).
    pub fn new(day: &str, text: String, before: Option<Parsed>) -> (Parsed, usize) {
        let from = before
            .filter(|b| b.text.ends_with('\n') && text.starts_with(&b.text))
            .map(|mut b| {
                b.day.facts.truncate(b.resume.facts);
                b.day.warnings.truncate(b.resume.warnings);
                let resumed_at = b.resume.at;
                let line = b.text[..resumed_at].matches('\n').count() + 1;
                b.day.erased.retain(|e| e.line < line);
                (b.day, b.resume)
            });
        let kept = from.as_ref().map_or(0, |(d, _)| d.facts.len());
        let (day, resume) = parse_after(day, &text, from);
        (Parsed { text, day, resume }, kept)
    }
}

/// Parse `src` from the top, or from where `from` (the day so far and the
/// place to resume) stopped: the day, and where the next parse of `src`
/// grown by appends resumes: the last top-level list item of the last
/// section (or that section's start when it has none). Nothing before a
/// top-level item can change how it or what follows it parses (no block
/// is open there but its list), and a line appended to the file can only
/// continue the last item.
fn parse_after(day: &str, src: &str, from: Option<(Day, Resume)>) -> (Day, Resume) {
    let (mut out, mut resume) = from.unwrap_or_default();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(src.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line_of = |offset: usize| line_starts.partition_point(|&s| s <= offset);
    let sections = sections(src, resume.at);
    let mut heading = resume.heading.clone();
    let mut counts = std::mem::take(&mut resume.counts);
    // Occurrences from the resume point on, counted apart: `counts` stops
    // there, for the next parse to resume with.
    let mut after: HashMap<String, usize> = HashMap::new();
    for (i, &(at, end)) in sections.iter().enumerate() {
        let above = (heading.clone(), out.warnings.len());
        let (found, top) = section_items(src, (at, end), &mut heading, &mut out, &line_of);
        let is_last = i + 1 == sections.len();
        if is_last {
            let (at, (heading, warnings)) = top.unwrap_or((at, above));
            resume = Resume {
                at,
                heading,
                facts: out.facts.len()
                    + found
                        .iter()
                        .filter(|f| f.0 < at && f.1.erased.is_none())
                        .count(),
                warnings,
                counts: HashMap::new(),
            };
        }
        for (start, parsed, above) in found {
            // A redaction line keeps its fact's place among the day's
            // occurrences of its text: the same text written after it
            // keeps the id it had (or gets one of its own), never the
            // erased fact's.
            let hash = match &parsed.erased {
                Some(id) => id_hash(id.as_str()).to_string(),
                None => norm_hash(&parsed.text),
            };
            let n = match is_last && start >= resume.at {
                true => {
                    let n = after.entry(hash.clone()).or_insert(0);
                    *n += 1;
                    counts.get(&hash).copied().unwrap_or(0) + *n
                }
                false => {
                    let n = counts.entry(hash.clone()).or_insert(0);
                    *n += 1;
                    *n
                }
            };
            if let Some(id) = parsed.erased {
                out.erased.push(Erased {
                    id,
                    line: line_of(start),
                    key: parsed.key,
                });
                continue;
            }
            out.facts.push(Fact {
                id: FactId::new(day, &hash, n),
                day: day.to_string(),
                text: parsed.text,
                category: parsed.category,
                session: above.session,
                time: above.time,
                key: parsed.key,
                supersedes: parsed.supersedes,
                supersedes_facts: parsed.supersedes_facts,
                line: line_of(start),
                span: start..parsed.end,
            });
        }
    }
    resume.counts = counts;
    (out, resume)
}

/// A list item found: its start, its text, the heading above it.
type Found = (usize, ItemText, Heading);

/// Where a parse can resume: a start, with the heading above it and the
/// number of warnings before it.
type Mark = (usize, (Heading, usize));

/// The list items of the section `at..end` of `src`, in reading order
/// ([`Found`]), and the last top-level item's [`Mark`]. `heading` is the
/// one above the section, and then the last one in it. Empty items are
/// reported in `out`'s warnings.
fn section_items(
    src: &str,
    (at, end): (usize, usize),
    heading: &mut Heading,
    out: &mut Day,
    line_of: &dyn Fn(usize) -> usize,
) -> (Vec<Found>, Option<Mark>) {
    // Open list items: (item range, end of the item's own text, heading
    // above the item).
    let mut items: Vec<(Range<usize>, usize, Heading)> = Vec::new();
    let mut found = Vec::new();
    let mut top = None;
    let mut depth = 0usize;
    let mut open: Option<(HeadingLevel, Range<usize>)> = None;
    for (event, range) in events(src, at, end) {
        match event {
            Event::Start(Tag::Item) => {
                if depth == 1 {
                    top = Some((range.start, (heading.clone(), out.warnings.len())));
                }
                items.push((range.clone(), range.end, heading.clone()))
            }
            Event::Start(Tag::List(_)) => {
                // A nested list ends the enclosing item's own text.
                if let Some((item, own_end, ..)) = items.last_mut()
                    && *own_end == item.end
                {
                    *own_end = range.start;
                }
            }
            Event::End(pulldown_cmark::TagEnd::Item) => {
                let Some((item, own_end, above)) = items.pop() else {
                    continue;
                };
                let raw = &src[item.start..own_end.max(item.start)];
                match parse_item(raw) {
                    Some(mut parsed) => {
                        parsed.end = item.start + raw.trim_end().len();
                        found.push((item.start, parsed, above))
                    }
                    None => out.warnings.push(format!(
                        "line {}: empty list item skipped",
                        line_of(item.start)
                    )),
                }
            }
            Event::Start(Tag::Heading { level, .. }) if items.is_empty() => {
                open = Some((level, range));
            }
            Event::End(pulldown_cmark::TagEnd::Heading(_)) => {
                if let Some((HeadingLevel::H2, range)) = open.take() {
                    let raw = src[range].trim().trim_start_matches('#').trim();
                    let (time, session) = parse_session_heading(raw);
                    *heading = Heading { session, time };
                }
            }
            _ => {}
        }
        match &event {
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    // Nested items close before their parents: back in reading order.
    found.sort_by_key(|(start, ..)| *start);
    (found, top)
}

/// The markdown events of the section `at..end` of a day file, with
/// offsets into `src`. Each of memd's own headings (`## HH:MM:SS …`)
/// starts a section parsed on its own ([`sections`]), so a block a hand
/// edit opens and never closes (an HTML comment, a code fence) ends where
/// memd's next append begins, and never swallows the facts memd writes
/// after it.
fn events(src: &str, at: usize, end: usize) -> impl Iterator<Item = (Event<'_>, Range<usize>)> {
    Parser::new_ext(&src[at..end], Options::empty())
        .into_offset_iter()
        .map(move |(e, r)| (e, r.start + at..r.end + at))
}

/// The byte ranges of a day file's sections from byte `from` (the start
/// of a line) on (see [`events`]).
fn sections(src: &str, from: usize) -> Vec<(usize, usize)> {
    let mut starts = vec![from];
    let mut at = from;
    for line in src[from..].split_inclusive('\n') {
        if at > from && is_memd_heading(line) {
            starts.push(at);
        }
        at += line.len();
    }
    let ends = starts.iter().skip(1).copied().chain([src.len()]);
    starts.iter().copied().zip(ends).collect()
}

/// Whether a line is a heading memd writes: `## HH:MM:SS`, maybe with a
/// session.
fn is_memd_heading(line: &str) -> bool {
    line.strip_prefix("## ")
        .is_some_and(|h| parse_session_heading(h.trim()).0.is_some())
}

/// The hash part of a fact id (`DAY#HASH.N` → `HASH`).
/// The hash part of a fact id (`DAY#HASH.N` → `HASH`): the same for every
/// fact whose normalised text is the same.
pub(crate) fn id_hash(id: &str) -> &str {
    let h = id.split_once('#').map(|(_, h)| h).unwrap_or(id);
    h.split_once('.').map(|(h, _)| h).unwrap_or(h)
}

/// `14:05:12 · session 7f3a` → (time, session). Hand-written headings that
/// do not follow the form carry neither.
fn parse_session_heading(raw: &str) -> (Option<String>, Option<String>) {
    let (head, rest) = match raw.split_once('·') {
        Some((h, r)) => (h.trim(), Some(r.trim())),
        None => (raw.trim(), None),
    };
    let time = chrono::NaiveTime::parse_from_str(head, "%H:%M:%S")
        .or_else(|_| chrono::NaiveTime::parse_from_str(head, "%H:%M"))
        .ok()
        .map(|_| head.to_string());
    let session = rest
        .and_then(|r| r.strip_prefix("session"))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty());
    (time, session)
}

struct ItemText {
    text: String,
    category: Option<String>,
    key: Option<String>,
    supersedes: Vec<EntryId>,
    supersedes_facts: Vec<FactId>,
    /// A redaction line's fact ([`redaction`]): it has no text.
    erased: Option<FactId>,
    /// The end of the item's own text in the file.
    end: usize,
}

/// Read the raw source of one list item: marker, `[category]`, text,
/// `<!-- key:K -->`.
fn parse_item(raw: &str) -> Option<ItemText> {
    let raw = raw.trim_start();
    let rest = if let Some(r) = raw.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = raw.len() - raw.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        raw[digits..].strip_prefix(['.', ')'])?
    };
    let mut text = rest
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");

    let mut key = None;
    if text.ends_with("-->")
        && let Some(at) = text.rfind(KEY_OPEN)
    {
        let k = text[at + KEY_OPEN.len()..text.len() - 3].trim().to_string();
        if !k.is_empty() {
            key = Some(k);
        }
        text.truncate(at);
        text.truncate(text.trim_end().len());
    }
    if let Some(id) = text
        .strip_prefix(ERASED_OPEN)
        .and_then(|r| r.strip_suffix("-->"))
        .and_then(|r| r.split_whitespace().next())
        .and_then(|id| id.parse::<FactId>().ok())
    {
        return Some(ItemText {
            text: String::new(),
            category: None,
            key,
            supersedes: Vec::new(),
            supersedes_facts: Vec::new(),
            erased: Some(id),
            end: 0,
        });
    }
    let (supersedes, supersedes_facts) = take_supersedes(&mut text);

    let mut category = None;
    if let Some(inner) = text.strip_prefix('[')
        && let Some(close) = inner.find(']')
        && valid_category(&inner[..close])
        && inner[close + 1..].starts_with(' ')
    {
        category = Some(inner[..close].to_string());
        text = inner[close + 1..].trim_start().to_string();
    }

    let text = unescape_leading(&text);
    if text.is_empty() {
        return None;
    }
    Some(ItemText {
        text,
        category,
        key,
        supersedes,
        supersedes_facts,
        erased: None,
        end: 0,
    })
}

const KEY_OPEN: &str = "<!-- key:";
const ERASED_OPEN: &str = "<!-- erased:";

/// The list item of fact `f` as `text` (the day file it was parsed from)
/// holds it.
pub(crate) fn item_of<'t>(f: &Fact, text: &'t str) -> &'t str {
    text.get(f.span.clone()).unwrap_or_default()
}

const SUPERSEDES_OPEN: &str = "<!-- supersedes:";

/// The facts of `day` that declare what they supersede, each parsed from
/// its line alone (so its id lacks the `.n` of a text said earlier that
/// day): the file is read and scanned for [`SUPERSEDES_OPEN`], and only
/// the lines that carry it are parsed. A search asks this of each day of
/// its pending hits; a whole parse hashes every fact (50 ms a search at
/// 10,000 facts a day, `memd bench search-path --sizes 10000 --per-day
/// 10000`).
pub(crate) fn declaring(layout: &Layout, day: &str) -> Result<Vec<Fact>> {
    let path = layout.archive_file(day);
    if !path.exists() {
        return Ok(Vec::new());
    }
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    if memchr::memmem::find(&bytes, SUPERSEDES_OPEN.as_bytes()).is_none() {
        return Ok(Vec::new());
    }
    let text = String::from_utf8_lossy(&bytes);
    let marked = text.lines().filter(|l| l.contains(SUPERSEDES_OPEN));
    Ok(marked.flat_map(|l| parse(day, l).facts).collect())
}

/// Cut a trailing `<!-- supersedes:e-1 2026-11-22#a1b2c3d4 -->` off
/// `text`: the entry ids and the fact ids it names. A comment whose words
/// are not all entry or fact ids is left in the text (a hand edit memd
/// does not guess about stays as written).
fn take_supersedes(text: &mut String) -> (Vec<EntryId>, Vec<FactId>) {
    let none = (Vec::new(), Vec::new());
    if !text.ends_with("-->") {
        return none;
    }
    let Some(at) = text.rfind(SUPERSEDES_OPEN) else {
        return none;
    };
    let inner = &text[at + SUPERSEDES_OPEN.len()..text.len() - 3];
    let mut named = (Vec::new(), Vec::new());
    for word in inner.split_whitespace() {
        match word.parse::<FactId>() {
            Ok(fact) => named.1.push(fact),
            // Only an entry id of memd's shape: a comment of other words
            // a person wrote stays in the text.
            Err(_) if EntryId::looks_like(word) => named.0.push(EntryId::stored(word)),
            Err(_) => return none,
        }
    }
    if named.0.is_empty() && named.1.is_empty() {
        return none;
    }
    text.truncate(at);
    text.truncate(text.trim_end().len());
    named
}

fn valid_category(c: &str) -> bool {
    !c.is_empty()
        && c.len() <= 40
        && c.chars()
            .all(|ch| ch.is_alphanumeric() || ch == '-' || ch == '_')
}

/// Text that would otherwise open a markdown block inside the list item
/// (a heading, a quote, a nested list, a code fence, HTML) gets its first
/// marker backslash-escaped when written, so that it stays one plain item.
fn escape_leading(text: &str) -> String {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && text[digits..].starts_with(['.', ')']) {
        return format!("{}\\{}", &text[..digits], &text[digits..]);
    }
    if text.starts_with(['#', '>', '-', '+', '*', '=', '`', '~', '<', '|', '\\', '_']) {
        return format!("\\{text}");
    }
    text.to_string()
}

/// The inverse of [`escape_leading`].
fn unescape_leading(text: &str) -> String {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && (text[digits..].starts_with("\\.") || text[digits..].starts_with("\\)")) {
        return format!("{}{}", &text[..digits], &text[digits + 1..]);
    }
    if let Some(rest) = text.strip_prefix('\\')
        && rest.starts_with(|c: char| c.is_ascii_punctuation())
    {
        return rest.to_string();
    }
    text.to_string()
}

/// Read and parse the day file for `day`; a missing file is an empty day.
/// Invalid UTF-8 is replaced (U+FFFD) and reported in `warnings`, so one
/// damaged line never hides the other facts.
pub fn read_day(layout: &Layout, day: &str) -> Result<Day> {
    let (text, utf8_warning) = read_text(layout, day)?;
    let mut parsed = parse(day, &text);
    if let Some(w) = utf8_warning {
        parsed.warnings.insert(0, w);
    }
    Ok(parsed)
}

/// [`read_day`] for a reader that keeps the parse: parses only what was
/// appended since `before` (a parse of the same file), when it was only
/// appended to ([`Parsed::new`]). Also returns how many of the facts come
/// from `before` unread.
pub fn read_day_after(
    layout: &Layout,
    day: &str,
    before: Option<Parsed>,
) -> Result<(Parsed, usize)> {
    let (text, _) = read_text(layout, day)?;
    Ok(Parsed::new(day, text, before))
}

/// The text of the day file for `day` (empty when missing), invalid UTF-8
/// replaced, with the warning that says where (also logged).
fn read_text(layout: &Layout, day: &str) -> Result<(String, Option<String>)> {
    let path = layout.archive_file(day);
    let bytes = atomic::read_if_exists(&path)
        .with_context(|| format!("reading {}", path.display()))?
        .unwrap_or_default();
    match String::from_utf8(bytes) {
        Ok(text) => Ok((text, None)),
        Err(e) => {
            let (text, warning) = decode(e.as_bytes());
            if let Some(w) = &warning {
                tracing::warn!(file = %path.display(), "{w}");
            }
            Ok((text.into_owned(), warning))
        }
    }
}

fn decode(bytes: &[u8]) -> (std::borrow::Cow<'_, str>, Option<String>) {
    let warning = text::first_bad_byte(bytes).map(|(at, line)| {
        format!("invalid UTF-8 at byte {at} (line {line}); replaced with U+FFFD")
    });
    (String::from_utf8_lossy(bytes), warning)
}

/// Every fact of every day, oldest first, with the warnings of each file.
pub fn read_all(layout: &Layout) -> Result<(Vec<Fact>, Vec<String>)> {
    let days = read_days(layout)?;
    Ok(facts_of(
        days.iter().map(|(day, parsed)| (day.as_str(), parsed)),
    ))
}

/// Every day file, parsed, in day order.
pub fn read_days(layout: &Layout) -> Result<Vec<(String, Day)>> {
    let days = layout.archive_days()?;
    days.into_iter()
        .map(|day| {
            let parsed = read_day(layout, &day)?;
            Ok((day, parsed))
        })
        .collect()
}

/// The archive's day files, parsed, in day order, each parse shared.
pub type ParsedDays = Vec<(String, Arc<Day>)>;

/// [`read_days`], each parse shared.
pub fn read_parsed(layout: &Layout) -> Result<Arc<ParsedDays>> {
    let days = read_days(layout)?.into_iter();
    Ok(Arc::new(
        days.map(|(day, parsed)| (day, Arc::new(parsed))).collect(),
    ))
}

/// The facts of `days` (each a day and its parse, in day order), and the
/// warnings of their parse, each naming its file.
pub fn facts_of<'a>(days: impl Iterator<Item = (&'a str, &'a Day)>) -> (Vec<Fact>, Vec<String>) {
    let mut facts = Vec::new();
    let mut warnings = Vec::new();
    for (day, parsed) in days {
        warnings.extend(warnings_of(day, parsed));
        facts.extend(parsed.facts.iter().cloned());
    }
    (facts, warnings)
}

/// The warnings of the parse of `day`, each naming its file.
pub fn warnings_of(day: &str, parsed: &Day) -> Vec<String> {
    if parsed.warnings.is_empty() {
        return Vec::new();
    }
    let file = rel::archive_file(day);
    (parsed.warnings.iter())
        .map(|w| format!("{file}: {w}"))
        .collect()
}

/// The ids of every fact erased from the archive (its redaction lines).
pub fn erased_all(layout: &Layout) -> Result<Vec<FactId>> {
    let mut out = Vec::new();
    for day in layout.archive_days()? {
        out.extend(read_day(layout, &day)?.erased.into_iter().map(|e| e.id));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::memory;

    /// Lines a day file may hold: memd's own, and a hand's (other bullets,
    /// nesting, fences and comments left open, quotes, lazy continuations,
    /// restatements, empty items).
    const LINES: &[&str] = &[
        "## 10:00:00 · session a",
        "## 11:30:00",
        "## not a time",
        "# 2026-01-02",
        "- User likes tea",
        "- User likes tea",
        "- <!-- erased:{TEA} 2026-01-03T00:00:00Z -->",
        "- [pref] User likes green tea <!-- key:k1 -->",
        "- User moved to Oslo <!-- supersedes:e-1a2b3c4d -->",
        "* a starred fact",
        "+ a plus fact",
        "1. an ordered fact",
        "3) another ordered fact",
        "  - a nested fact",
        "    - deeper still",
        "    indented four",
        "a lazy continuation",
        "",
        "-",
        "```",
        "<!--",
        "-->",
        "> - a quoted fact",
        "\\- escaped dash",
    ];

    fn chunks() -> impl Strategy<Value = Vec<Vec<usize>>> {
        prop::collection::vec(prop::collection::vec(0..LINES.len(), 1..6), 1..12)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// However a day file grows, a parse that resumes from the last
        /// one gives what a parse from the top gives.
        #[test]
        fn a_parse_resumed_after_appends_equals_one_from_the_top(chunks in chunks()) {
            let mut text = String::new();
            let mut before: Option<Parsed> = None;
            let tea = FactId::new("2026-01-02", &norm_hash("User likes tea"), 1);
            for chunk in chunks {
                for i in chunk {
                    text.push_str(&LINES[i].replace("{TEA}", tea.as_str()));
                    text.push('\n');
                }
                let (resumed, kept) = Parsed::new("2026-01-02", text.clone(), before.take());
                let whole = parse("2026-01-02", &text);
                prop_assert_eq!(&resumed.day.facts, &whole.facts, "text:\n{}", text);
                prop_assert_eq!(&resumed.day.warnings, &whole.warnings, "text:\n{}", text);
                prop_assert_eq!(resumed.day.erased.len(), whole.erased.len());
                prop_assert!(kept <= whole.facts.len());
                before = Some(resumed);
            }
        }
    }

    /// The fold an append keeps is used again only for a file that grew:
    /// a restatement a hand edit put before the end between two appends
    /// is found, and the fact appended after it gets an id of its own.
    #[test]
    fn a_restatement_a_hand_edit_put_before_the_end_gets_the_next_occurrence() {
        let dir = tempfile::tempdir().unwrap();
        let layout = memory::init(dir.path()).unwrap();
        let fact = |t: &str| new_facts(vec![t.into()], None, None, None, false);
        let day = "2026-01-02";
        append(&layout, day, "10:00:00", &fact("User likes coffee")).unwrap();
        append(&layout, day, "10:00:00", &fact("User likes milk")).unwrap();
        let path = layout.archive_file(day);
        let text = std::fs::read_to_string(&path).unwrap();
        let edited = text.replace(
            "- User likes coffee",
            "- User likes TEA\n- User likes coffee",
        );
        assert_ne!(edited, text);
        std::fs::write(&path, edited).unwrap();
        let added = append(&layout, day, "10:00:01", &fact("user likes tea")).unwrap();
        let day_facts = parse(day, &std::fs::read_to_string(&path).unwrap()).facts;
        let teas: Vec<_> = day_facts
            .iter()
            .filter(|f| f.text.contains("tea") || f.text.contains("TEA"))
            .collect();
        assert_eq!(teas.len(), 2);
        assert_ne!(teas[0].id, teas[1].id);
        assert_eq!(
            added[0].id, teas[1].id,
            "the appended fact is the second occurrence"
        );
    }

    /// A file rewritten (not only appended to) is parsed from the top.
    #[test]
    fn a_rewritten_day_file_is_parsed_from_the_top() {
        let (first, _) = Parsed::new("2026-01-02", "- a\n- b\n".into(), None);
        let (again, kept) = Parsed::new("2026-01-02", "- x\n- b\n- c\n".into(), Some(first));
        assert_eq!(kept, 0);
        assert_eq!(
            again.day.facts,
            parse("2026-01-02", "- x\n- b\n- c\n").facts
        );
        let (grown, kept) = Parsed::new("2026-01-02", "- x\n- b\n- c\n- d\n".into(), Some(again));
        assert_eq!(kept, 2, "the facts before the last item are kept");
        assert_eq!(grown.day.facts.len(), 4);
    }
}
