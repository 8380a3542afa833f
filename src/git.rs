//! What git holds of a memory directory that lives in a repository:
//! the commits whose trees still hold a text (`git log -S`, through the
//! `git` command). memd never rewrites git history; an erasure says what
//! remains there and how to purge it ([`crate::erase`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

/// What remains of an erased text in the git repository the memory
/// directory is in.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GitHistory {
    /// The repository's top directory.
    pub repo: String,
    /// The commits (any branch or tag) that add or remove one of the
    /// texts, newest first: every commit from the first of them on holds
    /// it, until the last.
    pub commits: Vec<String>,
    /// Whether git was searched for every text (false: git is not
    /// installed or failed, or the texts are already gone from the files,
    /// as when an erasure is run again to finish it).
    pub searched: bool,
    /// How to purge it: memd does not.
    pub purge: String,
}

/// The repository `dir` is in: the nearest `.git` above it.
fn repository(dir: &Path) -> Option<PathBuf> {
    let dir = dir.canonicalize().ok()?;
    dir.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

const PURGE: &str = "memd does not rewrite git history. Commit the erasure, then take the text out of every commit listed, for example with `git filter-repo --replace-text FILE` (FILE holding the text, kept outside the repository), and force-push every branch and tag to every remote. Clones made before keep the text.";

/// What git holds of `texts`, when `dir` is in a repository.
pub fn history_of(dir: &Path, texts: &BTreeSet<String>) -> Option<GitHistory> {
    let repo = repository(dir)?;
    let mut commits: Vec<String> = Vec::new();
    let mut searched = !texts.is_empty();
    for t in texts.iter().filter(|t| !t.trim().is_empty()) {
        let out = Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["log", "--all", "--format=%H", "-S", t])
            .output();
        match out {
            Ok(o) if o.status.success() => {
                for c in String::from_utf8_lossy(&o.stdout).lines() {
                    if !commits.iter().any(|x| x == c) {
                        commits.push(c.to_string());
                    }
                }
            }
            _ => searched = false,
        }
    }
    Some(GitHistory {
        repo: repo.display().to_string(),
        commits,
        searched,
        purge: PURGE.to_string(),
    })
}
