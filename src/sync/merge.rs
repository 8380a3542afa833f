//! `memd merge-driver KIND BASE OURS THEIRS`: the merge git runs for each
//! file of a memory that both sides changed (registered by [`super`] in
//! the repository's config, chosen per path by `.gitattributes`). It
//! writes the merge into OURS, as git asks, and says whether it is clean.
//!
//! | kind       | files                                         | merge |
//! |------------|-----------------------------------------------|-------|
//! | `archive`  | `archive/*.md`                                | union of facts ([`super::day`]) |
//! | `jsonl`    | journal, tombstones, recall log, LLM usage     | union of records ([`super::lines`]) |
//! | `entries`  | `consolidated/memory.md`                      | three-way by entry id ([`entries`]) |
//! | `core`     | `MEMORY.md`                                   | the person's text as text, generated lines by line |
//! | `state`    | `.consolidation_state.json`                   | decided facts three-way, the later last run |
//! | `versions` | `consolidated/versions.jsonl`                 | every version of both, in time order ([`crate::versions`]) |
//!
//! What a merge cannot decide is left to the person as git leaves any
//! conflict: the person's own text in MEMORY.md changed on both sides in
//! one place, or a file a side cannot be read as (an entries file that is
//! not UTF-8, a state or versions file that is not JSON). Then the driver
//! writes the file with git's conflict markers and exits 1. A day file
//! always merges (its facts are kept from both sides, [`super::day`]).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::core_md::CoreMd;
use crate::entries::{Document, Entry};
use crate::error::{Context, Result, bail};
use crate::state::State;
#[cfg(feature = "failpoints")]
use crate::{Layout, pause};
use crate::{atomic, versions};

/// Which merge a file takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    Archive,
    Jsonl,
    Entries,
    Core,
    State,
    Versions,
}

impl Kind {
    pub const ALL: [Kind; 6] = [
        Kind::Archive,
        Kind::Jsonl,
        Kind::Entries,
        Kind::Core,
        Kind::State,
        Kind::Versions,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Archive => "archive",
            Kind::Jsonl => "jsonl",
            Kind::Entries => "entries",
            Kind::Core => "core",
            Kind::State => "state",
            Kind::Versions => "versions",
        }
    }
}

/// How a merge went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merged {
    Clean,
    /// Left for the person (with conflict markers where the file is
    /// text), and why.
    Conflict(String),
}

/// Merge `base`, `ours` and `theirs` (git's `%O %A %B`) into `ours`.
pub fn run(kind: Kind, base: &Path, ours: &Path, theirs: &Path) -> Result<Merged> {
    // git runs a driver in the repository's top directory: the memory's.
    #[cfg(feature = "failpoints")]
    if let Some(layout) = std::env::current_dir()
        .ok()
        .and_then(|d| Layout::open(d).ok())
    {
        pause::at(&layout, pause::Step::MergeDriver);
    }
    let read = |p: &Path| std::fs::read(p).with_context(|| format!("reading {}", p.display()));
    let (o, a, b) = (read(base)?, read(ours)?, read(theirs)?);
    let merged = match kind {
        Kind::Archive => Ok(super::day::merge(&o, &a, &b)),
        Kind::Jsonl => Ok(super::lines::merge(&o, &a, &b)),
        Kind::Entries => entries(&o, &a, &b),
        Kind::Core => return core(&o, &a, &b, ours),
        Kind::State => state(&o, &a, &b),
        Kind::Versions => versions::merge(&o, &a, &b)
            .ok_or("the versions files disagree on the versions both hold (a history rewritten), or one is damaged"),
    };
    match merged {
        Ok(bytes) => {
            atomic::write(ours, &bytes)?;
            Ok(Merged::Clean)
        }
        Err(why) => {
            text_merge(base, ours, theirs)?;
            Ok(Merged::Conflict(why.to_string()))
        }
    }
}

