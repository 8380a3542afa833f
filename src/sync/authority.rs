//! A sync merges data, never authority. What a remote (anyone who can
//! push to it) sends is untrusted (docs/GUARANTEES.md, "Who is trusted"):
//! its facts, entries and records are merged, but nothing that steers memd
//! or git on this machine is taken from it:
//!
//! - **configuration**: `memd.toml`, and `.memd/` (derived, never
//!   committed by memd);
//! - **git's own files**: any path whose name starts with `.git`
//!   (`.gitattributes`, `.gitignore`, `.gitmodules`, in any folder): an
//!   attribute could switch memd's merge drivers off (`merge=binary`), an
//!   ignore could keep this machine's new facts out of every commit;
//! - **links and submodules**: a link at `MEMORY.md` would make memd write
//!   a file outside the memory, and one at `consolidated/memory.md` read
//!   one in as entries.
//!
//! After git merges (and before memd reads any merged file), each such
//! path the merge changed is put back as this machine had it, or taken out
//! when this machine had none, and the sync's reply says so. memd's merge
//! drivers are named in `.git/info/attributes` too, which git reads before
//! any `.gitattributes` and which no merge touches ([`own_attributes`]).

use std::path::Path;

use super::Repo;
use crate::error::{Context, Result};

/// Whether `path` (relative to the top, `/`-separated) is one a remote may
/// not set: configuration, derived state, or a file git reads for itself.
fn steers(path: &str) -> bool {
    path == "memd.toml"
        || path.starts_with(".memd/")
        || path.split('/').any(|part| part.starts_with(".git"))
}

/// Whether the merge's index holds `path` as a link or a submodule (any
/// stage: a conflict's side counts too).
fn linked(repo: &Repo, path: &str) -> Result<bool> {
    let staged = repo.run(&["ls-files", "--stage", "--", path])?;
    Ok(staged
        .lines()
        .any(|l| l.starts_with("120000 ") || l.starts_with("160000 ")))
}

/// Put back what the merge in progress took from the remote that a remote
/// may not set (see the module doc); one line for each, for the reply.
pub(super) fn keep_local(repo: &Repo) -> Result<Vec<String>> {
    let changed = repo.run(&["diff", "--cached", "--name-only", "--no-renames", "HEAD"])?;
    let mut said = Vec::new();
    for path in changed.lines().map(str::trim).filter(|p| !p.is_empty()) {
        if made_by_git(repo, path) {
            // A side of a conflict of types (a file on one side, a link on
            // the other) that git set aside under a name of its own: the
            // path it came from is put back whole.
            put_back(repo, path)?;
            continue;
        }
        let why = match steers(path) {
            true => "configuration and git's own files come from this machine",
            false if linked(repo, path)? => "links and submodules are never taken from a remote",
            false => continue,
        };
        put_back(repo, path)?;
        said.push(format!("{path}: the remote's change was not taken ({why})"));
    }
    Ok(said)
}

/// Whether `path` is in neither side of the merge: a name git gave a side
/// of a conflict it could not record at its own path (`FILE~HEAD`).
fn made_by_git(repo: &Repo, path: &str) -> bool {
    let holds = |rev: &str| repo.ok(&["cat-file", "-e", &format!("{rev}:{path}")]);
    !holds("HEAD") && !holds("MERGE_HEAD")
}

/// `path` as HEAD (this machine's last commit) holds it, in the index and
/// the working tree; taken out of both when HEAD holds none.
fn put_back(repo: &Repo, path: &str) -> Result<()> {
    if repo.ok(&["cat-file", "-e", &format!("HEAD:{path}")]) {
        remove_link(&repo.top.join(path))?;
        repo.run(&["checkout", "HEAD", "--", path])?;
        return Ok(());
    }
    repo.run(&["rm", "--quiet", "--cached", "--force", "--", path])?;
    remove_link(&repo.top.join(path))?;
    let file = repo.top.join(path);
    if file.is_file() {
        std::fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
    }
    Ok(())
}

/// Remove `p` when it is a link (never what it points at).
fn remove_link(p: &Path) -> Result<()> {
    let is_link = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink());
    if is_link {
        std::fs::remove_file(p).with_context(|| format!("removing the link {}", p.display()))?;
    }
    Ok(())
}

/// Name memd's merge drivers in `.git/info/attributes`, which git reads
/// before any `.gitattributes` file: a remote's `.gitattributes` can then
/// add lines but never switch memd's merges off.
pub(super) fn own_attributes(repo: &Repo, lines: &[&str]) -> Result<()> {
    let path = repo.run(&["rev-parse", "--git-path", "info/attributes"])?;
    let path = repo.top.join(path);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    super::write_lines_missing(&path, lines)
}

#[cfg(test)]
mod tests {
    use super::steers;

    #[test]
    fn configuration_and_gits_own_files_in_any_folder_steer_and_data_does_not() {
        for p in [
            "memd.toml",
            ".gitattributes",
            "archive/.gitattributes",
            ".gitignore",
            ".gitmodules",
            ".memd/index/x",
        ] {
            assert!(steers(p), "{p}");
        }
        for p in [
            "archive/2026-11-29.md",
            "MEMORY.md",
            "consolidated/memory.md",
            ".tombstones.jsonl",
            "notes/memd.toml.md",
        ] {
            assert!(!steers(p), "{p}");
        }
    }
}
