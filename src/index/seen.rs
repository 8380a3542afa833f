//! The files' fingerprints without reading every file each time.
//!
//! A fingerprint hashes a file's whole content, and a sync needs every
//! source file's (a daemon syncs before each search). [`Seen`] keeps the
//! last fingerprints with each file's identity and size and modification
//! time (following symbolic links, as memd reads and writes through them),
//! and hashes again only what changed. An append changes the size, memd's
//! rewrites replace the file (a new inode), and an editor's save changes
//! the time; a rewrite of the same length within one tick of the file
//! system clock would be missed until the next change of that file.

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::Layout;
use crate::Result;

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
    let m = std::fs::metadata(path).ok()?;
    Some(Stamp {
        dev: m.dev(),
        ino: m.ino(),
        len: m.len(),
        mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
        ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
    })
}

/// Each file the fingerprints depend on, with its stamp (`None`: absent).
type Stamps = BTreeMap<PathBuf, Option<Stamp>>;

/// The stamps of every file the fingerprints depend on.
fn stamps(layout: &Layout) -> Result<Stamps> {
    let mut paths = vec![
        layout.entries_file(),
        layout.state_file(),
        layout.tombstones_file(),
        layout.memory_md(),
    ];
    for day in layout.archive_days()? {
        paths.push(layout.archive_file(&day));
    }
    Ok(paths.into_iter().map(|p| (p.clone(), stamp(&p))).collect())
}

#[derive(Default)]
pub(super) struct Seen {
    /// The stamps when the fingerprints were last computed, and those.
    last: Option<(Stamps, BTreeMap<String, String>)>,
}

impl Seen {
    /// Every source file's fingerprint ([`super::source_fingerprints`]),
    /// computed again only when a file's stamp changed.
    pub(super) fn fingerprints(&mut self, layout: &Layout) -> Result<BTreeMap<String, String>> {
        let now = stamps(layout)?;
        if let Some((stamps, prints)) = &self.last
            && *stamps == now
        {
            return Ok(prints.clone());
        }
        let prints = super::source_fingerprints(layout)?;
        // A file changed while it was read is stamped again next time.
        if stamps(layout)? == now {
            self.last = Some((now, prints.clone()));
        }
        Ok(prints)
    }
}
