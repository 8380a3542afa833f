//! Advisory locks on files under `.memd/`, held for as long as a guard
//! lives. The operating system drops a lock when its process dies, so a
//! crashed run never leaves a stale lock behind.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;

use crate::error::{Context, Error, Result};
use fs4::fs_std::FileExt;

/// A held lock; released on drop (or by the OS when the process dies).
#[derive(Debug)]
pub struct Guard {
    _file: File,
}

/// The lock file at `path`, created (with its folder) if missing; never
/// truncated by opening, so a holder's pid stays readable.
fn open(path: &Path) -> Result<File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// Take the lock at `path` without waiting; `None` when another process (or
/// another handle in this one) holds it. The holder's pid is written into
/// the file.
pub(crate) fn try_lock(path: &Path) -> Result<Option<Guard>> {
    let mut file = open(path)?;
    let locked = FileExt::try_lock_exclusive(&file)
        .with_context(|| format!("locking {}", path.display()))?;
    if !locked {
        return Ok(None);
    }
    file.set_len(0)?;
    write!(file, "{}", std::process::id())?;
    Ok(Some(Guard { _file: file }))
}

/// How long [`lock_within_a_moment`] waits out a lock held for a moment: a
/// holder finishing, any process asking whether the lock is held
/// ([`is_held`] takes it shared for an instant), or a child process this
/// one is starting, which holds a copy of every descriptor between fork
/// and exec (close-on-exec closes it only at exec). Under load that window
/// made a test's second run in a row report its own process as the
/// holder. Longer holds are reported.
const MOMENT: std::time::Duration = std::time::Duration::from_millis(250);

/// [`try_lock`], with an error naming the holder's pid when it is held
/// longer than [`MOMENT`]. `what` names the holder.
pub(crate) fn lock_or_explain(path: &Path, what: &str) -> Result<Guard> {
    if let Some(g) = lock_within_a_moment(path)? {
        return Ok(g);
    }
    let holder = std::fs::read_to_string(path).unwrap_or_default();
    Err(Error::Busy {
        what: what.to_string(),
        pid: holder.trim().parse().ok(),
    })
}

/// [`try_lock`], tried again for up to [`MOMENT`]: `None` when the lock is
/// held all that time. It sleeps between tries: async callers run it on a
/// blocking thread.
pub(crate) fn lock_within_a_moment(path: &Path) -> Result<Option<Guard>> {
    let started = std::time::Instant::now();
    loop {
        match try_lock(path)? {
            Some(g) => return Ok(Some(g)),
            None if started.elapsed() < MOMENT => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            None => return Ok(None),
        }
    }
}

/// Take the lock at `path`, waiting for whoever holds it (on a blocking
/// thread, so async callers can await it).
pub async fn wait_for(path: &Path) -> Result<Guard> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        let file = open(&path)?;
        FileExt::lock_exclusive(&file).with_context(|| format!("locking {}", path.display()))?;
        Ok(Guard { _file: file })
    })
    .await?
}

/// Whether some process holds the lock at `path` (probed with a shared
/// lock, released at once; the file is not touched).
pub(crate) fn is_held(path: &Path) -> bool {
    let Ok(file) = File::open(path) else {
        return false;
    };
    match FileExt::try_lock_shared(&file) {
        Ok(true) => {
            let _ = FileExt::unlock(&file);
            false
        }
        Ok(false) => true,
        Err(_) => false,
    }
}
