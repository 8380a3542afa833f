//! Whole files and whole appends: replacement that a reader never sees
//! half done, appends that land whole or not at all, the clean-up of what
//! an interrupted replacement left, and the one place where a missing file
//! reads as empty.
//!
//! Write a temp file in the same directory (so the rename stays on one file
//! system), fsync it, rename it over the target, then fsync the directory so
//! the rename itself survives a crash. Any failure before the rename leaves
//! the old file untouched and removes the temp file; a crash (no chance to
//! remove it) leaves `.NAME.XXXX.tmp` beside the target, which
//! [`remove_stale_temps`] clears.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

/// Atomically replace `path` with `bytes`.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_with_hook(path, bytes, || Ok(()))
}

/// [`write`] with a hook that runs after the temp file is written and synced
/// and before the rename. Tests use it to inject a failure at the last moment;
/// an error from it aborts the write exactly like a failed `fsync` would.
pub fn write_with_hook(
    path: &Path,
    bytes: &[u8],
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<()> {
    let target = through_links(path)?;
    let path = target.as_path();
    let (dir, mut tmp) = temp_beside(path)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    // Keep the permissions a user gave the file.
    if let Ok(meta) = std::fs::metadata(path) {
        tmp.as_file().set_permissions(meta.permissions())?;
    }
    before_rename()?;
    tmp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// A temp file beside `path` (`.NAME.XXXX.tmp`, what
/// [`remove_stale_temps`] clears), and `path`'s directory.
fn temp_beside(path: &Path) -> io::Result<(&Path, tempfile::NamedTempFile)> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .tempfile_in(dir)?;
    Ok((dir, tmp))
}

/// [`write`] without the fsyncs, for a derived file (one lost or torn in
/// a power loss is rebuilt): a reader still never sees half of it.
pub(crate) fn write_unsynced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let (_, mut tmp) = temp_beside(path)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// `path` opened for appending (and reading), created if missing, with its
/// exclusive lock held: the file the path names once the lock is held.
/// An erasure ([`crate::erase`]) renames a new file over an append-only
/// one under its lock; an appender that opened the old file and waited
/// would otherwise append to a file no path names any more.
pub fn open_locked(path: &Path) -> io::Result<File> {
    use fs4::fs_std::FileExt;
    use std::os::unix::fs::MetadataExt;
    loop {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)?;
        file.lock_exclusive()?;
        let (held, named) = (file.metadata()?, std::fs::metadata(path)?);
        if (held.dev(), held.ino()) == (named.dev(), named.ino()) {
            return Ok(file);
        }
    }
}

/// Append `bytes` to `file` (opened for appending, its lock held by the
/// caller, `len` bytes long before this append) and fsync: all or nothing.
/// If the write or the sync fails part-way (a full disk, a file-size
/// limit), the file is cut back to `len`, so no fragment of the append is
/// left for a reader to take as data and a retry writes it whole once.
pub fn append_whole(file: &mut File, len: u64, bytes: &[u8]) -> io::Result<()> {
    append_whole_then(file, len, bytes, true)
}

/// [`append_whole`], with the fsync only if `sync`: without it the append
/// is whole and seen by every reader at once, and durable when the kernel
/// writes it back (for records whose loss in a power cut costs nothing
/// that matters, as the recall log's).
pub fn append_whole_then(file: &mut File, len: u64, bytes: &[u8], sync: bool) -> io::Result<()> {
    let written = file
        .write_all(bytes)
        .and_then(|()| if sync { file.sync_data() } else { Ok(()) });
    if let Err(e) = written {
        if let Err(undo) = file.set_len(len).and_then(|()| file.sync_data()) {
            tracing::error!(error = %undo, "could not cut back a failed append");
        }
        return Err(e);
    }
    Ok(())
}

/// The bytes of `path`, or `None` when there is no such file.
pub(crate) fn read_if_exists(path: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Remove `path`; a file that is not there is already removed.
pub(crate) fn remove(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Remove the temp files that interrupted writes of `path` left behind
/// (named as [`write`] names them). Call it only while holding the lock
/// that every writer of `path` holds, so no write in flight loses its file.
pub(crate) fn remove_stale_temps(path: &Path) {
    let target = through_links(path).unwrap_or_else(|_| path.to_path_buf());
    let (Some(dir), Some(name)) = (target.parent(), target.file_name()) else {
        return;
    };
    let Ok(list) = std::fs::read_dir(dir) else {
        return;
    };
    let prefix = format!(".{}.", name.to_string_lossy());
    for e in list.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        if f.starts_with(&prefix) && f.ends_with(".tmp") {
            tracing::info!(file = %e.path().display(), "removing a temp file left by an interrupted write");
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The file a write of `path` must replace: `path` itself, or, when it is
/// a symbolic link (a MEMORY.md shared between agents, say), the file the
/// link points to, so that the link stays and its target is replaced
/// atomically beside itself. Reading follows links the same way.
fn through_links(path: &Path) -> io::Result<std::path::PathBuf> {
    let mut path = path.to_path_buf();
    // A bound, so that a cycle of links is an error and not a hang.
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::other(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// fsync a directory so a rename or a file creation in it is durable.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
