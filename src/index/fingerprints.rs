//! What says whether the index holds a source file as it is now: each
//! file's fingerprint, the fingerprints of its last sync (`files.json`),
//! and, without reading every file each time, the fingerprints now.
//!
//! A fingerprint hashes a file's whole content. Archive rows also depend on
//! the watermark and the tombstones, so those are part of each archive
//! file's fingerprint (and of the entries', which tombstones filter too).
//!
//! A sync needs every source file's fingerprint (a daemon syncs before each
//! search). [`Seen`] keeps the last fingerprints with each file's identity
//! and size and modification time (following symbolic links, as memd reads
//! and writes through them), and hashes again only what changed. An append
//! changes the size, memd's rewrites replace the file (a new inode), and an
//! editor's save changes the time; a rewrite of the same length within one
//! tick of the file system clock would be missed until the next change of
//! that file.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;

use crate::Result;
use crate::layout::{Layout, Source};
use crate::text::short_hash;

/// Each source file's fingerprint.
pub(crate) type Prints = BTreeMap<Source, String>;

/// Whether a source file is indexed as it is now.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Freshness {
    /// Synced as it is.
    Fresh,
    /// Changed since its last sync.
    Stale,
    /// Never synced.
    #[serde(rename = "not indexed")]
    NotIndexed,
}

impl Freshness {
    /// How `memd status` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Stale => "stale",
            Freshness::NotIndexed => "not indexed",
        }
    }
}

impl std::fmt::Display for Freshness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.as_str())
    }
}

/// Each source file's fingerprint at its last sync (empty if never synced
/// or unreadable: then everything is synced again, which is only slower),
/// less the sources a sync is writing, or was writing when it stopped
/// ([`begin_sync`]): their rows may be neither the old nor the new ones.
pub(super) fn synced(layout: &Layout) -> Prints {
    let mut prints: Prints = std::fs::read(layout.index_files())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    let writing: Vec<Source> = std::fs::read(layout.index_syncing())
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    for source in &writing {
        prints.remove(source);
    }
    prints
}

/// Mark `sources` as being written, before their rows change. Without the
/// mark, a sync that stopped after its table write and before
/// [`save_synced`] (a crash, or a `memd check` reading in between) left
/// rows that the recorded fingerprints called fresh; when the file was
/// back as it was at the last sync (a change undone while the sync ran),
/// no later sync looked at it again. The mark is durable before the rows
/// change.
pub(super) fn begin_sync<'a>(
    layout: &Layout,
    sources: impl Iterator<Item = &'a Source>,
) -> Result<()> {
    let sources: Vec<&Source> = sources.collect();
    crate::atomic::write(&layout.index_syncing(), &serde_json::to_vec(&sources)?)?;
    Ok(())
}

/// Record the fingerprints a sync brought the table to, then lift the
/// mark of [`begin_sync`] (a crash in between only syncs those sources
/// again).
pub(super) fn save_synced(layout: &Layout, prints: &Prints) -> Result<()> {
    crate::atomic::write(&layout.index_files(), &serde_json::to_vec_pretty(prints)?)?;
    Ok(crate::atomic::remove(&layout.index_syncing())?)
}

/// Forget every sync (the table was emptied).
pub(super) fn forget_synced(layout: &Layout) -> Result<()> {
    crate::atomic::remove(&layout.index_files())?;
    Ok(crate::atomic::remove(&layout.index_syncing())?)
}

/// Whether each source file is indexed as it is now (for `memd status` and
/// `memd check`; reads no table).
pub(crate) fn freshness(layout: &Layout) -> Result<BTreeMap<Source, Freshness>> {
    let synced = synced(layout);
    Ok(now(layout)?
        .into_iter()
        .map(|(source, fp)| {
            let state = match synced.get(&source) {
                Some(s) if *s == fp => Freshness::Fresh,
                Some(_) => Freshness::Stale,
                None => Freshness::NotIndexed,
            };
            (source, state)
        })
        .collect())
}

/// A file's own hash, the first part of its fingerprint (`None`: absent).
fn own_hash(p: &std::path::Path) -> Option<String> {
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    p.exists()
        .then(|| short_hash(&String::from_utf8_lossy(&read(p)), 16))
}

/// The hash of what decides which facts are pending (crate::pending),
/// the second part of every fingerprint: the state, the tombstones and
/// the entries' sources (`entries`: the entries file's own hash).
fn shared_hash(layout: &Layout, entries: Option<&str>) -> String {
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    short_hash(
        &format!(
            "{}\u{0}{}\u{0}{}",
            String::from_utf8_lossy(&read(&layout.state_file())),
            String::from_utf8_lossy(&read(&layout.tombstones_file())),
            entries.unwrap_or("")
        ),
        16,
    )
}

/// Every source file's fingerprint now, reading every file.
fn now(layout: &Layout) -> Result<Prints> {
    Ok(Seen::default().now(layout, &stamps(layout)?))
}

/// What identifies a version of a file without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

fn stamp(path: &std::path::Path) -> Option<Stamp> {
    stamp_of(&std::fs::metadata(path).ok()?)
}

fn stamp_of(m: &std::fs::Metadata) -> Option<Stamp> {
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    })
}

/// Each file the fingerprints depend on (by its name, which is cheaper to
/// compare than a path), with its stamp (`None`: absent).
type Stamps = BTreeMap<std::ffi::OsString, Option<Stamp>>;

