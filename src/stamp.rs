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
}
