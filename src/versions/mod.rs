//! `consolidated/versions.jsonl`: every version of the entries file
//! (`consolidated/memory.md`) and of MEMORY.md's generated lines, so that
//! either can be shown as it was at any past time (`memd show --as-of`,
//! `memd search --as-of`).
//!
//! **Why a file of its own.** The journal records each op's text before
//! and after, but not where an entry stood in the file, nor its metadata
//! after most ops, nor anything a person wrote by hand: replaying it
//! cannot give the file back byte for byte. A version here is the file
//! itself, stored compactly: the file is cut into chunks (one per entry,
//! its metadata line first; one per generated line of MEMORY.md), each
//! chunk's text is stored once under its hash, and a version lists its
//! chunks as runs of the previous version's (`[start, len]`) and hashes
//! of chunks. A run that changes a few entries of a thousand writes a few
//! hundred bytes.
//!
//! **When a version is recorded.** Every writer of the two files holds the
//! entries lock ([`crate::entries::lock`]), taken through [`Writing`]:
//! - on taking it, the files as memd finds them, when they differ from the
//!   last version: a hand edit, a write an older memd made, or one a crash
//!   cut short. Such a version is `found`, dated by the file's
//!   modification time plus the most that time may lag the write
//!   ([`crate::stamp::written_by`]: the file system's clock is coarser than
//!   memd's);
//! - on letting it go, the files as the writer leaves them (`memd`),
//!   dated by the memory's clock, with the hash of the files as it found
//!   them (`from`).
//!
//! **What is known.** A version holds from its time until the next one. A
//! `found` version after it means the file changed at a time memd does not
//! know (the file's time is its last change), so the time between the
//! two is unknowable, and so is the time between a version and a `memd`
//! version that found something else (`from`: a change memd did not
//! record). After the last version, the files on disk say: unchanged, it
//! still holds; changed, the files hold from their modification time
//! (with the same allowance) and the time before is unknowable. What a person never let memd see
//! (edited twice between two writes) memd cannot know, and says so.
//!
//! **Forgetting and erasure.** A version is the file as it was, forgotten
//! entries included; search as of a time still leaves out everything
//! forgotten since (forgetting is permanent). An erasure
//! ([`crate::erase`]) takes the chunks holding its texts out of this file
//! ([`erase`]): a version that held one is unknowable from then on.
//!
//! # Crash semantics
//!
//! Versions are appended whole ([`crate::jsonl::append`]). A crash before
//! a write's version is recorded leaves the file as written: the next
//! writer finds it and records it as `found`, dated by the file's time.
//! A version that cannot be written (a full disk) is logged and skipped:
//! the files are the truth, and the next version records them. A writer
//! reads the last versions from `.memd/versions-tail.json` (derived,
//! written after each writer, for the versions file's length and time);
//! a tail that is missing, torn or of another state of the file is not
//! read, and the history is read instead. The tail also holds the two
//! files' stamps as last hashed ([`seen`]): a writer that finds them so,
//! and leaves them so, reads neither. A crash between a write and its
//! tail leaves stamps the file no longer has, which prove nothing.

mod as_of;
mod merge;
mod on_disk;
mod seen;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, FixedOffset, SecondsFormat};
use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::core_md::Line;
use crate::entries::{self, Document, META_OPEN};
use crate::error::{Context, Result};
use crate::ids::{EntryId, FactId};
use crate::jsonl::{self, BadLine};
use crate::lock::Guard;
use crate::text::short_hash;
use crate::{Layout, Memory, atomic, json_head};

use self::on_disk::read_now;
use self::seen::Seen;

pub use as_of::{Then, as_of, parse_time};
pub(crate) use merge::{erase, merge};

/// Which file a version is of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum File {
    /// `consolidated/memory.md`, whole.
    Memory,
    /// MEMORY.md's generated lines (between its markers).
    Core,
}

const FILES: [File; 2] = [File::Memory, File::Core];

/// Who left a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum By {
    /// A writer of memd, dated by the memory's clock.
    Memd,
    /// As memd found it (a hand edit, or a write whose version a crash
    /// cut short), dated by the file's modification time.
    Found,
}

