//! Appending facts to a day file: one locked append per request, its
//! idempotency keys looked up in the days around, an erased text answered
//! as erased and never written again.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::{
    Day, KEY_OPEN, SUPERSEDES_OPEN, decode, escape_leading, id_hash, is_memd_heading, parse,
    parse_item, parse_session_heading, valid_category,
};
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId};
use crate::text::{self, norm_hash, normalize};
use crate::{Layout, atomic, pause, tombstones};

/// Append `bytes` to day `day`'s file as they are, under its lock, on a
/// line of their own (a merge's facts put back: [`crate::sync`]).
pub(crate) fn append_raw(layout: &Layout, day: &str, bytes: &[u8]) -> Result<()> {
    let path = layout.archive_file(day);
    let mut file = atomic::open_locked(&path)
        .with_context(|| format!("opening and locking {}", path.display()))?;
    let len = file.metadata()?.len();
    let raw = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let mut buf = Vec::new();
    if !raw.is_empty() && !raw.ends_with(b"\n") {
        buf.push(b'\n');
    }
    buf.extend_from_slice(bytes);
    atomic::append_whole_then(&mut file, len, &buf, true)
        .with_context(|| format!("appending to {}", path.display()))
}

/// A fact to append.
#[derive(Debug, Clone, Default)]
pub struct NewFact {
    pub text: String,
    pub category: Option<String>,
    pub session: Option<String>,
    /// Idempotency key: an append whose key is already in the archive (this
    /// day or the day before, for retries across midnight) writes nothing.
    pub key: Option<String>,
    /// Entries the fact declares it replaces (checked live by the caller).
    pub supersedes: Vec<EntryId>,
    /// Pending facts the fact declares it replaces (checked by the caller).
    pub supersedes_facts: Vec<FactId>,
}

/// The facts of one request: the same category, session and key for all;
/// with `numbered`, the N-th fact's key is `KEY#N` (a batch retried as a
/// whole then writes nothing twice).
pub fn new_facts(
    texts: Vec<String>,
    category: Option<String>,
    session: Option<String>,
    key: Option<String>,
    numbered: bool,
) -> Vec<NewFact> {
    texts
        .into_iter()
        .enumerate()
        .map(|(i, text)| NewFact {
            text,
            category: category.clone(),
            session: session.clone(),
            key: key.as_ref().map(|k| {
                if numbered {
                    format!("{k}#{}", i + 1)
                } else {
                    k.clone()
                }
            }),
            supersedes: Vec::new(),
            supersedes_facts: Vec::new(),
        })
        .collect()
}

/// [`append`] to the day file of `now`, stamped with its time, except for the facts whose text an erasure took out
/// (`memd forget --erase`): those are answered as erased
/// ([`Appended::erased`]) and nothing of them is written, so an agent
/// that says an erased text again never puts it back on disk.
pub(crate) fn append_unless_erased(
    layout: &Layout,
    now: chrono::DateTime<chrono::FixedOffset>,
    facts: &[NewFact],
) -> Result<Vec<Appended>> {
    let (day, time) = (
        now.format("%Y-%m-%d").to_string(),
        now.format("%H:%M:%S").to_string(),
    );
    append_locked(layout, (&day, &time), facts, true)
}

/// The answers to `facts`: those `written` (in order) for the ones not
/// `erased`, and an erased one's, with the id it would have had.
fn with_erased(
    facts: &[NewFact],
    erased: &[bool],
    written: Vec<Appended>,
    day: &str,
) -> Vec<Appended> {
    let mut written = written.into_iter();
    let mut out = Vec::with_capacity(facts.len());
    for (f, e) in facts.iter().zip(erased) {
        match e {
            false => out.extend(written.next()),
            true => {
                let id = FactId::new(day, &norm_hash(f.text.trim()), 1);
                let mut a = appended(f, id, day, false);
                a.erased = true;
                out.push(a);
            }
        }
    }
    out
}

