//! The two files as they are on disk now, and from when memd may say
//! they held that.

use chrono::{DateTime, FixedOffset, Local};

use super::File;
use crate::Layout;
use crate::atomic;
use crate::core_md::CoreMd;
use crate::error::Result;

/// Where `file` is.
pub(super) fn path(layout: &Layout, file: File) -> std::path::PathBuf {
    match file {
        File::Memory => layout.entries_file(),
        File::Core => layout.memory_md(),
    }
}

/// A file's content now, as versions record it, and the time from which
/// it surely held: its modification time, plus how far that time may lag
/// the write it dates ([`written_by`]).
pub(super) fn read_now(
    layout: &Layout,
    file: File,
) -> Result<(Option<String>, Option<DateTime<FixedOffset>>)> {
    let path = path(layout, file);
    // Missing, or not a file (a directory put where it was): unreadable.
    let meta = match std::fs::metadata(&path) {
        Ok(m) if m.is_file() => m,
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
        _ => return Ok((None, None)),
    };
    let Some(bytes) = atomic::read_if_exists(&path)? else {
        return Ok((None, None));
    };
    let mtime = meta
        .modified()
        .ok()
        .map(|t| DateTime::<Local>::from(crate::stamp::written_by(t)).fixed_offset());
    let content = match file {
        File::Memory => String::from_utf8(bytes).ok(),
        File::Core => CoreMd::parse(&bytes)
            .ok()
            .and_then(|md| md.generated().map(str::to_string)),
    };
    Ok((content, mtime))
}