/// A version's chunk list, piece by piece.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
enum Piece {
    /// Chunks `[start, start + len)` of the previous version of the file.
    Run([usize; 2]),
    /// One chunk, by hash.
    Chunk(String),
}

/// Read by hand: serde's untagged enums buffer every value first, which
/// was most of reading a version of 10,000 entries.
impl<'de> Deserialize<'de> for Piece {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Piece, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Piece;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a chunk's hash or [start, len]")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> std::result::Result<Piece, E> {
                Ok(Piece::Chunk(s.to_string()))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<Piece, A::Error> {
                let mut next = || -> std::result::Result<usize, A::Error> {
                    seq.next_element()?
                        .ok_or_else(|| serde::de::Error::custom("a run is [start, len]"))
                };
                let (start, len) = (next()?, next()?);
                match seq.next_element::<serde::de::IgnoredAny>()? {
                    None => Ok(Piece::Run([start, len])),
                    Some(_) => Err(serde::de::Error::custom("a run is [start, len]")),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// One line of the file (`C`: a chunk's value, its text or `null` when
/// erased).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record<C = Option<String>> {
    /// RFC 3339, to the microsecond.
    pub ts: String,
    pub file: File,
    pub by: By,
    /// The content's hash ([`sha`]).
    pub sha: String,
    /// For `memd`: the hash of the content as the writer found it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// `None`: the file could not be read as text then (missing, not
    /// UTF-8, or MEMORY.md without its markers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pieces: Option<Vec<Piece>>,
    /// Chunks first seen in this version, by hash (`None`: erased).
    #[serde(default = "BTreeMap::new", skip_serializing_if = "BTreeMap::is_empty")]
    chunks: BTreeMap<String, C>,
    /// When an erasure took chunks out of this record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub erased: Option<String>,
}

/// The hash a version records of its content (`None`: unreadable).
fn sha(content: Option<&str>) -> String {
    content.map_or_else(|| "none".to_string(), |c| short_hash(c, 16))
}

fn chunk_hash(chunk: &str) -> String {
    short_hash(chunk, 16)
}

/// `content` in chunks whose concatenation is `content`: the entries
/// file before each metadata line, MEMORY.md's generated part by line.
fn chunks(file: File, content: &str) -> Vec<&str> {
    let mut cuts = vec![0];
    let mut at = 0;
    for line in content.split_inclusive('\n') {
        if at > 0 && (file == File::Core || line.starts_with(META_OPEN)) {
            cuts.push(at);
        }
        at += line.len();
    }
    cuts.push(content.len());
    cuts.windows(2)
        .map(|w| &content[w[0]..w[1]])
        .filter(|c| !c.is_empty())
        .collect()
}

/// `next` as runs of `prev` and single chunks.
fn encode(prev: &[Arc<str>], next: &[String]) -> Vec<Piece> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, h) in prev.iter().enumerate() {
        first.entry(h).or_insert(i);
    }
    let mut out: Vec<Piece> = Vec::new();
    for h in next {
        if let Some(Piece::Run([s, l])) = out.last_mut()
            && prev.get(*s + *l).is_some_and(|p| **p == **h)
        {
            *l += 1;
            continue;
        }
        out.push(match first.get(h.as_str()) {
            Some(&i) => Piece::Run([i, 1]),
            None => Piece::Chunk(h.clone()),
        });
    }
    out
}

/// One version of one file, replayed (its chunk list is kept only for
/// the last version and the one a time asks for: see [`Track`]).
#[derive(Debug, Clone)]
pub struct Version {
    pub ts: DateTime<FixedOffset>,
    pub by: By,
    pub sha: String,
    pub from: Option<String>,
    /// The file could be read as text (it has a chunk list).
    readable: bool,
    /// A run named chunks the previous version does not have, or a chunk
    /// no record stores.
    broken: bool,
    /// A chunk an erasure took.
    erased: bool,
}

/// A version's chunk list.
type List = Arc<Vec<Arc<str>>>;

