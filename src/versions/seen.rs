//! The two files' stamps as a writer last read and hashed them, kept in
//! the tail ([`super::Tail`]): a writer that finds the files as a stamp
//! proves them, and leaves them so (a run the time gate holds back), then
//! reads and hashes neither: what such a writer costs does not grow with
//! the entries (BENCHMARKS.md, "A search's words ranked past 100,000
//! rows; a run the gate holds back reads no file it leaves as it was").
//!
//! A stamp is kept only when it proves the content it was read with:
//! - the file's length, modification and change times, inode and device
//!   the same before and after the read (a write during the read, or a
//!   file put in its place, shows in one of them);
//! - read after the latest time a write stamped with those times could
//!   have happened ([`crate::stamp::written_by`]), so that any later
//!   write, even one of the same length made in place, carries a later
//!   time. The change time is in the stamp because a person or a tool
//!   can set the modification time back, never the change time.
//!
//! Anything else, and the file is read and hashed as before: a stamp
//! only ever saves work, and a tail without stamps (an older memd's) is
//! read as one that proves nothing.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::File;
use super::on_disk::path;
use crate::Layout;
use crate::stamp::Stamp;

/// A file's hash as a writer read it, with the stamp that proves it
/// (`None`: the file was missing).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Seen {
    pub file: File,
    pub stamp: Option<Stamp>,
    pub sha: String,
}

/// The stamp of `path`: `Ok(None)` when there is no file there, `Err`
/// when the file system does not say (then nothing is proven).
fn stamp(path: &Path) -> Result<Option<Stamp>, ()> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_file() => Ok(Some(Stamp::of(&m))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        _ => Err(()),
    }
}

/// The stamp of `file` now.
pub(super) fn now(layout: &Layout, file: File) -> Result<Option<Stamp>, ()> {
    stamp(&path(layout, file))
}

/// `read` (which reads `file` and hashes it) run between two looks at
/// its stamp: its result, and the [`Seen`] that proves the hash when the
/// stamp held still and was settled.
pub(super) fn proving<T>(
    layout: &Layout,
    file: File,
    read: impl FnOnce() -> crate::error::Result<(T, String)>,
) -> crate::error::Result<(T, Option<Seen>)> {
    let before = now(layout, file);
    // Settled before the read begins: a write during it carries later
    // times than `before`.
    let settled = before.is_ok_and(|b| b.is_none_or(|s| s.settled()));
    let (out, sha) = read()?;
    let after = now(layout, file);
    let proven = match (before, after) {
        (Ok(b), Ok(a)) if a == b && settled => Some(Seen {
            file,
            stamp: b,
            sha,
        }),
        _ => None,
    };
    Ok((out, proven))
}

/// Whether every file is as `seen` proves it (one [`Seen`] per file).
pub(super) fn unchanged(layout: &Layout, seen: &[Seen]) -> bool {
    let all = super::FILES.into_iter();
    all.map(|f| (f, seen.iter().find(|s| s.file == f)))
        .all(|(f, s)| s.is_some_and(|s| now(layout, f) == Ok(s.stamp)))
}

/// What `memd check` finds of the tail's stamps: for each file whose
/// stamp the tail holds and the file still has, whether its hash is the
/// one the tail says (a stamp that proves a content the file does not
/// hold would let a writer miss an edit). `hash` reads and hashes a file;
/// a file whose stamp moved while it was read (a writer beside the check)
/// proves nothing either way.
pub(super) fn false_proofs(
    layout: &Layout,
    seen: &[Seen],
    hash: impl Fn(File) -> crate::error::Result<String>,
) -> crate::error::Result<Vec<File>> {
    let mut wrong = Vec::new();
    for s in seen {
        let held = || now(layout, s.file) == Ok(s.stamp);
        if held() && hash(s.file)? != s.sha && held() {
            wrong.push(s.file);
        }
    }
    Ok(wrong)
}
