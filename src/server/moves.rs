//! Moving a memory of a root from one node to another (`deploy/move.sh`,
//! deploy/README.md): the node that serves it **hands it over**, an
//! operator copies its directory to the node that **takes it over**, and
//! the load balancer is pointed there. At no moment do two nodes write
//! it, and no write a node acknowledged is left behind:
//!
//! 1. **Drain** ([`Leases`]): every request that reaches a memory's files
//!    (the API's, the page's, the consolidation loop's) holds a lease on
//!    its name for as long as it runs. A handover first marks the name
//!    draining, so that a new request is refused with [`Error::Moved`]
//!    (HTTP 503, `kind: "busy"`, `Retry-After`: nothing was done, send it
//!    again), and waits until the leases held are given back.
//! 2. **Close**: the memory's open handle is dropped once the requests
//!    that hold it end (its index commits the rows it held back first),
//!    so the daemon's lock on its directory is given up.
//! 3. **Mark, then move out**: `ROOT/.memd/moved/NAME` is written and
//!    synced, then the directory is renamed to `ROOT/.memd/outgoing/NAME`
//!    and its LLM ledger (`ROOT/.memd/usage/NAME.jsonl`, which the tenant
//!    cannot write) to `outgoing/NAME.usage.jsonl`. From the mark on, this
//!    node refuses the name (after a restart too) and never makes it anew
//!    on a write, until it takes it over again.
//! 4. **Take over** on the new node: the operator's copy, put in
//!    `ROOT/.memd/incoming/NAME` (and `NAME.usage.jsonl`), is renamed into
//!    place, then that node's own mark (if the memory once moved away from
//!    it) is removed.
//!
//! The names under `.memd/` are none a request can name (a memory's name
//! never starts with a dot), and no request names a path: both routes
//! take a memory's name alone.
//!
//! **Crash semantics.** A handover killed before its mark is written
//! leaves the memory served where it was (the map was not changed: the
//! move did not happen). Killed after, the node refuses the memory, and a
//! second handover finishes the renames. A takeover killed after the
//! rename leaves the mark, so the memory is refused until a second
//! takeover removes it. Both are idempotent, so `deploy/move.sh` is run
//! again after any failure.
//!
//! **What is not covered**: a process other than the node writing a
//! memory's directory directly (a `memd` command run on `ROOT/NAME` while
//! the daemon does not have it open) holds no lease. On a node, run
//! commands through its daemon.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

use crate::clock::Clock;
use crate::error::{Context, Result};
use crate::pause::{self, Step};
use crate::{Error, Layout, atomic};

use crate::layout::rel::HANDED_OVER;
pub use crate::layout::rel::{INCOMING, OUTGOING};

/// The longest a handover waits for the requests in flight on a memory
/// (the longest a request runs is a consolidation waiting on an LLM:
/// HAProxy's `timeout server` is 300 s) and then for its handle to be
/// let go. Past it, the handover gives up and the memory is served again.
pub const DRAIN_WAIT: Duration = Duration::from_secs(300);

/// The requests in flight on each memory, and the memories being drained.
#[derive(Default)]
pub struct Leases {
    state: Mutex<LeaseState>,
    changed: tokio::sync::Notify,
}

#[derive(Default)]
struct LeaseState {
    in_flight: HashMap<String, usize>,
    draining: HashSet<String>,
}

/// A request's hold on memory `name`: a handover waits until it is
/// dropped.
pub struct Lease {
    leases: Arc<Leases>,
    name: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut state = self.leases.state.lock().expect("not poisoned");
        let done = match state.in_flight.get_mut(&self.name) {
            Some(n) if *n > 1 => {
                *n -= 1;
                false
            }
            _ => {
                state.in_flight.remove(&self.name);
                true
            }
        };
        drop(state);
        if done {
            self.leases.changed.notify_waiters();
        }
    }
}

impl Leases {
    /// A lease on `name` (canonical), unless it is being drained.
    pub fn enter(self: &Arc<Self>, name: &str) -> Result<Lease> {
        let mut state = self.state.lock().expect("not poisoned");
        if state.draining.contains(name) {
            return Err(moved(name, false));
        }
        *state.in_flight.entry(name.to_string()).or_default() += 1;
        Ok(Lease {
            leases: self.clone(),
            name: name.to_string(),
        })
    }

