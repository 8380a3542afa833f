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

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;

use super::counts;
use crate::archive::ParsedDays;
use crate::layout::{Layout, Source, is_day};
use crate::stamp::Stamp;
use crate::text::{short_hash, short_hex};
use crate::{Result, archive, atomic};

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
/// no later sync looked at it again. The mark is in place before the rows
/// change, for every process and after a crash of this one.
///
/// Neither the mark nor the fingerprints are fsynced: LanceDB does not
/// fsync the table's files either (lance's `LocalFileSystem` is made
/// without it), so after a power cut the table may be behind its files
/// however these are written; an fsync of each here bought no guarantee
/// and cost 0.8 ms of every append's sync (`memd bench search-path`). What
/// a power cut leaves is what `memd check` finds and `memd reindex`
/// rebuilds, like anything under `.memd/`.
pub(super) fn begin_sync<'a>(
    layout: &Layout,
    sources: impl Iterator<Item = &'a Source>,
) -> Result<()> {
    let sources: Vec<&Source> = sources.collect();
    let mark = serde_json::to_vec(&sources)?;
    atomic::write_unsynced(&layout.index_syncing(), &mark)?;
    Ok(())
}

/// Record the fingerprints a sync brought the table to, then lift the
/// mark of [`begin_sync`] (a crash in between only syncs those sources
/// again).
pub(super) fn save_synced(layout: &Layout, prints: &Prints) -> Result<()> {
    let prints = serde_json::to_vec_pretty(prints)?;
    atomic::write_unsynced(&layout.index_files(), &prints)?;
    Ok(atomic::remove(&layout.index_syncing())?)
}

/// Forget every sync (the table was emptied).
pub(super) fn forget_synced(layout: &Layout) -> Result<()> {
    atomic::remove(&layout.index_files())?;
    Ok(atomic::remove(&layout.index_syncing())?)
}

/// Whether each source file is indexed as it is now (for `memd status` and
/// `memd check`; reads no table).
pub(crate) fn freshness(layout: &Layout) -> Result<BTreeMap<Source, Freshness>> {
    Ok(freshness_of(&now(layout)?, &synced(layout)))
}

/// Whether each source file is indexed as it is when its fingerprint is
/// `prints`, the last syncs' being `synced` ([`synced`]).
pub(super) fn freshness_of(prints: &Prints, synced: &Prints) -> BTreeMap<Source, Freshness> {
    prints
        .iter()
        .map(|(source, fp)| {
            let state = match synced.get(source) {
                Some(s) if s == fp => Freshness::Fresh,
                Some(_) => Freshness::Stale,
                None => Freshness::NotIndexed,
            };
            (source.clone(), state)
        })
        .collect()
}

/// A file's own hash, the first part of its fingerprint (`None`: absent).
fn own_hash(p: &std::path::Path) -> Option<String> {
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    p.exists()
        .then(|| short_hash(&String::from_utf8_lossy(&read(p)), 16))
}

/// The part of a fingerprint every source's shares ([`shared_hash`]).
pub(super) fn shared_part(print: &str) -> &str {
    print.rsplit_once('-').map_or("", |(_, shared)| shared)
}

/// The hash of what decides which facts are pending (crate::pending),
/// the second part of every fingerprint: the state, the tombstones, the
/// entries' sources (`entries`: the entries file's own hash) and the
/// journal, by its length (it only grows, or goes: a decided fact that
/// only a journaled entry held is pending without it).
fn shared_hash(layout: &Layout, entries: Option<&str>) -> String {
    let read = |p: &std::path::Path| std::fs::read(p).unwrap_or_default();
    let journal = std::fs::metadata(layout.journal_file()).map(|m| m.len());
    short_hash(
        &format!(
            "{}\u{0}{}\u{0}{}\u{0}{:?}",
            String::from_utf8_lossy(&read(&layout.state_file())),
            String::from_utf8_lossy(&read(&layout.tombstones_file())),
            entries.unwrap_or(""),
            journal.ok(),
        ),
        16,
    )
}