/// What an append did with one fact.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Appended {
    pub id: FactId,
    pub day: String,
    pub text: String,
    pub category: Option<String>,
    pub session: Option<String>,
    /// False when the idempotency key was already written, or the text
    /// was erased: nothing new.
    pub written: bool,
    /// The text is one the user erased (`memd forget --erase`): it is not
    /// written again, and stays out (`id` is the id it would have had).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub erased: bool,
}

pub use crate::error::InvalidFact;

fn validate(i: usize, f: &NewFact) -> Result<(), InvalidFact> {
    let n = i + 1;
    let text = f.text.trim();
    if text.is_empty() {
        return Err(InvalidFact::Empty(n));
    }
    if text.contains(['\n', '\r']) {
        return Err(InvalidFact::MultiLine(n));
    }
    if text.contains(KEY_OPEN) || text.contains(SUPERSEDES_OPEN) {
        return Err(InvalidFact::ReservedMarker(n));
    }
    if let Some(c) = &f.category
        && !valid_category(c)
    {
        return Err(InvalidFact::Category(n, c.clone()));
    }
    if let Some(s) = &f.session
        && (s.trim().is_empty() || s.contains(['\n', '\r', '·']))
    {
        return Err(InvalidFact::Session(n, s.clone()));
    }
    if let Some(k) = &f.key
        && (k.is_empty() || k.len() > 200 || k.contains(char::is_whitespace) || k.contains("-->"))
    {
        return Err(InvalidFact::Key(n, k.clone()));
    }
    Ok(())
}

/// The list-item line for a fact, without its newline.
fn format_line(f: &NewFact) -> String {
    let mut line = String::from("- ");
    if let Some(c) = &f.category {
        line.push_str(&format!("[{c}] "));
    }
    line.push_str(&escape_leading(f.text.trim()));
    if !f.supersedes.is_empty() || !f.supersedes_facts.is_empty() {
        let entries = f.supersedes.iter().map(|i| i.as_str());
        let ids: Vec<&str> = entries
            .chain(f.supersedes_facts.iter().map(|i| i.as_str()))
            .collect();
        line.push_str(&format!(" {SUPERSEDES_OPEN}{} -->", ids.join(" ")));
    }
    if let Some(k) = &f.key {
        line.push_str(&format!(" {KEY_OPEN}{k} -->"));
    }
    line
}

/// Append `facts` to the day file for `day`, stamped `time` (`HH:MM:SS`).
///
/// All facts are validated first; one invalid fact writes nothing. The file
/// is locked exclusively (`fs4`) for the whole read-decide-write, written in
/// one `write` of whole lines and `fsync`ed before the lock is released, so
/// concurrent appenders from any number of processes never interleave and a
/// returned id is durable.
pub fn append(layout: &Layout, day: &str, time: &str, facts: &[NewFact]) -> Result<Vec<Appended>> {
    append_locked(layout, (day, time), facts, false)
}

/// [`append`]; with `unless_erased`, a fact whose text an erasure took out
/// (by the tombstones, read under the day file's lock, so that an erasure
/// running at the same time either redacts the line or is seen) is not
/// written, and is answered as erased ([`Appended::erased`]).
fn append_locked(
    layout: &Layout,
    (day, time): (&str, &str),
    facts: &[NewFact],
    unless_erased: bool,
) -> Result<Vec<Appended>> {
    for (i, f) in facts.iter().enumerate() {
        validate(i, f)?;
    }
    if facts.is_empty() {
        return Ok(Vec::new());
    }
    let path = layout.archive_file(day);
    let existed = path.exists();
    if !existed && let Some(done) = written_nearby(layout, day, facts)? {
        return Ok(done);
    }
    let mut file = atomic::open_locked(&path)
        .with_context(|| format!("opening and locking {}", path.display()))?;
    let erased: Vec<bool> = match unless_erased {
        true => {
            let texts: Vec<&str> = facts.iter().map(|f| f.text.as_str()).collect();
            tombstones::erased_among(&layout.tombstones_file(), &texts)?
        }
        false => vec![false; facts.len()],
    };
    let kept: Vec<NewFact> = facts
        .iter()
        .zip(&erased)
        .filter(|(_, e)| !**e)
        .map(|(f, _)| f.clone())
        .collect();
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let today = DayText::new(&path, day, decode(&bytes).0.into_owned());
    let nearby = match facts.iter().any(|f| f.key.is_some()) {
        true => nearby_days(layout, day)?,
        false => Vec::new(),
    };
    let mut buf = String::new();
    if bytes.is_empty() {
        buf.push_str(&format!("# {day}\n"));
    } else if !bytes.ends_with(b"\n") {
        buf.push('\n');
    }
    let written = lines(&mut buf, (day, time), &today, &nearby, &kept);
    let out = with_erased(facts, &erased, written, day);
    pause::at(layout, pause::Step::AppendLocked);
    if out.iter().any(|a| a.written) {
        let len = bytes.len() as u64;
        atomic::append_whole(&mut file, len, buf.as_bytes())
            .with_context(|| format!("appending to {} (nothing was written)", path.display()))?;
        if !existed {
            atomic::sync_dir(&layout.archive_dir())?;
        }
        pause::at(layout, pause::Step::AppendWritten);
    }
    Ok(out)
}