/// One file's versions, the last one's chunk list (what the next record
/// is read against), and the list of the version a time chose.
#[derive(Debug, Default)]
struct Track {
    versions: Vec<Version>,
    last: Option<List>,
    chosen: Option<(usize, List)>,
}

/// What the versions file holds of one chunk.
#[derive(Debug, Clone)]
enum Stored {
    /// Its text, and the file whose version first stored it.
    Text(File, String),
    /// Stored, its text not read (what a writer needs to know).
    Kept,
    /// Taken out by an erasure.
    Erased,
}

/// A chunk's value in a record, read with its text or without.
trait ChunkValue {
    fn stored(self, file: File) -> Stored;
}

impl ChunkValue for Option<String> {
    fn stored(self, file: File) -> Stored {
        self.map_or(Stored::Erased, |t| Stored::Text(file, t))
    }
}

impl ChunkValue for Option<serde::de::IgnoredAny> {
    fn stored(self, _: File) -> Stored {
        self.map_or(Stored::Erased, |_| Stored::Kept)
    }
}

/// A record read without its chunks' texts.
type Head = Record<Option<serde::de::IgnoredAny>>;

/// The one `Arc` of `hash` (a new one for a hash no record stores).
fn intern(chunks: &HashMap<Arc<str>, Stored>, hash: &str) -> Arc<str> {
    match chunks.get_key_value(hash) {
        Some((k, _)) => k.clone(),
        None => Arc::from(hash),
    }
}

/// The versions file, replayed: every version of each file, and the
/// chunks (with their texts, or, for a writer, without).
#[derive(Debug, Default)]
pub struct History {
    chunks: HashMap<Arc<str>, Stored>,
    memory: Track,
    core: Track,
    /// The time whose versions' chunk lists are kept ([`History::at`]).
    at: Option<DateTime<FixedOffset>>,
    /// Lines that do not parse, or whose time does not.
    pub unreadable: Vec<usize>,
}

impl History {
    /// Every version, with every chunk's text, keeping the chunk lists of
    /// the last versions and (`at`) of the versions that time asks for.
    pub fn load(layout: &Layout, at: Option<DateTime<FixedOffset>>) -> Result<History> {
        let (records, bad) = jsonl::read::<Record>(&layout.versions_file())?;
        Ok(History::of(records, &bad, at))
    }

    /// Every version, without the chunks' texts: what a writer compares
    /// and appends to. (At 10,000 entries the texts are most of the file.)
    fn heads(layout: &Layout) -> Result<History> {
        let (records, bad) = jsonl::read::<Head>(&layout.versions_file())?;
        Ok(History::of(records, &bad, None))
    }

    fn of<C: ChunkValue>(
        records: Vec<Record<C>>,
        bad: &[BadLine],
        at: Option<DateTime<FixedOffset>>,
    ) -> History {
        let mut h = History {
            unreadable: bad.iter().map(|b| b.line).collect(),
            at,
            ..History::default()
        };
        for r in records {
            h.replay(r);
        }
        h
    }

    fn track(&self, file: File) -> &Track {
        match file {
            File::Memory => &self.memory,
            File::Core => &self.core,
        }
    }

    fn versions(&self, file: File) -> &[Version] {
        &self.track(file).versions
    }

    fn store<C: ChunkValue>(&mut self, file: File, chunks: BTreeMap<String, C>) {
        for (hash, value) in chunks {
            let value = value.stored(file);
            match self.chunks.get_mut(hash.as_str()) {
                // A text stored twice is the same text; erased is final.
                Some(slot) if !matches!(value, Stored::Erased) => {
                    if matches!(slot, Stored::Kept) {
                        *slot = value;
                    }
                }
                Some(slot) => *slot = value,
                None => {
                    self.chunks.insert(Arc::from(hash.as_str()), value);
                }
            }
        }
    }