/// Every source file's fingerprint now, reading every file.
fn now(layout: &Layout) -> Result<Prints> {
    let mut seen = Seen {
        stamps: stamps(layout)?.0,
        ..Seen::default()
    };
    Ok(seen.now(layout))
}

/// Each file the fingerprints depend on (by its name, which is cheaper to
/// compare than a path), with its stamp (`None`: absent).
type Stamps = BTreeMap<std::ffi::OsString, Option<Stamp>>;

/// The stamps of the files outside the archive that the fingerprints
/// depend on.
fn root_stamps(layout: &Layout, out: &mut Stamps) {
    for p in [
        layout.entries_file(),
        layout.journal_file(),
        layout.state_file(),
        layout.tombstones_file(),
        layout.memory_md(),
    ] {
        let s = Stamp::at(&p);
        out.insert(p.into_os_string(), s);
    }
}

/// The stamp of the day file `name` in `dir` (`None`: absent, or not a
/// file), and whether the kernel's events on `dir` can miss its changes: a
/// symbolic link (followed) or a file with other hard links.
fn day_stamp(dir: &std::path::Path, name: &std::ffi::OsStr) -> (Option<Stamp>, bool) {
    let path = dir.join(name);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return (None, false);
    };
    let link = meta.file_type().is_symlink();
    let meta = match link {
        true => std::fs::metadata(&path).ok(),
        false => Some(meta),
    };
    let meta = meta.filter(|m| m.is_file());
    let unseen = link || meta.as_ref().is_some_and(|m| m.nlink() > 1);
    (meta.map(|m| Stamp::of(&m)), unseen)
}

/// The stamps of every file the fingerprints depend on: the archive's
/// from one listing of its directory, each `stat` relative to it (a
/// symbolic link followed), not a walk of each file's whole path; with the
/// day files whose changes the kernel's events can miss.
fn stamps(layout: &Layout) -> Result<(Stamps, BTreeSet<std::ffi::OsString>)> {
    let mut out = Stamps::new();
    let mut unseen = BTreeSet::new();
    root_stamps(layout, &mut out);
    let dir = layout.archive_dir();
    for entry in std::fs::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if day_of(&name).is_none() {
            continue;
        }
        let link = entry.file_type()?.is_symlink();
        let meta = match link {
            true => std::fs::metadata(entry.path()),
            false => entry.metadata(),
        };
        let meta = meta.ok().filter(|m| m.is_file());
        if link || meta.as_ref().is_some_and(|m| m.nlink() > 1) {
            unseen.insert(name.clone());
        }
        if let Some(stamp) = meta.map(|m| Stamp::of(&m)) {
            out.insert(name, Some(stamp));
        }
    }
    Ok((out, unseen))
}

/// How long a watched writer goes on the kernel's events alone before it
/// stamps every file again, for the changes the kernel does not report
/// ([`super::changes`]): the daemon's upkeep loop syncs every 10 s, so
/// such a change is indexed within about that, as it was before the
/// watch; the searches in between stat no day file that did not change.
const LOOK_EVERYWHERE_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// The fingerprints as last computed, with the stamps they were computed
/// at, and each day file's own hash with the stamp it was read at.
#[derive(Default)]
pub(super) struct Seen {
    /// Every file's stamp, as last taken.
    stamps: Stamps,
    /// The fingerprints at `stamps`, once computed and settled.
    prints: Option<Arc<Prints>>,
    days: BTreeMap<std::ffi::OsString, (Stamp, String)>,
    /// Each day file as last parsed, with the stamp it was read at
    /// ([`Seen::archive`]; filled only once asked for).
    parsed: BTreeMap<std::ffi::OsString, (Stamp, Arc<archive::Day>)>,
    /// The day files last hashed anew, with their hash's state
    /// ([`Grown`]).
    grown: Vec<Grown>,
    /// For a long-lived writer: the kernel's word on which day files
    /// changed ([`super::changes`]), with when every file was last
    /// stamped, and the day files the kernel's events can miss.
    watch: Option<Watch>,
    /// [`Seen::archive`]'s answer at `stamps`, while they hold and the
    /// fingerprints at them are settled.
    archive: Option<Arc<ParsedDays>>,
    /// The last syncs' fingerprints ([`synced`]), with the stamps of the
    /// two files they were read from when they were read.
    synced: Option<(SyncedStamps, Arc<Prints>)>,
    /// What status counted last, with the rule it counted by
    /// ([`Seen::tally`]).
    counted: Option<counts::Counted>,
}

