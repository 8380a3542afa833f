//! JSON-lines files: tolerant reading and locked, durable appends.
//!
//! The tombstones, the recall log and the journal are all JSON lines that
//! people may edit by hand. A line that does not parse is skipped with a
//! warning naming the file and line, and is never rewritten away: these
//! files are only ever appended to, but by an erasure ([`rewrite`], which
//! keeps such a line as it is).

use std::io;
use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::atomic;

/// A line that could not be read, for reporting.
#[derive(Debug, Clone)]
pub struct BadLine {
    pub line: usize,
    pub error: String,
}

/// Read every well-formed record of `path`; a missing file is empty.
/// Malformed lines are logged (file and line) and returned in the second
/// element so callers such as `memd status` can show them.
pub fn read<T: DeserializeOwned>(path: &Path) -> io::Result<(Vec<T>, Vec<BadLine>)> {
    let Some(bytes) = atomic::read_if_exists(path)? else {
        return Ok((Vec::new(), Vec::new()));
    };
    Ok(parse(path, &bytes))
}

/// [`read`] of `bytes` already read from `path` (named in the warnings).
pub fn parse<T: DeserializeOwned>(path: &Path, bytes: &[u8]) -> (Vec<T>, Vec<BadLine>) {
    let text = String::from_utf8_lossy(bytes);
    let mut records = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<T>(line) {
            Ok(r) => records.push(r),
            Err(e) => {
                tracing::warn!(file = %path.display(), line = i + 1, error = %e, "skipping malformed JSON line");
                bad.push(BadLine {
                    line: i + 1,
                    error: e.to_string(),
                });
            }
        }
    }
    (records, bad)
}

/// Append `records` as whole lines under an exclusive lock, then fsync.
/// A file that a hand edit left without a final newline gets one first, so
/// the new record never joins the previous line.
pub fn append<T: Serialize>(path: &Path, records: &[T]) -> io::Result<()> {
    append_then(path, records, true)
}

/// [`append`], fsync'd only if `sync` ([`crate::atomic::append_whole_then`]).
pub fn append_then<T: Serialize>(path: &Path, records: &[T], sync: bool) -> io::Result<()> {
    if records.is_empty() {
        return Ok(());
    }
    let mut buf = Vec::new();
    for r in records {
        serde_json::to_writer(&mut buf, r).map_err(io::Error::other)?;
        buf.push(b'\n');
    }
    let mut file = atomic::open_locked(path)?;
    let len = file.metadata()?.len();
    if len > 0 && !ends_with_newline(path, len)? {
        buf.insert(0, b'\n');
    }
    atomic::append_whole_then(&mut file, len, &buf, sync)
}

/// Rewrite `path` atomically, each well-formed record through `change`
/// (`None`: left as it is, byte for byte; `Some(None)`: dropped); a line
/// that does not parse is kept byte for byte. The one rewrite of these
/// files: an erasure's (`memd forget --erase`), under the file's lock
/// (appenders check they hold the file the path names:
/// [`crate::atomic::open_locked`]). Returns how many records changed.
pub fn rewrite<T: Serialize + DeserializeOwned>(
    path: &Path,
    mut change: impl FnMut(&T) -> Option<Option<T>>,
    extra: &[T],
) -> io::Result<usize> {
    let _lock = atomic::open_locked(path)?;
    let bytes = std::fs::read(path)?;
    let (mut out, mut changed) = (Vec::with_capacity(bytes.len()), 0);
    for line in bytes.split_inclusive(|&b| b == b'\n') {
        let text = std::str::from_utf8(line).ok();
        let new = text
            .and_then(|t| serde_json::from_str::<T>(t.trim_end()).ok())
            .and_then(|r| change(&r));
        match new {
            None => out.extend_from_slice(line),
            Some(None) => changed += 1,
            Some(Some(r)) => {
                changed += 1;
                serde_json::to_writer(&mut out, &r).map_err(io::Error::other)?;
                out.push(b'\n');
            }
        }
    }
    if !out.is_empty() && !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    for r in extra {
        serde_json::to_writer(&mut out, r).map_err(io::Error::other)?;
        out.push(b'\n');
    }
    if changed > 0 || !extra.is_empty() {
        atomic::write(path, &out)?;
    }
    Ok(changed)
}

/// The lines of `path` that do not parse as `T`: line number and text.
pub fn unreadable<T: DeserializeOwned>(path: &Path) -> io::Result<Vec<(usize, String)>> {
    let Some(bytes) = atomic::read_if_exists(path)? else {
        return Ok(Vec::new());
    };
    let text = String::from_utf8_lossy(&bytes);
    Ok(text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && serde_json::from_str::<T>(l).is_err())
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect())
}

/// Whether the last byte of the file at `path` (of length `len`) is a newline.
pub(crate) fn ends_with_newline(path: &Path, len: u64) -> io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    f.seek(SeekFrom::Start(len - 1))?;
    let mut last = [0u8; 1];
    f.read_exact(&mut last)?;
    Ok(last[0] == b'\n')
}
