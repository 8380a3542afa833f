//! `memd sync`: one memory on many machines, with git as the engine.
//!
//! The memory directory is (or is in) a git repository with one remote.
//! A sync, under the entries lock and the day files' locks (so no memd
//! writer changes a file while git does):
//! 1. commits the local changes, with a message that says what changed;
//! 2. fetches;
//! 3. merges with memd's merge drivers ([`merge`]), then settles what no
//!    one file's merge can ([`settle`]) and commits the merge;
//! 4. pushes, and when the push lost a race to another machine's, fetches
//!    and merges again (up to [`PUSH_ATTEMPTS`] times).
//!
//! **Why the git command.** Debian's `git` is on every machine that has
//! a remote worth syncing with, it already holds the user's credentials
//! (SSH keys, credential helpers) and its merge machinery runs our
//! drivers; `git2`/`gix` would add a C library or a large build for less.
//!
//! **Faults.** A push the remote refuses, a network error, or a sync
//! killed at any point leave the local memory as it was (its changes are
//! committed locally, never lost) and the next sync tries again. A merge
//! that leaves a conflict (the person's own text, changed on both sides
//! in one place) stops before committing: the files say it with git's
//! markers, the reply names them, and the next sync, once the person has
//! removed the markers, commits the merge. A remote whose history someone
//! rewrote (force-pushed) is merged like any other: nothing of either side
//! is dropped, and the reply says it.
//!
//! **Trust.** A remote is untrusted: its data is merged, its authority
//! never taken ([`authority`]: configuration, git's own files, links);
//! a redaction it sends is taken only with its erasure receipt
//! ([`settle`]).
//!
//! The daemon syncs on a timer when `[sync] interval_seconds` is set.

pub mod merge;

mod authority;
mod day;
mod lines;
mod settle;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde::{Deserialize, Serialize};

use crate::atomic;
use crate::error::{Context, Error, Result};
use crate::remedy::Remedy;

/// How many times a push that lost a race is tried again, each after a
/// fetch and a merge: a second machine pushing within the same second is
/// rare, three in a row rarer still.
pub const PUSH_ATTEMPTS: usize = 4;

/// What a sync did.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Synced {
    /// The repository's top directory.
    pub repository: String,
    pub remote: String,
    pub branch: String,
    /// The local commit made of this machine's changes (its message), if
    /// there were any.
    pub committed: Option<String>,
    /// Whether the other side's changes were merged in.
    pub merged: bool,
    /// Files left for the person, with why: nothing is committed or pushed
    /// until they are resolved.
    pub conflicts: Vec<String>,
    pub pushed: bool,
    /// Settled after the merge: entries forgotten on one side kept out,
    /// facts held twice held once, facts made pending again.
    pub settled: Vec<String>,
    /// Erasures of one side finished on the merge (ids).
    pub erased_again: Vec<String>,
    /// Said to the person: a rewritten remote, a retried push.
    pub notes: Vec<String>,
}

/// The git repository around a memory directory.
pub(crate) struct Repo {
    top: PathBuf,
}

impl Repo {
    fn git(&self) -> Command {
        let mut c = Command::new("git");
        c.arg("-C").arg(&self.top);
        c.env("GIT_TERMINAL_PROMPT", "0");
        // git's words are read (a push that lost a race): in English.
        c.env("LC_ALL", "C");
        c.env("GIT_MERGE_AUTOEDIT", "no");
        c
    }

    /// Run git; its failure is an error with git's own words.
    fn run(&self, args: &[&str]) -> Result<String> {
        let out = self.output(args)?;
        match out.status.success() {
            true => Ok(String::from_utf8_lossy(&out.stdout).trim().to_string()),
            false => Err(Error::Service(format!(
                "git {} failed: {}",
                args.join(" "),
                said(&out)
            ))),
        }
    }

    fn output(&self, args: &[&str]) -> Result<Output> {
        self.git()
            .args(args)
            .output()
            .context("running git (is it installed?)")
    }

    fn ok(&self, args: &[&str]) -> bool {
        self.output(args).is_ok_and(|o| o.status.success())
    }