/// A retry just after midnight, or from a clock or time zone a day off:
/// when every fact has a key already written in the day file before or
/// after, what was written then (today's file is not even created).
fn written_nearby(layout: &Layout, day: &str, facts: &[NewFact]) -> Result<Option<Vec<Appended>>> {
    if !facts.iter().all(|f| f.key.is_some()) {
        return Ok(None);
    }
    let nearby = nearby_days(layout, day)?;
    let ids: Option<Vec<FactId>> = facts
        .iter()
        .map(|f| key_in(&nearby, f.key.as_deref()?))
        .collect();
    Ok(ids.map(|ids| {
        facts
            .iter()
            .zip(ids)
            .map(|(f, id)| appended(f, id, day, false))
            .collect()
    }))
}

/// Push the lines of `facts` onto `buf` (a session heading stamped `time`
/// where the session changes) and say what each fact became: a new id, or
/// the id its key already has (today, a day next to it, or earlier in
/// this batch).
fn lines(
    buf: &mut String,
    (day, time): (&str, &str),
    today: &DayText,
    nearby: &[DayText],
    facts: &[NewFact],
) -> Vec<Appended> {
    let mut keys: HashMap<String, FactId> = HashMap::new();
    let mut occurrences: HashMap<String, usize> = HashMap::new();
    let mut tail = today.tail_heading();
    let mut out = Vec::with_capacity(facts.len());
    for f in facts {
        if let Some(k) = &f.key {
            let known = keys
                .get(k)
                .cloned()
                .or_else(|| today.key_id(k))
                .or_else(|| key_in(nearby, k));
            if let Some(id) = known {
                out.push(appended(f, id, day, false));
                continue;
            }
        }
        let session = f.session.as_ref().map(|s| s.trim().to_string());
        let heading = (Some(time.to_string()), session.clone());
        if tail.as_ref() != Some(&heading) {
            buf.push('\n');
            match &session {
                Some(s) => buf.push_str(&format!("## {time} · session {s}\n")),
                None => buf.push_str(&format!("## {time}\n")),
            }
            tail = Some(heading);
        }
        let line = format_line(f);
        buf.push_str(&line);
        buf.push('\n');
        // The id comes from re-reading the written line, so it is the id
        // every later parse will give it.
        let item = parse_item(&line).expect("a validated fact parses");
        let hash = norm_hash(&item.text);
        let n = occurrences
            .entry(hash.clone())
            .or_insert_with(|| today.occurrences(&item.text, &hash));
        *n += 1;
        let id = FactId::new(day, &hash, *n);
        if let Some(k) = &f.key {
            keys.insert(k.clone(), id.clone());
        }
        out.push(Appended {
            id,
            day: day.to_string(),
            text: item.text,
            category: item.category,
            session,
            written: true,
            erased: false,
        });
    }
    out
}

/// How many days either side of its own a retried append looks for its
/// key. Local time runs from UTC-12 to UTC+14, so the same instant falls
/// on days up to two apart in two time zones.
const KEY_DAYS_AROUND: i64 = 2;