    fn replay<C: ChunkValue>(&mut self, r: Record<C>) {
        let Ok(ts) = DateTime::parse_from_rfc3339(&r.ts) else {
            return;
        };
        self.store(r.file, r.chunks);
        let chosen = self.at.is_some_and(|at| ts <= at);
        let chunks = &self.chunks;
        let track = match r.file {
            File::Memory => &mut self.memory,
            File::Core => &mut self.core,
        };
        let prev: &[Arc<str>] = track.last.as_deref().map_or(&[], |l| l.as_slice());
        let (mut broken, mut erased) = (false, false);
        let list = r.pieces.map(|pieces| {
            let mut out = Vec::with_capacity(prev.len());
            for p in pieces {
                match p {
                    Piece::Run([s, l]) => match prev.get(s..s.saturating_add(l)) {
                        Some(run) => out.extend_from_slice(run),
                        None => broken = true,
                    },
                    Piece::Chunk(h) => out.push(intern(chunks, &h)),
                }
            }
            Arc::new(out)
        });
        for h in list.iter().flat_map(|l| l.iter()) {
            match chunks.get(h) {
                Some(Stored::Erased) => erased = true,
                Some(_) => {}
                None => broken = true,
            }
        }
        if chosen {
            track.chosen = Some((track.versions.len(), list.clone().unwrap_or_default()));
        }
        track.versions.push(Version {
            ts,
            by: r.by,
            sha: r.sha,
            from: r.from,
            readable: list.is_some(),
            broken,
            erased,
        });
        track.last = list;
    }

    /// The content of version `i` of `file` (the last, or the one the
    /// time it was loaded for chose), or why it cannot be given.
    fn content(&self, file: File, i: usize) -> std::result::Result<Option<String>, Lost> {
        let track = self.track(file);
        let v = &track.versions[i];
        if !v.readable {
            return Ok(None);
        }
        if v.erased {
            return Err(Lost::Erased);
        }
        let list = match &track.chosen {
            Some((c, list)) if *c == i => list.clone(),
            _ if i + 1 == track.versions.len() => track.last.clone().unwrap_or_default(),
            _ => return Err(Lost::Damaged),
        };
        let mut out = String::new();
        for h in list.iter() {
            match self.chunks.get(h) {
                Some(Stored::Text(_, text)) => out.push_str(text),
                Some(Stored::Erased) => return Err(Lost::Erased),
                _ => return Err(Lost::Damaged),
            }
        }
        match !v.broken && sha(Some(&out)) == v.sha {
            true => Ok(Some(out)),
            false => Err(Lost::Damaged),
        }
    }

    /// What cannot be rebuilt for a reason other than an erasure (`memd
    /// check`): versions naming chunks that are not there, a stored text
    /// that is not its hash's, a last version that does not rebuild.
    pub fn damaged(&self) -> Vec<String> {
        let mut out = Vec::new();
        for file in FILES {
            let versions = self.versions(file);
            for (i, v) in versions.iter().enumerate() {
                let last = i + 1 == versions.len();
                let bad = v.broken || (last && self.content(file, i) == Err(Lost::Damaged));
                if bad {
                    out.push(format!(
                        "the version of {} recorded at {} cannot be rebuilt",
                        name(file),
                        stamp(&v.ts)
                    ));
                }
            }
        }
        for (h, stored) in &self.chunks {
            if let Stored::Text(_, t) = stored
                && chunk_hash(t) != **h
            {
                out.push(format!("chunk {h} does not hold the text its hash names"));
            }
        }
        out
    }

    /// The chunk texts stored, each with its file (for erasure's check).
    pub(crate) fn texts(&self) -> impl Iterator<Item = (File, &str)> {
        self.chunks.values().filter_map(|c| match c {
            Stored::Text(file, t) => Some((*file, t.as_str())),
            _ => None,
        })
    }
}

/// What one chunk of a version says: an entry (its id and facts, when it
/// has metadata) or a MEMORY.md line (its entry), and the text.
pub(crate) struct Said {
    pub entry: Option<EntryId>,
    pub sources: Vec<FactId>,
    pub text: String,
}