/// What [`Seen::counting`] gives: the days, the key, the counts kept.
pub(super) type Counting = (Arc<ParsedDays>, Option<String>, Option<counts::Counted>);

/// The stamps of the last syncs' fingerprints and of the mark of the
/// sources being written (`None`: absent).
type SyncedStamps = (Option<Stamp>, Option<Stamp>);

struct Watch {
    subscription: Option<super::changes::Subscription>,
    /// The archive directory's device and inode when subscribed (a watch
    /// follows the directory it was made on, not its path).
    dir: Option<(u64, u64)>,
    looked_everywhere: Option<std::time::Instant>,
    unseen: BTreeSet<std::ffi::OsString>,
}

impl Seen {
    /// A [`Seen`] that takes the kernel's word on which day files changed
    /// (for a writer that syncs again and again: a daemon's, `memd mcp`'s).
    pub(super) fn watching() -> Seen {
        Seen {
            watch: Some(Watch {
                subscription: None,
                dir: None,
                looked_everywhere: None,
                unseen: BTreeSet::new(),
            }),
            ..Seen::default()
        }
    }

    /// Every source file's fingerprint, computed again only when a file's
    /// stamp changed.
    pub(super) fn fingerprints(&mut self, layout: &Layout) -> Result<Arc<Prints>> {
        let moved = match self.changed_names(layout) {
            Some(names) => self.stamp_again(layout, names),
            None => {
                let (stamped, unseen) = stamps(layout)?;
                if let Some(w) = self.watch.as_mut() {
                    (w.unseen, w.looked_everywhere) = (unseen, Some(std::time::Instant::now()));
                }
                let moved = stamped != self.stamps;
                self.stamps = stamped;
                moved
            }
        };
        if moved {
            self.prints = None;
            self.archive = None;
        }
        if let Some(prints) = &self.prints {
            return Ok(prints.clone());
        }
        let prints = Arc::new(self.now(layout));
        // A file changed while it was read is stamped again next time: by
        // the kernel's event when watched, else seen by a second look.
        if self.watch.is_some() || stamps(layout)?.0 == self.stamps {
            self.prints = Some(prints.clone());
        }
        Ok(prints)
    }

    /// The archive's days, parsed, in day order: each day file read again
    /// only when its stamp moved since it was last parsed (a watched
    /// writer's stamps move on the kernel's word, [`Seen::fingerprints`]).
    /// A day file is stamped before it is read, so one that changes while
    /// it is read is read again next time.
    ///
    /// While no stamp moves, the same answer is given again without a look
    /// at each day file (a daemon's status and check cost then what they
    /// count, not what the archive's day files number).
    pub(super) fn archive(&mut self, layout: &Layout) -> Result<Arc<ParsedDays>> {
        self.fingerprints(layout)?;
        if let Some(days) = &self.archive {
            return Ok(days.clone());
        }
        let read = |day: &str| Ok(Some(Arc::new(archive::read_day(layout, day)?)));
        let days = Arc::new(by_stamp(&self.stamps, &mut self.parsed, read)?);
        if self.prints.is_some() {
            self.archive = Some(days.clone());
        }
        Ok(days)
    }