/// The merge of `o`, `a` and `b` when it is clean and whole in memory;
/// `None` for a conflict and for MEMORY.md (whose person's text merges as
/// text, through files).
pub(super) fn clean(kind: Kind, o: &[u8], a: &[u8], b: &[u8]) -> Option<Vec<u8>> {
    match kind {
        Kind::Archive => Some(super::day::merge(o, a, b)),
        Kind::Jsonl => Some(super::lines::merge(o, a, b)),
        Kind::Entries => entries(o, a, b).ok(),
        Kind::Core => None,
        Kind::State => state(o, a, b).ok(),
        Kind::Versions => versions::merge(o, a, b),
    }
}

/// `git merge-file` into `ours`, with conflict markers. Returns whether
/// it left a conflict.
fn text_merge(base: &Path, ours: &Path, theirs: &Path) -> Result<bool> {
    let status = Command::new("git")
        .arg("merge-file")
        .args(["-L", "ours", "-L", "base", "-L", "theirs"])
        .arg(ours)
        .arg(base)
        .arg(theirs)
        .status()
        .context("running git merge-file")?;
    // The number of conflicts (at most 127), or an error.
    match status.code() {
        Some(0) => Ok(false),
        Some(1..=127) => Ok(true),
        _ => bail!("git merge-file failed ({status})"),
    }
}

/// Entries three-way by id, on our file's layout (our entries where they
/// are, theirs added after ours). An entry changed on one side takes the
/// change; changed on both, ours keeps the id and theirs is added as an
/// entry of its own with a new id, unreviewed; deleted on one side and
/// changed on the other, it is kept, unreviewed (a forget still wins: see
/// [`super::settle`]). Blocks written by hand without metadata are kept
/// from both sides.
fn entries(o: &[u8], a: &[u8], b: &[u8]) -> std::result::Result<Vec<u8>, &'static str> {
    let text = |x: &[u8]| String::from_utf8(x.to_vec()).map_err(|_| "not UTF-8");
    let (o, mut a, b) = (
        Document::parse(&text(o)?),
        Document::parse(&text(a)?),
        Document::parse(&text(b)?),
    );
    let by_id = |d: &Document| -> BTreeMap<String, Entry> {
        d.entries()
            .filter_map(|e| Some((e.id()?.to_string(), e.clone())))
            .collect()
    };
    let (eo, ea, eb) = (by_id(&o), by_id(&a), by_id(&b));
    let unreviewed = |mut e: Entry| {
        if let Some(m) = e.meta.as_mut() {
            m.unreviewed = true;
        }
        e
    };
    for (id, theirs) in &eb {
        match (eo.get(id), ea.get(id)) {
            (_, Some(ours)) if ours == theirs => {}
            (Some(base), Some(ours)) if ours == base => {
                *a.get_mut(id).expect("ours") = theirs.clone()
            }
            (Some(base), Some(_)) if theirs == base => {}
            (_, Some(_)) => {
                let mut copy = theirs.clone();
                let meta = copy.meta.as_mut().expect("by id");
                meta.id = a.new_meta(&copy.text, &meta.updated, Vec::new()).id;
                a.push_entry(unreviewed(copy));
            }
            (Some(base), None) if theirs == base => {}
            (Some(_), None) => a.push_entry(unreviewed(theirs.clone())),
            (None, None) => a.push_entry(theirs.clone()),
        }
    }
    for (id, base) in &eo {
        match (ea.get(id), eb.get(id)) {
            (Some(ours), None) if ours == base => {
                a.remove(id);
            }
            (Some(ours), None) => *a.get_mut(id).expect("ours") = unreviewed(ours.clone()),
            _ => {}
        }
    }
    let hand = |d: &Document| -> Vec<String> {
        d.entries()
            .filter(|e| e.meta.is_none())
            .map(|e| e.text.clone())
            .collect()
    };
    let (ho, ha) = (hand(&o), hand(&a));
    for t in hand(&b) {
        if !ho.contains(&t) && !ha.contains(&t) {
            a.push_entry(Entry {
                meta: None,
                text: t,
            });
        }
    }
    Ok(a.render().into_bytes())
}

