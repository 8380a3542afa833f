//! Which day files changed since a writer last looked, as the kernel tells
//! it (inotify), so that the sync before a daemon's search stats only the
//! day files that changed, not every one in the archive: at 3,000 day files
//! that stat of each was a large share of a search (BENCHMARKS.md, "Search
//! and append as the day files grow").
//!
//! One inotify instance per process (a user has 128 by default, shared with
//! their editor and every other program that watches files), one watch per
//! archive directory, shared by every [`Subscription`] to it; each
//! subscription has its own list of the names changed since it last took
//! them.
//!
//! The kernel queues an event before the write that causes it returns, so a
//! write acknowledged before a search began is in the queue the search's
//! sync drains. When the kernel cannot say, [`Subscription::take`] answers
//! [`Changed::Unknown`] and the caller stamps every file: the queue
//! overflowed, or the directory was removed, moved or unmounted (the
//! subscription is then [`Subscription::is_gone`]). The kernel reports
//! nothing for writes through another link to a file (a day file that is a
//! symbolic link, or a hard link written through another directory), nor
//! for changes a network file system receives from another machine: the
//! caller stamps such files every time, and every file every so often
//! ([`super::fingerprints`]).

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::Path;
use std::sync::Mutex;

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};

/// What changed since a subscription last took its changes.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Changed {
    /// The names in the directory that changed (created, written, their
    /// times or modes changed, removed, renamed from or to).
    Names(BTreeSet<OsString>),
    /// The kernel cannot say (its queue overflowed, or the directory went).
    Unknown,
}

/// One writer's interest in one directory.
pub(super) struct Subscription {
    wd: WatchDescriptor,
    id: u64,
}

/// What each subscription has not taken yet: `None` when the kernel lost
/// track; with `gone`, the directory itself went.
#[derive(Default)]
struct Pending {
    names: Option<BTreeSet<OsString>>,
    gone: bool,
}

/// The process's inotify instance and its subscribers, per watch.
struct Kernel {
    fd: Inotify,
    subscribers: HashMap<WatchDescriptor, HashMap<u64, Pending>>,
    next: u64,
}

/// `None` until the first subscription; `Some(None)` if the kernel has no
/// instance to give.
static KERNEL: Mutex<Option<Option<Kernel>>> = Mutex::new(None);

const MASK: WatchMask = WatchMask::MODIFY
    .union(WatchMask::ATTRIB)
    .union(WatchMask::CREATE)
    .union(WatchMask::DELETE)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF)
    .union(WatchMask::ONLYDIR);

/// Events that end a watch: the directory went, or its file system.
const GONE: EventMask = EventMask::IGNORED
    .union(EventMask::DELETE_SELF)
    .union(EventMask::MOVE_SELF)
    .union(EventMask::UNMOUNT);

/// Watch `dir` (following a symbolic link to it) for its names' changes
/// from now on; `None` when the kernel will not (no inotify instance or
/// watch to spare, or no such directory): the caller then stamps every
/// file each time, as without a watch.
pub(super) fn subscribe(dir: &Path) -> Option<Subscription> {
    let mut kernel = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
    let kernel = kernel
        .get_or_insert_with(|| match Inotify::init() {
            Ok(fd) => Some(Kernel {
                fd,
                subscribers: HashMap::new(),
                next: 0,
            }),
            Err(e) => {
                tracing::debug!(error = %e, "no inotify instance: every sync stamps every day file");
                None
            }
        })
        .as_mut()?;
    // Events already queued for a watch on this directory belong to the
    // subscribers before this one.
    kernel.drain();
    let wd = match kernel.fd.watches().add(dir, MASK) {
        Ok(wd) => wd,
        Err(e) => {
            tracing::debug!(error = %e, dir = %dir.display(), "no inotify watch: every sync stamps every day file");
            return None;
        }
    };
    let id = kernel.next;
    kernel.next += 1;
    let fresh = Pending {
        names: Some(BTreeSet::new()),
        gone: false,
    };
    kernel
        .subscribers
        .entry(wd.clone())
        .or_default()
        .insert(id, fresh);
    Some(Subscription { wd, id })
}