/// The day files a retry of an append on `day` may have written: those up
/// to [`KEY_DAYS_AROUND`] days before and after (the ones that exist).
fn nearby_days(layout: &Layout, day: &str) -> Result<Vec<DayText>> {
    let Ok(d) = chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d") else {
        return Ok(Vec::new());
    };
    (-KEY_DAYS_AROUND..=KEY_DAYS_AROUND)
        .filter(|n| *n != 0)
        .filter_map(|n| d.checked_add_signed(chrono::Duration::days(n)))
        .map(|d| d.format("%Y-%m-%d").to_string())
        .filter(|d| layout.archive_file(d).exists())
        .map(|d| DayText::read(layout, &d))
        .collect()
}

/// The id key `k` already has in one of `days`.
fn key_in(days: &[DayText], k: &str) -> Option<FactId> {
    days.iter().find_map(|d| d.key_id(k))
}

/// The text of a day file as the append path sees it. Appends must cost
/// what they add, not the size of the day, so the file is parsed only when
/// a cheap exact prefilter finds a candidate: an earlier restatement of the
/// new fact (whose occurrence number the id needs) or a retried key.
struct DayText {
    path: std::path::PathBuf,
    day: String,
    src: String,
    /// Lowercased with whitespace folded: a superset test for normalised
    /// texts, since normalising never splits or joins words ([`folded`]).
    folded: std::cell::OnceCell<Arc<str>>,
    parsed: std::cell::OnceCell<Day>,
    /// Every idempotency key in the text, by one scan: a retried batch of
    /// n keyed facts looks each up in constant time instead of scanning
    /// the day once per fact (a 40k-fact retry was quadratic).
    keys: std::cell::OnceCell<HashSet<String>>,
    /// Key → fact id, from the parse, built once.
    key_ids: std::cell::OnceCell<HashMap<String, FactId>>,
    /// Occurrence lookups so far, and past [`PREFILTER_LOOKUPS`] the
    /// count of each hash, from one parse.
    asked: std::cell::Cell<usize>,
    counts: std::cell::OnceCell<HashMap<String, usize>>,
}

/// Occurrence lookups answered by a substring search of the day before
/// the day's hashes are counted once instead. One `memd add` needs one
/// lookup and must not parse a large day for it; a batch of n facts
/// searched the day n times (20,000 facts into a 40,000-fact day: 4.3 s).
const PREFILTER_LOOKUPS: usize = 32;

/// The folds of the day files this process appended to last, with the
/// text each was made from: an append folds only what was added since
/// (the text before is checked to be unchanged, byte for byte), not the
/// whole day again. Folding a 1,300-fact day file that held one curly
/// quote was a quarter of a daemon's CPU under back-to-back appends.
static FOLDS: Mutex<Vec<KeptFold>> = Mutex::new(Vec::new());

/// A day file's path, its text as it was folded, and the fold.
type KeptFold = (std::path::PathBuf, Arc<str>, Arc<str>);

/// Day files whose folds are kept (a daemon serving several memories
/// appends to each one's today).
const FOLDS_KEPT: usize = 8;

/// [`crate::text::fold`] of `src`, the text of the day file at `path`.
fn folded(path: &Path, src: &str) -> Arc<str> {
    let before = {
        let folds = FOLDS.lock().unwrap();
        folds.iter().find(|(p, ..)| p == path).cloned()
    };
    let grown = before
        .as_ref()
        .filter(|(_, old, _)| src.starts_with(&**old) && (old.is_empty() || old.ends_with('\n')));
    let folded: Arc<str> = match grown {
        Some((_, old, fold)) => text::fold_extended(fold, &src[old.len()..]).into(),
        None => text::fold(src).into(),
    };
    let mut folds = FOLDS.lock().unwrap();
    folds.retain(|(p, ..)| p != path);
    folds.truncate(FOLDS_KEPT - 1);
    folds.insert(0, (path.to_path_buf(), src.into(), folded.clone()));
    folded
}

