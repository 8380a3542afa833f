//! `memd bench versions`: what recording versions (`crate::versions`)
//! costs each writer of the entries file, as the file and its history
//! grow: the bytes each write adds to `consolidated/versions.jsonl`, and
//! the time of taking and letting go of the entries lock with versions
//! recorded ([`crate::versions::Writing`]) beside the save it records, in
//! the same run.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::percentile;
use crate::Memory;
use crate::entries::Document;
use crate::memory::init;
use crate::versions::Writing;

/// One file size's figures.
#[derive(Debug, Serialize)]
pub struct VersionsReport {
    pub entries: usize,
    pub edits: usize,
    /// The first version: the whole file.
    pub first_version_bytes: u64,
    /// What each write of one entry adds, on average.
    pub bytes_per_edit: f64,
    pub entries_file_bytes: u64,
    /// The lock taken and let go with both versions recorded, p50.
    pub record_p50_ms: f64,
    pub record_p90_ms: f64,
    /// The save of the entries file it records, p50.
    pub save_p50_ms: f64,
}

/// Write `entries` entries, then change one entry `edits` times, each
/// change saved under [`crate::versions::Writing`].
pub fn versions(parent: &Path, entries: usize, edits: usize) -> Result<VersionsReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = init(tmp.path())?;
    std::fs::write(layout.config_file(), "[embedder]\nkind = \"lexical\"\n")?;
    let memory = Memory::open(tmp.path())?;
    let path = layout.entries_file();
    let mut doc = Document::read(&path)?;
    for i in 0..entries {
        let text = super::synthetic_fact(i);
        let meta = doc.new_meta(&text, "2026-01-01", Vec::new());
        doc.push(&text, meta);
    }
    {
        let _w = Writing::start(&memory)?;
        doc.save(&path, "2026-01-01")?;
    }
    let first = std::fs::metadata(layout.versions_file())?.len();
    let (mut record, mut save) = (Vec::new(), Vec::new());
    for n in 0..edits {
        let t = Instant::now();
        let w = Writing::start(&memory)?;
        let started = t.elapsed();
        let mut doc = Document::read(&path)?;
        let nth = n * 7919 % entries.max(1);
        let id = doc.entries().nth(nth).and_then(|e| e.id().cloned());
        if let Some(e) = id.and_then(|id| doc.get_mut(id.as_str())) {
            e.text = format!("{} (changed {n})", e.text);
        }
        let s = Instant::now();
        doc.save(&path, "2026-01-02")?;
        save.push(s.elapsed());
        let d = Instant::now();
        drop(w);
        record.push(started + d.elapsed());
    }
    record.sort();
    save.sort();
    let last = std::fs::metadata(layout.versions_file())?.len();
    let ms = |d: &[Duration], p| percentile(d, p);
    Ok(VersionsReport {
        entries,
        edits,
        first_version_bytes: first,
        bytes_per_edit: (last - first) as f64 / edits.max(1) as f64,
        entries_file_bytes: std::fs::metadata(&path)?.len(),
        record_p50_ms: ms(&record, 0.5),
        record_p90_ms: ms(&record, 0.9),
        save_p50_ms: ms(&save, 0.5),
    })
}