/// The stamps of every file the fingerprints depend on: the archive's
/// from one listing of its directory, each `stat` relative to it (a
/// symbolic link followed), not a walk of each file's whole path.
fn stamps(layout: &Layout) -> Result<Stamps> {
    let mut out: Stamps = [
        layout.entries_file(),
        layout.state_file(),
        layout.tombstones_file(),
        layout.memory_md(),
    ]
    .into_iter()
    .map(|p| {
        let s = stamp(&p);
        (p.into_os_string(), s)
    })
    .collect();
    let dir = layout.archive_dir();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if day_of(&name).is_none() {
            continue;
        }
        let meta = match entry.file_type()?.is_symlink() {
            true => std::fs::metadata(entry.path()),
            false => entry.metadata(),
        };
        let stamp = meta.ok().filter(|m| m.is_file()).and_then(|m| stamp_of(&m));
        out.insert(name, stamp);
    }
    Ok(out)
}

/// The fingerprints as last computed, with the stamps they were computed
/// at, and each day file's own hash with the stamp it was read at.
#[derive(Default)]
pub(super) struct Seen {
    last: Option<(Stamps, Prints)>,
    days: BTreeMap<std::ffi::OsString, (Stamp, String)>,
}

impl Seen {
    /// Every source file's fingerprint, computed again only when a file's
    /// stamp changed.
    pub(super) fn fingerprints(&mut self, layout: &Layout) -> Result<Prints> {
        let stamped = stamps(layout)?;
        if let Some((stamps, prints)) = &self.last
            && *stamps == stamped
        {
            return Ok(prints.clone());
        }
        let prints = self.now(layout, &stamped);
        // A file changed while it was read is stamped again next time.
        if stamps(layout)? == stamped {
            self.last = Some((stamped, prints.clone()));
        }
        Ok(prints)
    }

    /// [`now`], reading again only the day files whose stamp changed since
    /// they were last read (an append reads one day file, not the
    /// archive). A day file is stamped before it is read, so one that
    /// changes while it is read has another stamp next time.
    fn now(&mut self, layout: &Layout, stamped: &Stamps) -> Prints {
        let entries = own_hash(&layout.entries_file());
        let shared = shared_hash(layout, entries.as_deref());
        let mut out = Prints::new();
        let mut days = BTreeMap::new();
        for (name, stamp) in stamped {
            let (Some(stamp), Some(day)) = (stamp, day_of(name)) else {
                continue;
            };
            let own = match self.days.remove(name) {
                Some((was, own)) if was == *stamp => own,
                _ => match own_hash(&layout.archive_file(day)) {
                    Some(own) => own,
                    None => continue,
                },
            };
            out.insert(Source::Day(day.to_string()), format!("{own}-{shared}"));
            days.insert(name.clone(), (stamp.clone(), own));
        }
        self.days = days;
        for (source, own) in [
            (Source::Entries, entries),
            (Source::Core, own_hash(&layout.memory_md())),
        ] {
            if let Some(own) = own {
                out.insert(source, format!("{own}-{shared}"));
            }
        }
        out
    }
}

/// The day of a day file's name (`YYYY-MM-DD.md`), as [`stamps`] keys it.
fn day_of(name: &std::ffi::OsStr) -> Option<&str> {
    let day = name.to_str()?.strip_suffix(".md")?;
    crate::layout::is_day(day).then_some(day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprints a daemon keeps, reading again only the day files
    /// that changed, are the ones every file read anew gives, through
    /// appends, a new and a removed day file, and a change to what every
    /// fingerprint shares (the tombstones).
    #[test]
    fn fingerprints_kept_between_changes_equal_those_read_anew() {
        let t = tempfile::tempdir().unwrap();
        let layout = crate::memory::init(t.path()).unwrap();
        let day = |d: &str| layout.archive_file(d);
        for d in ["2026-01-01", "2026-01-02", "2026-01-03"] {
            std::fs::write(day(d), format!("# {d}\n\n## 09:00:00\n- fact of {d}\n")).unwrap();
        }
        let mut seen = Seen::default();
        let check = |seen: &mut Seen, what: &str| {
            let kept = seen.fingerprints(&layout).unwrap();
            assert_eq!(kept, now(&layout).unwrap(), "after {what}");
            kept
        };
        let first = check(&mut seen, "the first read");
        assert_eq!(first.len(), 5, "{first:?}");
        let append = |d: &str, text: &str| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(day(d))
                .unwrap();
            writeln!(f, "- {text}").unwrap();
        };
        append("2026-01-02", "another fact");
        let after = check(&mut seen, "an append");
        let changed: Vec<_> = first
            .iter()
            .filter(|(s, p)| after.get(*s) != Some(*p))
            .collect();
        assert_eq!(changed.len(), 1, "{changed:?}");
        std::fs::write(day("2026-01-04"), "# 2026-01-04\n\n- new\n").unwrap();
        check(&mut seen, "a new day file");
        std::fs::remove_file(day("2026-01-01")).unwrap();
        check(&mut seen, "a removed day file");
        std::fs::write(layout.tombstones_file(), "{}\n").unwrap();
        let stoned = check(&mut seen, "a tombstone");
        assert!(stoned.values().all(|p| !after.values().any(|a| a == p)));
        append("2026-01-03", "yet another");
        check(&mut seen, "a second append");
    }
}