impl DayText {
    fn new(path: &Path, day: &str, src: String) -> DayText {
        DayText {
            path: path.to_path_buf(),
            day: day.to_string(),
            src,
            folded: Default::default(),
            parsed: Default::default(),
            keys: Default::default(),
            key_ids: Default::default(),
            asked: Default::default(),
            counts: Default::default(),
        }
    }

    fn read(layout: &Layout, day: &str) -> Result<DayText> {
        let path = layout.archive_file(day);
        let bytes = atomic::read_if_exists(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .unwrap_or_default();
        Ok(DayText::new(&path, day, decode(&bytes).0.into_owned()))
    }

    fn parsed(&self) -> &Day {
        self.parsed.get_or_init(|| parse(&self.day, &self.src))
    }

    /// The id of the fact written with idempotency key `key`, if any.
    fn key_id(&self, key: &str) -> Option<FactId> {
        let keys = self.keys.get_or_init(|| {
            self.src
                .match_indices(KEY_OPEN)
                .filter_map(|(at, _)| {
                    let rest = &self.src[at + KEY_OPEN.len()..];
                    Some(rest[..rest.find(" -->")?].to_string())
                })
                .collect()
        });
        if !keys.contains(key) {
            return None;
        }
        let ids = self.key_ids.get_or_init(|| {
            let day = self.parsed();
            let facts = day.facts.iter().map(|f| (&f.key, &f.id));
            let erased = day.erased.iter().map(|e| (&e.key, &e.id));
            let keyed = facts
                .chain(erased)
                .filter_map(|(k, id)| Some((k.clone()?, id.clone())));
            let mut ids = HashMap::new();
            for (k, id) in keyed {
                ids.entry(k).or_insert(id); // the first fact written with it
            }
            ids
        });
        ids.get(key).cloned()
    }

    /// How many facts of the day already have the normalised hash `hash`.
    fn occurrences(&self, text: &str, hash: &str) -> usize {
        let asked = self.asked.get() + 1;
        self.asked.set(asked);
        if asked > PREFILTER_LOOKUPS {
            let counts = self.counts.get_or_init(|| {
                let mut counts = HashMap::new();
                for id in self.ids() {
                    *counts.entry(id_hash(id).to_string()).or_default() += 1;
                }
                counts
            });
            return counts.get(hash).copied().unwrap_or(0);
        }
        let folded = self.folded.get_or_init(|| folded(&self.path, &self.src));
        // A redaction line says its hash, not its text.
        let erased = self.src.contains(&format!("#{hash}"));
        if !erased && !folded.contains(&normalize(text)) {
            return 0;
        }
        self.ids().filter(|id| id_hash(id) == hash).count()
    }

    /// The ids of the day's facts and of its redaction lines (each holds
    /// its place among the occurrences of its text).
    fn ids(&self) -> impl Iterator<Item = &str> {
        let day = self.parsed();
        let facts = day.facts.iter().map(|f| f.id.as_str());
        facts.chain(day.erased.iter().map(|e| e.id.as_str()))
    }

    /// The time and session of the last section's heading (`None`: there
    /// is none, or it holds a line that may open a block a hand edit left
    /// unclosed, so the next append starts a section of its own: see
    /// [`events`]). An append under another time or session starts a
    /// section of its own, so that each fact's heading says when it was
    /// written, to the second (what a search as of a time reads).
    fn tail_heading(&self) -> Option<(Option<String>, Option<String>)> {
        let tail = self.src.lines().rev().take_while(|l| !is_memd_heading(l));
        let open = |l: &str| {
            let l = l.trim_start_matches(' ');
            l.starts_with("```") || l.starts_with("~~~") || l.starts_with('<')
        };
        if tail.clone().any(open) {
            return None;
        }
        self.src
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("## "))
            .map(|h| parse_session_heading(h.trim()))
    }
}

fn appended(f: &NewFact, id: FactId, day: &str, written: bool) -> Appended {
    Appended {
        id,
        day: day.to_string(),
        text: f.text.trim().to_string(),
        category: f.category.clone(),
        session: f.session.clone(),
        written,
        erased: false,
    }
}