/// What `chunk`, a chunk of a version of `file`, says: each entry of the
/// entries file's chunk; a generated line's entry and text (a line that
/// does not read as one: its text alone).
pub(crate) fn said(file: File, chunk: &str) -> Vec<Said> {
    match file {
        File::Memory => Document::parse(chunk)
            .entries()
            .map(|e| Said {
                entry: e.id().cloned(),
                sources: e
                    .meta
                    .as_ref()
                    .map(|m| m.sources.clone())
                    .unwrap_or_default(),
                text: e.text.clone(),
            })
            .collect(),
        File::Core => vec![match Line::parse(chunk) {
            Some(l) => Said {
                entry: Some(l.entry_id),
                sources: Vec::new(),
                text: l.text,
            },
            None => Said {
                entry: None,
                sources: Vec::new(),
                text: chunk.to_string(),
            },
        }],
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lost {
    Erased,
    Damaged,
}

/// A time as versions record it.
pub fn stamp(t: &DateTime<FixedOffset>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Micros, true)
}

/// Record the files as they are, where they differ from their last
/// version: `by` memd (dated by `clock`, `from` the hashes `found` when
/// the writer began) or as found (dated by the file's time). Returns the
/// files' hashes, and the stamps that prove them ([`seen`]).
fn capture(
    (layout, history): (&Layout, &mut History),
    clock: &Clock,
    by: By,
    found: &[Option<String>; 2],
) -> Result<([Option<String>; 2], Vec<Seen>)> {
    let now = clock.now();
    let mut records = Vec::new();
    let mut shas: [Option<String>; 2] = [None, None];
    let mut proofs = Vec::new();
    for (i, file) in FILES.into_iter().enumerate() {
        let ((content, mtime, hash), proof) = seen::proving(layout, file, || {
            let (content, mtime) = read_now(layout, file)?;
            let hash = sha(content.as_deref());
            Ok(((content, mtime, hash.clone()), hash))
        })?;
        proofs.extend(proof);
        shas[i] = Some(hash.clone());
        let last = history.versions(file).last();
        if last.is_some_and(|v| v.sha == hash) {
            continue;
        }
        let ts = match by {
            By::Memd => now,
            By::Found => {
                let t = mtime.unwrap_or(now).min(now);
                last.map_or(t, |v| t.max(v.ts))
            }
        };
        let prev = history.track(file).last.clone().unwrap_or_default();
        let mut new = BTreeMap::new();
        let pieces = content.as_deref().map(|c| {
            let cut = chunks(file, c);
            let hashes: Vec<String> = cut.iter().map(|c| chunk_hash(c)).collect();
            for (h, c) in hashes.iter().zip(&cut) {
                let stored = history.chunks.get(h.as_str());
                if !matches!(stored, Some(Stored::Text(..) | Stored::Kept)) {
                    new.insert(h.clone(), Some(c.to_string()));
                }
            }
            encode(&prev, &hashes)
        });
        let record = Record {
            ts: stamp(&ts),
            file,
            by,
            sha: hash,
            from: match by {
                By::Memd => found[i].clone(),
                By::Found => None,
            },
            pieces,
            chunks: new,
            erased: None,
        };
        history.replay(record.clone());
        records.push(record);
    }
    jsonl::append(&layout.versions_file(), &records)?;
    Ok((shas, proofs))
}

/// The entries lock, held by every writer of the entries file and
/// MEMORY.md, with their versions recorded: as found on taking it, as
/// left on letting it go (see the module doc).
pub struct Writing {
    layout: Layout,
    clock: Clock,
    found: [Option<String>; 2],
    /// The versions as the lock was taken (without texts), and the file's
    /// stamp then: read again at the end only if another writer of the
    /// file (an erasure's rewrite) changed it meanwhile.
    history: Option<(History, Stamp)>,
    /// The stamps that prove the files as found ([`seen`]), and whether
    /// the tail holds them already.
    seen: Vec<Seen>,
    tail_holds: bool,
    _lock: Guard,
}

/// The versions file's length and modification time: what the tail
/// ([`Tail`]) was written for.
type Stamp = (u64, u128);

fn versions_stamp(layout: &Layout) -> Stamp {
    let m = std::fs::metadata(layout.versions_file()).ok();
    let time = m.as_ref().and_then(|m| m.modified().ok());
    let nanos = time
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    (m.map_or(0, |m| m.len()), nanos)
}

/// `.memd/versions-tail.json`: the last version of each file, chunk list
/// and all, for the file as it was at `stamp`. A writer reads it instead
/// of the whole history, whose reading grows with every run (measured in
/// BENCHMARKS.md, "What recording versions costs a writer"); any other
/// stamp, and the history is read. Derived: deleting it costs one read.
/// The fields are written in their order here, the small ones ahead of
/// the chunk lists, which a writer that finds the files as `seen` proves
/// them does not read ([`Tail::proving`]).
#[derive(Serialize, Deserialize)]
struct Tail {
    stamp: Stamp,
    /// The files as their last versions, with the stamps that prove it.
    #[serde(default)]
    seen: Vec<Seen>,
    last: Vec<TailVersion>,
}

#[derive(Serialize, Deserialize)]
struct TailVersion {
    file: File,
    ts: String,
    by: By,
    sha: String,
    list: Option<Vec<String>>,
}

impl Tail {
    /// The tail, when it is the versions file's as it is.
    fn read(layout: &Layout) -> Option<Tail> {
        let stamp = versions_stamp(layout);
        std::fs::read(layout.versions_tail())
            .ok()
            .and_then(|b| serde_json::from_slice::<Tail>(&b).ok())
            .filter(|t| t.stamp == stamp)
    }

    /// The tail's stamps, when they prove both files as they are now
    /// (each then its last version): read from the tail's head, no
    /// further ([`crate::json_head`]).
    fn proving(layout: &Layout) -> Option<Vec<Seen>> {
        let seen = Tail::seen(layout)?;
        seen::unchanged(layout, &seen).then_some(seen)
    }

    /// The tail's stamps, read from its head, when the tail is the
    /// versions file's as it is. A tail that cannot be read proves
    /// nothing (a stamp only ever saves work), so errors are `None`.
    fn seen(layout: &Layout) -> Option<Vec<Seen>> {
        #[derive(Deserialize)]
        struct Proof {
            stamp: Stamp,
            #[serde(default)]
            seen: Vec<Seen>,
        }
        let names = ["stamp", "seen"];
        let proof: Proof = json_head::fields(&layout.versions_tail(), &names)
            .ok()??
            .ok()?;
        (proof.stamp == versions_stamp(layout)).then_some(proof.seen)
    }
}

/// What `memd check` finds of `.memd/versions-tail.json`: a line for
/// each file whose stamp there the file still has, while its content is
/// not the one the stamp was kept for ([`seen`]).
pub fn tail_disproved(layout: &Layout) -> Result<Vec<String>> {
    // The stamps as a writer reads them ([`Tail::proving`]).
    let Some(seen) = Tail::seen(layout) else {
        return Ok(Vec::new());
    };
    let hash = |f: File| Ok(sha(read_now(layout, f)?.0.as_deref()));
    let wrong = seen::false_proofs(layout, &seen, hash)?;
    Ok((wrong.into_iter())
        .map(|f| format!("its stamp of {} is the file's, its hash is not: a writer would take an edit for the last version and not record it (derived: a check that fixes deletes it)", name(f)))
        .collect())
}

/// Delete `.memd/versions-tail.json` (derived: the next writer reads the
/// history instead, and writes it anew).
pub fn forget_tail(layout: &Layout) -> Result<()> {
    Ok(atomic::remove(&layout.versions_tail())?)
}

impl History {
    /// The last versions as a writer needs them: from the tail when it is
    /// the file's, else from the file.
    fn for_writer(layout: &Layout) -> Result<History> {
        let Some(tail) = Tail::read(layout) else {
            return History::heads(layout);
        };
        let mut h = History::default();
        for v in tail.last {
            let Ok(ts) = DateTime::parse_from_rfc3339(&v.ts) else {
                return History::heads(layout);
            };
            let list = v.list.map(|l| {
                let list: Vec<Arc<str>> = l.iter().map(|x| Arc::from(x.as_str())).collect();
                for x in &list {
                    h.chunks.entry(x.clone()).or_insert(Stored::Kept);
                }
                Arc::new(list)
            });
            let track = match v.file {
                File::Memory => &mut h.memory,
                File::Core => &mut h.core,
            };
            track.versions.push(Version {
                ts,
                by: v.by,
                sha: v.sha,
                from: None,
                readable: list.is_some(),
                broken: false,
                erased: false,
            });
            track.last = list;
        }
        Ok(h)
    }

    /// Write the tail of this history for the versions file as it is,
    /// with the stamps `seen` of the files that are their last versions.
    fn save_tail(&self, layout: &Layout, seen: &[Seen]) -> Result<()> {
        let last = FILES
            .into_iter()
            .filter_map(|file| {
                let track = self.track(file);
                let v = track.versions.last()?;
                Some(TailVersion {
                    file,
                    ts: stamp(&v.ts),
                    by: v.by,
                    sha: v.sha.clone(),
                    list: track
                        .last
                        .as_ref()
                        .map(|l| l.iter().map(|x| x.to_string()).collect()),
                })
            })
            .collect();
        let last_sha = |f: File| self.track(f).versions.last().map(|v| v.sha.as_str());
        let seen = (seen.iter())
            .filter(|s| last_sha(s.file) == Some(s.sha.as_str()))
            .cloned()
            .collect();
        let tail = Tail {
            stamp: versions_stamp(layout),
            last,
            seen,
        };
        // Derived: replaced whole, not synced (one lost is read as absent).
        std::fs::create_dir_all(layout.runtime_dir())?;
        let bytes = serde_json::to_vec(&tail).map_err(std::io::Error::other)?;
        atomic::write_unsynced(&layout.versions_tail(), &bytes)?;
        Ok(())
    }
}

impl Writing {
    /// Take the lock, and make `consolidated/` when it is missing: a
    /// directory with an `archive/` is a memory ([`crate::layout`]), so an
    /// archive copied alone gets what memd derives from it at its first run.
    pub fn start(memory: &Memory) -> Result<Writing> {
        let lock = entries::lock(&memory.layout)?;
        let layout = &memory.layout;
        let dir = layout.consolidated_dir();
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let mut writing = Writing {
            layout: layout.clone(),
            clock: memory.clock,
            found: [None, None],
            history: None,
            seen: Vec::new(),
            tail_holds: false,
            _lock: lock,
        };
        if let Some(seen) = Tail::proving(layout) {
            let sha = |f: File| seen.iter().find(|s| s.file == f).map(|s| s.sha.clone());
            writing.found = FILES.map(sha);
            (writing.seen, writing.tail_holds) = (seen, true);
            return Ok(writing);
        }
        let found = History::for_writer(layout).and_then(|mut h| {
            let found = capture((layout, &mut h), &memory.clock, By::Found, &[None, None])?;
            Ok((found, h))
        });
        match found {
            Ok(((found, seen), h)) => {
                (writing.found, writing.seen) = (found, seen);
                writing.history = Some((h, versions_stamp(layout)));
            }
            Err(e) => tracing::warn!("cannot record the version memd found: {e}"),
        }
        Ok(writing)
    }
}

impl Drop for Writing {
    /// Before the lock goes (fields drop after this).
    /// A writer that leaves the files as the tail's stamps proved them
    /// on taking the lock records nothing, and reads neither.
    fn drop(&mut self) {
        let layout = &self.layout;
        if self.tail_holds && seen::unchanged(layout, &self.seen) {
            return;
        }
        let history = match self.history.take() {
            Some((h, stamp)) if stamp == versions_stamp(layout) => Ok(h),
            _ => History::for_writer(layout),
        };
        let captured = history.and_then(|mut h| {
            let (_, seen) = capture((layout, &mut h), &self.clock, By::Memd, &self.found)?;
            h.save_tail(layout, &seen)
        });
        if let Err(e) = captured {
            tracing::warn!("cannot record the version memd wrote: {e}");
        }
    }
}

fn name(file: File) -> &'static str {
    match file {
        File::Memory => "consolidated/memory.md",
        File::Core => "MEMORY.md's generated lines",
    }
}

#[cfg(test)]
mod tests;