    /// Whether `name` is being drained.
    pub fn draining(&self, name: &str) -> bool {
        let state = self.state.lock().expect("not poisoned");
        state.draining.contains(name)
    }

    /// Refuse new leases on `name` and wait until none is held; `Busy`
    /// (and `name` served again) if some are still held after `wait`.
    pub async fn drain(&self, name: &str, wait: Duration) -> Result<()> {
        let deadline = tokio::time::Instant::now() + wait;
        self.state
            .lock()
            .expect("not poisoned")
            .draining
            .insert(name.to_string());
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let held = self
                .state
                .lock()
                .expect("not poisoned")
                .in_flight
                .get(name)
                .copied();
            if held.is_none() {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                self.undrain(name);
                return Err(Error::Busy {
                    what: format!(
                        "a request on memory {name:?} that outlasted the handover's wait ({wait:?})"
                    ),
                    pid: None,
                });
            }
        }
    }

    /// Serve `name` again (a handover that gave up), or leave its refusal
    /// to the mark on disk (one that finished).
    pub fn undrain(&self, name: &str) {
        let mut state = self.state.lock().expect("not poisoned");
        state.draining.remove(name);
    }
}

fn moved(name: &str, handed_over: bool) -> Error {
    Error::Moved {
        name: name.to_string(),
        handed_over,
    }
}

/// The mark of memory `name` handed over from `root` (where
/// [`crate::layout::rel::HANDED_OVER`] says).
pub fn mark(root: &Path, name: &str) -> PathBuf {
    root.join(HANDED_OVER).join(name)
}

/// `Moved` when memory `name` (canonical) of `root` was handed over.
pub fn refuse_handed_over(root: &Path, name: &str) -> Result<()> {
    match mark(root, name).exists() {
        true => Err(moved(name, true)),
        false => Ok(()),
    }
}

/// The memories `root` handed over, by name.
pub fn handed_over(root: &Path) -> Vec<String> {
    let Ok(read) = std::fs::read_dir(root.join(HANDED_OVER)) else {
        return Vec::new();
    };
    let mut out: Vec<String> = read
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| super::tenant::check_name(n).is_ok())
        .collect();
    out.sort();
    out
}

/// What a handover did.
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct HandedOver {
    pub name: String,
    /// Whether this node held the memory (a name it never had is marked
    /// all the same, so that a write does not make it here meanwhile).
    pub held: bool,
    /// Where its directory waits to be copied, relative to the root.
    pub outgoing: String,
    /// What there is to copy: its files and their bytes.
    pub files: u64,
    pub bytes: u64,
}

/// The files of a memory handed over: marked, then moved out (steps 3 of
/// the module doc), once nothing in this process uses it. Idempotent: a
/// second call finishes what a first one killed midway left.
pub fn move_out(root: &Path, name: &str) -> Result<HandedOver> {
    let mark = mark(root, name);
    let outgoing = root.join(OUTGOING).join(name);
    let dir = root.join(name);
    if !mark.exists() {
        create_parent(&mark)?;
        atomic::write(&mark, Clock::System.now().to_rfc3339().as_bytes())
            .with_context(|| format!("writing {}", mark.display()))?;
    }
    pause::at(&Layout::new(root), Step::HandoverMarked);
    let held = dir.exists() || outgoing.exists();
    if dir.exists() {
        if outgoing.exists() {
            return Err(Error::Invalid(format!(
                "{} is still here from an earlier move: delete it once the node that took {name:?} over serves it, then hand it over again",
                outgoing.display()
            )));
        }
        create_parent(&outgoing)?;
        rename(&dir, &outgoing)?;
    }
    let ledger = super::tenant::ledger(root, name);
    if ledger.exists() {
        rename(
            &ledger,
            &root.join(OUTGOING).join(format!("{name}.usage.jsonl")),
        )?;
    }
    let (files, bytes) = size(&outgoing);
    Ok(HandedOver {
        name: name.to_string(),
        held,
        outgoing: format!("{OUTGOING}/{name}"),
        files,
        bytes,
    })
}