/// MEMORY.md: the person's text merged as text (a conflict there is the
/// person's), the generated lines by line ([`super::lines`]); the lines
/// are made again from the merged entries before the merge is committed.
fn core(o: &[u8], a: &[u8], b: &[u8], ours: &Path) -> Result<Merged> {
    let parsed = [o, a, b].map(CoreMd::parse);
    let [Ok(po), Ok(pa), Ok(pb)] = parsed else {
        let (_dir, base, theirs) = sides(o, b)?;
        let conflict = text_merge(&base, ours, &theirs)?;
        return Ok(match conflict {
            true => Merged::Conflict(
                "MEMORY.md has broken memd markers on a side, and the two differ".into(),
            ),
            false => Merged::Clean,
        });
    };
    let gen_of = |p: &CoreMd| p.generated().unwrap_or("").as_bytes().to_vec();
    let generated = super::lines::merge(&gen_of(&po), &gen_of(&pa), &gen_of(&pb));
    let (_dir, base, theirs) = sides(&po.with_lines(&[]), &pb.with_lines(&[]))?;
    atomic::write(ours, &pa.with_lines(&[]))?;
    let conflict = text_merge(&base, ours, &theirs)?;
    let text = std::fs::read(ours)?;
    let generated = String::from_utf8_lossy(&generated);
    match CoreMd::parse(&text) {
        Ok(md) if md.generated().is_some() => {
            atomic::write(ours, &md.with_generated(&generated))?;
        }
        _ => {}
    }
    Ok(match conflict {
        true => Merged::Conflict(
            "the person's own text in MEMORY.md changed on both sides in one place".into(),
        ),
        false => Merged::Clean,
    })
}

/// `base` and `theirs` written to files of a temporary directory (kept
/// while the directory lives), for `git merge-file`.
fn sides(
    base: &[u8],
    theirs: &[u8],
) -> Result<(tempfile::TempDir, std::path::PathBuf, std::path::PathBuf)> {
    let dir = tempfile::tempdir()?;
    let (b, t) = (dir.path().join("base"), dir.path().join("theirs"));
    std::fs::write(&b, base)?;
    std::fs::write(&t, theirs)?;
    Ok((dir, b, t))
}

/// The consolidation state: a fact is decided where both sides have it
/// decided, or the side that changed it does (a run decided it, an undo
/// took it back); retries are the larger count; the last run is the later.
fn state(o: &[u8], a: &[u8], b: &[u8]) -> std::result::Result<Vec<u8>, &'static str> {
    let parse = |x: &[u8]| -> std::result::Result<State, &'static str> {
        match x.is_empty() {
            true => Ok(State::default()),
            false => serde_json::from_slice(x).map_err(|_| "a side's state is not valid JSON"),
        }
    };
    let (so, sa, sb) = (parse(o)?, parse(a)?, parse(b)?);
    let mut out = sa.clone();
    let three = |x: bool, y: bool, base: bool| if x == base { y } else { x };
    let all: BTreeSet<_> = so
        .watermark
        .done
        .iter()
        .chain(&sa.watermark.done)
        .chain(&sb.watermark.done)
        .cloned()
        .collect();
    out.watermark.done = all
        .into_iter()
        .filter(|f| {
            let has = |s: &State| s.watermark.done.contains(f);
            three(has(&sa), has(&sb), has(&so))
        })
        .collect();
    for (f, n) in &sb.retries {
        let slot = out.retries.entry(f.clone()).or_default();
        *slot = (*slot).max(*n);
    }
    out.retries.retain(|f, _| !out.watermark.done.contains(f));
    if sb.last_run > sa.last_run {
        out.last_run = sb.last_run.clone();
        out.last_run_id = sb.last_run_id.clone();
    }
    for (k, v) in sb.extra {
        out.extra.entry(k).or_insert(v);
    }
    let mut bytes = serde_json::to_vec_pretty(&out).map_err(|_| "the state does not serialise")?;
    bytes.push(b'\n');
    Ok(bytes)
}
