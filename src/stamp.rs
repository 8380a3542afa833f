//! What identifies a version of a file without reading it: its device,
//! inode, length, and modification and change times. The index's
//! fingerprints ([`crate::index`]) and the versions tail
//! ([`crate::versions`]) both decide by it whether a file changed.

use std::os::unix::fs::MetadataExt;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stamp {
    pub dev: u64,
    pub ino: u64,
    pub len: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Stamp {
    /// The stamp of the file `m` describes.
    pub(crate) fn of(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            ctime_ns: m.ctime() as i128 * 1_000_000_000 + m.ctime_nsec() as i128,
        }
    }

    /// The stamp of the file at `path`, if the file system says one.
    pub(crate) fn at(path: &std::path::Path) -> Option<Stamp> {
        Some(Stamp::of(&std::fs::metadata(path).ok()?))
    }

    /// Whether a write after now would carry later times than these
    /// ([`written_by`]): only then does the stamp prove what was read
    /// with it.
    pub(crate) fn settled(&self) -> bool {
        let ns = u64::try_from(self.mtime_ns.max(self.ctime_ns)).unwrap_or(0);
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(ns);
        std::time::SystemTime::now() > written_by(at)
    }
}

/// The latest time a write stamped `modified` may have happened. Linux
/// stamps a write with its coarse clock, which lags the real time by up
/// to one tick (1/HZ: 10 ms at HZ=100, the coarsest setting), so a write
/// made just after a time can carry a stamp just before it; a file system
/// that keeps whole seconds (no nanoseconds) may be up to 2 s behind
/// (FAT's granularity). Until then the file may still have held what it
/// held before the write.
pub(crate) fn written_by(modified: std::time::SystemTime) -> std::time::SystemTime {
    let whole_seconds = modified
        .duration_since(std::time::UNIX_EPOCH)
        .is_ok_and(|d| d.subsec_nanos() == 0);
    let lag = match whole_seconds {
        true => std::time::Duration::from_secs(2),
        false => std::time::Duration::from_millis(20),
    };
    modified + lag
}