/// What a takeover did.
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct TakenOver {
    pub name: String,
    /// Whether a copy was moved in (none: the memory was never written
    /// where it came from, or a first takeover moved it in already).
    pub moved_in: bool,
}

/// Memory `name` taken over by `root` from the copy an operator put in
/// `ROOT/.memd/incoming/NAME` (step 4 of the module doc). Idempotent.
pub fn move_in(root: &Path, name: &str) -> Result<TakenOver> {
    let incoming = root.join(INCOMING).join(name);
    let dir = root.join(name);
    let copied = std::fs::symlink_metadata(&incoming).ok();
    let moved_in = match copied {
        Some(m) if !m.is_dir() => {
            return Err(Error::Invalid(format!(
                "{} is not a directory",
                incoming.display()
            )));
        }
        Some(_) if std::fs::symlink_metadata(&dir).is_ok() => {
            return Err(Error::Invalid(format!(
                "memory {name:?} is here already ({}): a copy waits beside it in {}; remove one of them",
                dir.display(),
                incoming.display()
            )));
        }
        Some(_) if Layout::is_memory(&incoming) => {
            rename(&incoming, &dir)?;
            pause::at(&Layout::new(root), Step::TakeoverMovedIn);
            true
        }
        Some(_) => {
            // An empty copy: the memory was never written where it was.
            std::fs::remove_dir_all(&incoming)
                .with_context(|| format!("removing {}", incoming.display()))?;
            false
        }
        None if mark(root, name).exists() || Layout::is_memory(&dir) => false,
        None => {
            return Err(Error::NoSuch {
                what: format!(
                    "copy of memory {name:?} to take over: copy its handed-over directory to {} first",
                    incoming.display()
                ),
            });
        }
    };
    let ledger = root.join(INCOMING).join(format!("{name}.usage.jsonl"));
    if ledger.exists() {
        take_ledger(&ledger, &super::tenant::ledger(root, name))?;
    }
    let mark = mark(root, name);
    if mark.exists() {
        std::fs::remove_file(&mark).with_context(|| format!("removing {}", mark.display()))?;
        atomic::sync_dir(&root.join(HANDED_OVER))?;
    }
    Ok(TakenOver {
        name: name.to_string(),
        moved_in,
    })
}

/// The ledger a memory brought with it, in place of (or after) the one
/// this root has for it: a budget spent elsewhere stays spent.
fn take_ledger(from: &Path, to: &Path) -> Result<()> {
    create_parent(to)?;
    if !to.exists() {
        return rename(from, to);
    }
    let brought = std::fs::read(from).with_context(|| format!("reading {}", from.display()))?;
    let mut file = atomic::open_locked(to)?;
    let len = file.metadata()?.len();
    atomic::append_whole(&mut file, len, &brought)?;
    std::fs::remove_file(from).with_context(|| format!("removing {}", from.display()))?;
    Ok(())
}

fn create_parent(path: &Path) -> Result<()> {
    let parent = path.parent().expect("under a root");
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    Ok(())
}

/// `from` renamed to `to`, the rename synced in both directories.
fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to)
        .with_context(|| format!("moving {} to {}", from.display(), to.display()))?;
    for dir in [from.parent(), to.parent()].into_iter().flatten() {
        atomic::sync_dir(dir)?;
    }
    Ok(())
}

