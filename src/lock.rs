//! Advisory locks on files under `.memd/`, held for as long as a guard
//! lives. The operating system drops a lock when its process dies, so a
//! crashed run never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};
use fs4::fs_std::FileExt;

/// A held lock; released on drop (or by the OS when the process dies).
#[derive(Debug)]
pub struct Guard {
    _file: File,
}

/// Take the lock at `path` without waiting. `what` names the holder in the
/// error, which also gives the pid written by the process that holds it.
pub fn try_lock(path: &Path, what: &str) -> Result<Guard> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let locked = FileExt::try_lock_exclusive(&file)
        .with_context(|| format!("locking {}", path.display()))?;
    if !locked {
        let holder = std::fs::read_to_string(path).unwrap_or_default();
        bail!(
            "{what} is already running (pid {}); try again when it has finished",
            holder.trim()
        );
    }
    file.set_len(0)?;
    write!(file, "{}", std::process::id())?;
    Ok(Guard { _file: file })
}