    /// What status needs to count the archive and the entries
    /// ([`counts`]): the days parsed, the key of what the pending rule
    /// reads (the settled fingerprints' shared part), and the counts kept
    /// last, taken out to be counted outside the lock and kept again
    /// ([`Seen::keep_counted`]).
    pub(super) fn counting(&mut self, layout: &Layout) -> Result<Counting> {
        let days = self.archive(layout)?;
        let key = (self.prints.as_ref())
            .and_then(|p| p.values().next())
            .map(|print| shared_part(print).to_string());
        Ok((days, key, self.counted.take()))
    }

    pub(super) fn keep_counted(&mut self, counted: counts::Counted) {
        self.counted = Some(counted);
    }

    /// The last syncs' fingerprints ([`synced`]), read again only when the
    /// stamp of either file they come from moved (each sync writes both).
    pub(super) fn synced(&mut self, layout: &Layout) -> Arc<Prints> {
        let at = (
            Stamp::at(&layout.index_files()),
            Stamp::at(&layout.index_syncing()),
        );
        if let Some((was, prints)) = &self.synced
            && *was == at
        {
            return prints.clone();
        }
        let prints = Arc::new(synced(layout));
        self.synced = Some((at, prints.clone()));
        prints
    }

    /// For a watched writer whose watch is in place and whose last look at
    /// every file is recent, the names to stamp again: the files outside
    /// the archive, the day files the kernel named, and those whose
    /// changes it can miss. `None`: stamp every file (the watch is made,
    /// or made again, first, so no change after the stamps goes unseen).
    fn changed_names(&mut self, layout: &Layout) -> Option<BTreeSet<std::ffi::OsString>> {
        let watch = self.watch.as_mut()?;
        let dir = layout.archive_dir();
        let identity = Stamp::at(&dir).map(|s| (s.dev, s.ino));
        let sub = match &watch.subscription {
            Some(sub) if !sub.is_gone() && watch.dir == identity => sub,
            _ => {
                watch.subscription = super::changes::subscribe(&dir);
                watch.dir = identity;
                return None;
            }
        };
        let changed = match sub.take() {
            super::changes::Changed::Names(names) => names,
            super::changes::Changed::Unknown => return None,
        };
        if watch
            .looked_everywhere
            .is_none_or(|t| t.elapsed() >= LOOK_EVERYWHERE_EVERY)
        {
            return None;
        }
        let mut names: BTreeSet<_> = changed
            .into_iter()
            .filter(|n| day_of(n).is_some())
            .collect();
        names.extend(watch.unseen.iter().cloned());
        Some(names)
    }

    /// Stamp again the files outside the archive and the day files `names`;
    /// whether any stamp moved.
    fn stamp_again(&mut self, layout: &Layout, names: BTreeSet<std::ffi::OsString>) -> bool {
        let mut fresh = Stamps::new();
        root_stamps(layout, &mut fresh);
        let dir = layout.archive_dir();
        let mut moved = false;
        for name in names {
            let (stamp, unseen) = day_stamp(&dir, &name);
            if let Some(w) = self.watch.as_mut() {
                match unseen {
                    true => w.unseen.insert(name.clone()),
                    false => w.unseen.remove(&name),
                };
            }
            match stamp {
                Some(s) => fresh.insert(name, Some(s)),
                None => {
                    moved |= self.stamps.remove(&name).is_some();
                    continue;
                }
            };
        }
        for (name, stamp) in fresh {
            if self.stamps.get(&name) != Some(&stamp) {
                self.stamps.insert(name, stamp);
                moved = true;
            }
        }
        moved
    }