    /// File `path` (relative to the top) as commit `rev` holds it; `None`
    /// when it holds none (or `rev` names nothing).
    fn show(&self, rev: &str, path: &str) -> Option<String> {
        let out = self.output(&["show", &format!("{rev}:{path}")]).ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn said(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = if err.trim().is_empty() {
        String::from_utf8_lossy(&out.stdout)
    } else {
        err
    };
    text.trim().to_string()
}

/// The paths of a memory and the merge each takes (`.gitattributes`).
const ATTRIBUTES: &[(&str, merge::Kind)] = &[
    ("archive/*.md", merge::Kind::Archive),
    ("consolidated/memory.md", merge::Kind::Entries),
    ("consolidated/journal.jsonl", merge::Kind::Jsonl),
    ("consolidated/versions.jsonl", merge::Kind::Versions),
    ("consolidated/review.jsonl", merge::Kind::Jsonl),
    ("MEMORY.md", merge::Kind::Core),
    (".tombstones.jsonl", merge::Kind::Jsonl),
    (".recall_log.jsonl", merge::Kind::Jsonl),
    (".llm_usage.jsonl", merge::Kind::Jsonl),
    (".consolidation_state.json", merge::Kind::State),
];

/// Paths git merges with a driver of its own: REVIEW.md by lines, both
/// sides' items kept ([`crate::review`]; an item one side took out, as a
/// rejection, stays out when the other left it as it was).
const BUILT_IN: &[&str] = &["consolidated/REVIEW.md merge=union"];

/// What git never holds: everything derived, and the temporary files of
/// atomic writes.
const IGNORED: &[&str] = &[".memd/", ".*.tmp"];

/// Make `dir` a repository (or adopt the one it is in), with memd's merge
/// drivers, ignores and attributes, and `remote` as `origin` when given.
pub(crate) fn prepare(dir: &Path, remote: Option<&str>) -> Result<Repo> {
    let probe = Repo {
        top: dir.to_path_buf(),
    };
    if !probe.ok(&["rev-parse", "--show-toplevel"]) {
        probe.run(&["init", "--quiet", "--initial-branch=main"])?;
    }
    let top = PathBuf::from(probe.run(&["rev-parse", "--show-toplevel"])?);
    let own = dir
        .canonicalize()
        .context("reading the memory directory's path")?;
    if top.canonicalize().ok().as_deref() != Some(own.as_path()) {
        return Err(Error::Invalid(format!(
            "the memory directory is inside the git repository at {}: memd sync commits and pushes a repository of the memory's own, never one around it (run `git init` in the memory directory to give it one)",
            top.display()
        )));
    }
    let repo = Repo { top };
    let exe = std::env::current_exe().context("finding memd's own path for git's merge drivers")?;
    // A binary replaced while this process ran is named "… (deleted)".
    let exe = PathBuf::from(exe.display().to_string().trim_end_matches(" (deleted)"));
    for kind in merge::Kind::ALL {
        let key = format!("merge.memd-{}", kind.name());
        let driver = format!(
            "'{}' merge-driver {} %O %A %B",
            exe.display().to_string().replace('\'', "'\\''"),
            kind.name()
        );
        repo.run(&[
            "config",
            &format!("{key}.name"),
            &format!("memd {}", kind.name()),
        ])?;
        repo.run(&["config", &format!("{key}.driver"), &driver])?;
    }
    if !repo.ok(&["config", "user.email"]) {
        repo.run(&["config", "user.email", "memd@localhost"])?;
        repo.run(&["config", "user.name", "memd"])?;
    }
    write_lines_missing(&dir.join(".gitignore"), IGNORED)?;
    let attributes: Vec<String> = ATTRIBUTES
        .iter()
        .map(|(path, kind)| format!("{path} merge=memd-{} -text", kind.name()))
        .collect();
    let mut attributes: Vec<&str> = attributes.iter().map(String::as_str).collect();
    attributes.extend(BUILT_IN);
    write_lines_missing(&dir.join(".gitattributes"), &attributes)?;
    authority::own_attributes(&repo, &attributes)?;
    if let Some(url) = remote {
        match repo.ok(&["remote", "get-url", "origin"]) {
            true => repo.run(&["remote", "set-url", "origin", url])?,
            false => repo.run(&["remote", "add", "origin", url])?,
        };
    }
    if !repo.ok(&["remote", "get-url", "origin"]) {
        return Err(
            Error::Invalid("this memory has no remote to sync with".into())
                .remedied(Remedy::SetRemote),
        );
    }
    Ok(repo)
}

/// How a memory set up for sync stands (`memd check`).
pub struct Health {
    /// Files a merge left in conflict, each with what to do.
    pub unfinished: Vec<(String, String)>,
    /// Merge drivers `.gitattributes` names that git's config lacks.
    pub missing_drivers: Vec<String>,
    /// A merge git made that no commit finished (a sync killed after
    /// git merged): the next `memd sync` finishes it.
    pub interrupted: bool,
    /// Lines of `.gitattributes` that give memd's files another merge
    /// (memd's own, in `.git/info/attributes`, win over them).
    pub other_merges: Vec<String>,
}

/// `None` when `dir` was never set up by `memd sync` (its
/// `.gitattributes` names none of memd's merge drivers) or git cannot
/// be asked.
pub fn health(dir: &Path) -> Option<Health> {
    let attributes = std::fs::read_to_string(dir.join(".gitattributes")).ok()?;
    if !attributes.contains("merge=memd-") {
        return None;
    }
    let repo = Repo {
        top: dir.to_path_buf(),
    };
    let top = PathBuf::from(repo.run(&["rev-parse", "--show-toplevel"]).ok()?);
    let repo = Repo { top };
    let mut out = Health {
        unfinished: Vec::new(),
        missing_drivers: Vec::new(),
        interrupted: false,
        other_merges: other_merges(&attributes),
    };
    for kind in merge::Kind::ALL {
        let key = format!("merge.memd-{}.driver", kind.name());
        if attributes.contains(&format!("merge=memd-{}", kind.name()))
            && !repo.ok(&["config", &key])
        {
            out.missing_drivers.push(format!("memd-{}", kind.name()));
        }
    }
    if repo.ok(&["rev-parse", "-q", "--verify", "MERGE_HEAD"]) {
        let files = repo.run(&["diff", "--name-only", "--diff-filter=U"]).ok()?;
        out.unfinished = files
            .lines()
            .map(|f| (f.to_string(), "a sync's merge left this file in conflict: edit it to what it should say (remove the <<<<<<< ======= >>>>>>> markers), then sync".to_string()))
            .collect();
        out.interrupted = out.unfinished.is_empty();
    }
    Some(out)
}

/// The lines of a `.gitattributes` text that set a merge other than
/// memd's own for a path memd merges.
fn other_merges(attributes: &str) -> Vec<String> {
    let ours: Vec<&str> = ATTRIBUTES.iter().map(|(p, _)| *p).collect();
    attributes
        .lines()
        .map(str::trim)
        .filter(|l| !BUILT_IN.contains(l))
        .filter(|l| {
            let mut words = l.split_whitespace();
            let path = words.next().unwrap_or_default();
            let merges = |w: &str| w.starts_with("merge") || w == "-merge" || w == "binary";
            ours.contains(&path) && words.any(|w| merges(w) && !w.starts_with("merge=memd-"))
        })
        .map(String::from)
        .collect()
}

/// Add each of `lines` that `path` lacks (a person's lines stay).
fn write_lines_missing(path: &Path, lines: &[&str]) -> Result<()> {
    let now = std::fs::read_to_string(path).unwrap_or_default();
    let have: Vec<&str> = now.lines().map(str::trim).collect();
    let missing: Vec<&&str> = lines.iter().filter(|l| !have.contains(l)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut next = now.clone();
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    for l in missing {
        next.push_str(l);
        next.push('\n');
    }
    atomic::write(path, next.as_bytes()).with_context(|| format!("writing {}", path.display()))
}

mod run;
pub use run::sync;