/// The files under `dir` and their bytes (links not followed).
fn size(dir: &Path) -> (u64, u64) {
    let mut todo = vec![dir.to_path_buf()];
    let (mut files, mut bytes) = (0, 0);
    while let Some(d) = todo.pop() {
        let Ok(read) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in read.flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                todo.push(e.path());
            } else {
                files += 1;
                bytes += m.len();
            }
        }
    }
    (files, bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory_at(dir: &Path, fact: &str) {
        std::fs::create_dir_all(dir.join("archive")).unwrap();
        std::fs::write(dir.join("archive/2026-11-30.md"), format!("- {fact}\n")).unwrap();
    }

    #[tokio::test]
    async fn a_drain_that_outlasts_its_wait_serves_the_memory_again() {
        let leases = Arc::new(Leases::default());
        let held = leases.enter("alice").unwrap();
        let drained = leases.drain("alice", Duration::from_millis(50)).await;
        assert!(matches!(drained, Err(Error::Busy { .. })), "{drained:?}");
        assert!(!leases.draining("alice"));
        drop(held);
        let again = leases.enter("alice");
        assert!(again.is_ok());
        drop(again);
        leases
            .drain("alice", Duration::from_millis(50))
            .await
            .unwrap();
        let refused = leases.enter("alice").err().unwrap();
        assert!(refused.is_moved(), "{refused}");
        assert!(leases.enter("bob").is_ok(), "another memory is served");
    }

    #[tokio::test]
    async fn a_drain_ends_when_the_last_lease_is_given_back() {
        let leases = Arc::new(Leases::default());
        let (one, two) = (
            leases.enter("alice").unwrap(),
            leases.enter("alice").unwrap(),
        );
        let give_back = async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(one);
            tokio::time::sleep(Duration::from_millis(30)).await;
            drop(two);
        };
        let (drained, ()) = tokio::join!(leases.drain("alice", Duration::from_secs(10)), give_back);
        drained.unwrap();
        assert!(leases.state.lock().unwrap().in_flight.is_empty());
    }

    #[test]
    fn a_takeover_refuses_a_copy_beside_a_memory_already_here_and_keeps_both() {
        let root = tempfile::tempdir().unwrap();
        memory_at(&root.path().join("alice"), "Alice keeps bees");
        memory_at(
            &root.path().join(INCOMING).join("alice"),
            "Alice keeps goats",
        );
        let refused = move_in(root.path(), "alice").unwrap_err();
        assert!(refused.to_string().contains("is here already"), "{refused}");
        assert!(Layout::is_memory(&root.path().join("alice")));
        assert!(Layout::is_memory(&root.path().join(INCOMING).join("alice")));
    }

    #[test]
    fn a_handover_marks_a_name_it_never_had_and_a_takeover_of_an_empty_copy_lifts_the_mark() {
        let a = tempfile::tempdir().unwrap();
        let handed = move_out(a.path(), "alice").unwrap();
        assert_eq!((handed.held, handed.files), (false, 0));
        assert!(
            refuse_handed_over(a.path(), "alice")
                .unwrap_err()
                .is_moved()
        );
        assert_eq!(handed_over(a.path()), ["alice"]);
        std::fs::create_dir_all(a.path().join(INCOMING).join("alice")).unwrap();
        let taken = move_in(a.path(), "alice").unwrap();
        assert!(!taken.moved_in);
        refuse_handed_over(a.path(), "alice").unwrap();
        assert!(!a.path().join("alice").exists());
    }

    #[test]
    fn a_memorys_ledger_goes_with_it_and_a_budget_spent_stays_spent() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        memory_at(&a.path().join("alice"), "Alice keeps bees");
        let ledger = super::super::tenant::ledger(a.path(), "alice");
        std::fs::create_dir_all(ledger.parent().unwrap()).unwrap();
        std::fs::write(&ledger, "{\"tokens\":10}\n").unwrap();
        let handed = move_out(a.path(), "alice").unwrap();
        assert_eq!((handed.held, handed.files), (true, 1));
        assert!(!ledger.exists());
        // B spent for alice once before (it held her, and both counts
        // stand: the higher spend is the safe one).
        let theirs = super::super::tenant::ledger(b.path(), "alice");
        std::fs::create_dir_all(theirs.parent().unwrap()).unwrap();
        std::fs::write(&theirs, "{\"tokens\":5}\n").unwrap();
        let incoming = b.path().join(INCOMING);
        std::fs::create_dir_all(&incoming).unwrap();
        let out = a.path().join(OUTGOING);
        std::fs::rename(out.join("alice"), incoming.join("alice")).unwrap();
        let from = out.join("alice.usage.jsonl");
        std::fs::rename(from, incoming.join("alice.usage.jsonl")).unwrap();
        assert!(move_in(b.path(), "alice").unwrap().moved_in);
        let spent = std::fs::read_to_string(&theirs).unwrap();
        assert_eq!(spent, "{\"tokens\":5}\n{\"tokens\":10}\n");
        assert!(Layout::is_memory(&b.path().join("alice")));
    }
}