    /// Every source file's fingerprint at the stamps taken, reading again
    /// only the day files whose stamp changed since they were last read
    /// (an append reads one day file, not the archive). A day file is
    /// stamped before it is read, so one that changes while it is read has
    /// another stamp next time.
    fn now(&mut self, layout: &Layout) -> Prints {
        let entries = own_hash(&layout.entries_file());
        let shared = shared_hash(layout, entries.as_deref());
        let grown = &mut self.grown;
        let hashed = |day: &str| Ok(day_hash(grown, day.as_ref(), &layout.archive_file(day)));
        let days = by_stamp(&self.stamps, &mut self.days, hashed).unwrap_or_default();
        let mut out: Prints = (days.into_iter())
            .map(|(day, own)| (Source::Day(day), format!("{own}-{shared}")))
            .collect();
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

/// Each day file's value at `stamps`, in day order: the one `cached`
/// holds when its stamp is the same, else `read`'s for the day (`None`:
/// left out); `cached` then holds what this walk gave, and nothing of
/// the day files gone.
fn by_stamp<T: Clone>(
    stamps: &Stamps,
    cached: &mut BTreeMap<std::ffi::OsString, (Stamp, T)>,
    mut read: impl FnMut(&str) -> Result<Option<T>>,
) -> Result<Vec<(String, T)>> {
    let mut kept = BTreeMap::new();
    let mut out = Vec::new();
    for (name, stamp) in stamps {
        let (Some(stamp), Some(day)) = (stamp, day_of(name)) else {
            continue;
        };
        let value = match cached.remove(name) {
            Some((was, value)) if was == *stamp => value,
            _ => match read(day)? {
                Some(value) => value,
                None => continue,
            },
        };
        out.push((day.to_string(), value.clone()));
        kept.insert(name.clone(), (*stamp, value));
    }
    *cached = kept;
    Ok(out)
}

/// A day file as last hashed: its bytes (valid UTF-8) and the hash's
/// state after them. When the file is read again and begins with those
/// bytes (it was appended to), only the rest is hashed: the same hash as
/// the whole file's, for a fraction of it (hashing a day file of 10,000
/// facts, 1 MB, was 1 ms of each append's sync: `memd bench search-path
/// --sizes 10000 --per-day 20000`). Kept for [`KEEP_GROWN`] day files.
struct Grown {
    name: std::ffi::OsString,
    bytes: Vec<u8>,
    state: sha2::Sha256,
}

/// How many day files [`Grown`] keeps: today's, and a few a clock near
/// midnight or a hand edit of another day touches in between.
const KEEP_GROWN: usize = 4;

/// The own hash of the day file `name` at `path` ([`own_hash`]), hashing
/// only what was appended since it was last hashed into `grown`.
fn day_hash(
    grown: &mut Vec<Grown>,
    name: &std::ffi::OsStr,
    path: &std::path::Path,
) -> Option<String> {
    use sha2::Digest;
    let Ok(bytes) = std::fs::read(path) else {
        return own_hash(path);
    };
    let at = grown.iter().position(|g| g.name == name);
    let (mut state, from) = match at.map(|i| grown.remove(i)) {
        Some(g) if bytes.starts_with(&g.bytes) => (g.state, g.bytes.len()),
        _ => (sha2::Sha256::new(), 0),
    };
    // What was kept is valid UTF-8, so it ends where a character does.
    let Ok(rest) = std::str::from_utf8(&bytes[from..]) else {
        // Hashed as it reads, invalid bytes replaced; not kept.
        return Some(short_hash(&String::from_utf8_lossy(&bytes), 16));
    };
    state.update(rest.as_bytes());
    grown.push(Grown {
        name: name.to_os_string(),
        bytes,
        state: state.clone(),
    });
    if grown.len() > KEEP_GROWN {
        grown.remove(0);
    }
    Some(short_hex(state, 16))
}

/// The day of a day file's name (`YYYY-MM-DD.md`), as [`stamps`] keys it.
fn day_of(name: &std::ffi::OsStr) -> Option<&str> {
    let day = name.to_str()?.strip_suffix(".md")?;
    is_day(day).then_some(day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory;

    /// The fingerprints a daemon keeps, reading again only the day files
    /// that changed (those it stamped, and those the kernel named), are the
    /// ones every file read anew gives, through appends, a new and a
    /// removed day file, and a change to what every fingerprint shares
    /// (the tombstones); and so are the day files it keeps parsed (what a
    /// daemon's `status` counts).
    #[test]
    fn fingerprints_kept_between_changes_equal_those_read_anew() {
        kept_between_changes_equal_those_read_anew(Seen::default);
        kept_between_changes_equal_those_read_anew(Seen::watching);
    }

    fn kept_between_changes_equal_those_read_anew(seen: fn() -> Seen) {
        let t = tempfile::tempdir().unwrap();
        let layout = memory::init(t.path()).unwrap();
        let day = |d: &str| layout.archive_file(d);
        for d in ["2026-01-01", "2026-01-02", "2026-01-03"] {
            std::fs::write(day(d), format!("# {d}\n\n## 09:00:00\n- fact of {d}\n")).unwrap();
        }
        let mut seen = seen();
        let check = |seen: &mut Seen, what: &str| {
            let kept = seen.fingerprints(&layout).unwrap();
            assert_eq!(*kept, now(&layout).unwrap(), "after {what}");
            let days = seen.archive(&layout).unwrap();
            let again = seen.archive(&layout).unwrap();
            assert!(Arc::ptr_eq(&days, &again), "asked again after {what}");
            let parsed = archive::facts_of(days.iter().map(|(d, p)| (d.as_str(), &**p)));
            let read = archive::read_all(&layout).unwrap();
            assert_eq!(format!("{parsed:?}"), format!("{read:?}"), "after {what}");
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
        let text = std::fs::read_to_string(day("2026-01-03")).unwrap();
        let edited = text.replace("fact of", "a longer fact of") + "- and more\n";
        std::fs::OpenOptions::new()
            .write(true)
            .open(day("2026-01-03"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, edited.as_bytes()))
            .unwrap();
        check(&mut seen, "a rewrite in place that grew the file");
        let bad = |d: &str, bytes: &[u8]| {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(day(d))
                .unwrap();
            f.write_all(bytes).unwrap();
        };
        bad("2026-01-02", b"- caf\xe9\n");
        check(&mut seen, "an append of invalid UTF-8");
        append("2026-01-02", "after the invalid byte");
        check(&mut seen, "an append after it");
        bad(
            "2026-01-03",
            "- caf\u{e9}".as_bytes().split_last().unwrap().1,
        );
        check(&mut seen, "an append that ends inside a character");
        bad("2026-01-03", b"\xa9 au lait\n");
        check(&mut seen, "the rest of the character");
    }

    /// The last syncs' fingerprints a writer keeps are those in the files
    /// as they are now: read again after each sync's record and each mark
    /// of sources being written, whichever process wrote them.
    #[test]
    fn the_synced_fingerprints_kept_follow_their_files() {
        let t = tempfile::tempdir().unwrap();
        let layout = memory::init(t.path()).unwrap();
        std::fs::create_dir_all(layout.index_dir()).unwrap();
        let mut seen = Seen::watching();
        assert!(seen.synced(&layout).is_empty());
        let day = |d: &str| Source::Day(d.to_string());
        let mut prints = Prints::new();
        for (n, d) in ["2026-01-01", "2026-01-02", "2026-01-03"]
            .iter()
            .enumerate()
        {
            prints.insert(day(d), format!("print-{n}"));
            save_synced(&layout, &prints).unwrap();
            assert_eq!(*seen.synced(&layout), synced(&layout), "after sync {n}");
            assert_eq!(seen.synced(&layout).len(), n + 1);
        }
        begin_sync(&layout, [day("2026-01-02")].iter()).unwrap();
        assert_eq!(*seen.synced(&layout), synced(&layout), "after the mark");
        assert!(!seen.synced(&layout).contains_key(&day("2026-01-02")));
        forget_synced(&layout).unwrap();
        assert!(
            seen.synced(&layout).is_empty(),
            "after the sync records went"
        );
    }
}