impl Subscription {
    /// The names changed since the last take (or the subscription).
    pub(super) fn take(&self) -> Changed {
        let mut kernel = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Some(kernel)) = kernel.as_mut() else {
            return Changed::Unknown;
        };
        kernel.drain();
        let Some(pending) = kernel
            .subscribers
            .get_mut(&self.wd)
            .and_then(|s| s.get_mut(&self.id))
        else {
            return Changed::Unknown;
        };
        match pending.names.as_mut() {
            Some(names) if !pending.gone => Changed::Names(std::mem::take(names)),
            Some(_) | None => {
                pending.names = (!pending.gone).then(BTreeSet::new);
                Changed::Unknown
            }
        }
    }

    /// Whether the watched directory went (removed, moved, unmounted): no
    /// more events will come, and the caller subscribes again.
    pub(super) fn is_gone(&self) -> bool {
        let kernel = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Some(kernel)) = kernel.as_ref() else {
            return true;
        };
        kernel
            .subscribers
            .get(&self.wd)
            .and_then(|s| s.get(&self.id))
            .is_none_or(|p| p.gone)
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut kernel = KERNEL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(Some(kernel)) = kernel.as_mut() else {
            return;
        };
        let Some(subs) = kernel.subscribers.get_mut(&self.wd) else {
            return;
        };
        subs.remove(&self.id);
        if subs.is_empty() {
            kernel.subscribers.remove(&self.wd);
            // Fails harmlessly when the kernel already ended the watch.
            let _ = kernel.fd.watches().remove(self.wd.clone());
        }
    }
}

impl Kernel {
    /// Read every queued event and hand each to the subscribers of its
    /// watch.
    fn drain(&mut self) {
        let mut buffer = [0u8; 16 * 1024];
        loop {
            let events = match self.fd.read_events(&mut buffer) {
                Ok(events) => events,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    tracing::warn!(error = %e, "reading inotify events failed: stamping every day file");
                    self.lose_all();
                    return;
                }
            };
            for event in events {
                if event.mask.contains(EventMask::Q_OVERFLOW) {
                    self.lose_all();
                    continue;
                }
                let Some(subs) = self.subscribers.get_mut(&event.wd) else {
                    continue;
                };
                for pending in subs.values_mut() {
                    if event.mask.intersects(GONE) {
                        pending.gone = true;
                    } else if let (Some(names), Some(name)) = (pending.names.as_mut(), event.name) {
                        names.insert(name.to_os_string());
                    }
                }
            }
        }
    }

    /// The queue overflowed: no subscriber knows what changed.
    fn lose_all(&mut self) {
        for pending in self.subscribers.values_mut().flat_map(|s| s.values_mut()) {
            pending.names = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two subscribers to one directory each see every change once, a
    /// third made later sees only what came after it, and a removed
    /// directory is reported gone.
    #[test]
    fn each_subscriber_takes_the_names_changed_since_it_last_took_them() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("archive");
        std::fs::create_dir(&dir).unwrap();
        let names = |v: &[&str]| Changed::Names(v.iter().map(OsString::from).collect());
        let (a, b) = (subscribe(&dir).unwrap(), subscribe(&dir).unwrap());
        std::fs::write(dir.join("2026-01-01.md"), "x").unwrap();
        assert_eq!(a.take(), names(&["2026-01-01.md"]));
        let c = subscribe(&dir).unwrap();
        std::fs::write(dir.join("2026-01-02.md"), "y").unwrap();
        assert_eq!(a.take(), names(&["2026-01-02.md"]));
        assert_eq!(b.take(), names(&["2026-01-01.md", "2026-01-02.md"]));
        assert_eq!(c.take(), names(&["2026-01-02.md"]));
        assert_eq!(a.take(), names(&[]));
        drop(b);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(a.take(), Changed::Unknown);
        assert!(a.is_gone() && c.is_gone());
    }
}
