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
//!   one in as entries;
//! - **deletions of what is only appended to**: a day file of the archive,
//!   the tombstones, the journal, the versions and the review's record
//!   (facts leave the archive only by an erasure's redaction, with its
//!   receipt).
//!
//! After git merges (and before memd reads any merged file), each such
//! path the merge changed is put back as this machine had it, or taken out
//! when this machine had none, and the sync's reply says so. memd's merge
//! drivers are named in `.git/info/attributes` too, which git reads before
//! any `.gitattributes` and which no merge touches ([`own_attributes`]).

use std::collections::HashSet;
use std::path::Path;

use super::{Repo, merge};
use crate::atomic;
use crate::error::{Context, Result};

/// Whether `path` (relative to the top, `/`-separated) is one a remote may
/// not set: configuration, derived state, or a file git reads for itself.
fn steers(path: &str) -> bool {
    path == "memd.toml"
        || path.starts_with(".memd/")
        || path.split('/').any(|part| part.starts_with(".git"))
}

/// Whether `path` is a file memd only ever appends to (an erasure
/// redacts in place, never deletes): an archive day file or one of the
/// logs a forget, a run or a review is recorded in.
fn append_only(path: &str) -> bool {
    use crate::layout::rel;
    let day = path
        .strip_prefix(rel::ARCHIVE)
        .is_some_and(|f| f.ends_with(".md") && !f.contains('/'));
    day || [rel::TOMBSTONES, rel::JOURNAL, rel::VERSIONS, rel::PROPOSALS].contains(&path)
}

/// What git prints, as it prints it (not trimmed: a name may start or end
/// with a space).
fn raw(repo: &Repo, args: &[&str]) -> Result<String> {
    let out = repo.output(args)?;
    if !out.status.success() {
        return repo.run(args);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The paths of `paths` the merge's index holds as a link or a submodule
/// (any stage: a conflict's side counts too): one `git ls-files`.
fn linked(repo: &Repo, paths: &[&str]) -> Result<HashSet<String>> {
    let mut args = vec!["ls-files", "-z", "--stage", "--"];
    args.extend(paths);
    let staged = raw(repo, &args)?;
    Ok(staged
        .split('\0')
        .filter(|l| l.starts_with("120000 ") || l.starts_with("160000 "))
        .filter_map(|l| l.split_once('\t').map(|(_, p)| p.to_string()))
        .collect())
}

/// The paths of `paths` that commit `rev` holds: one `git ls-tree`.
fn held(repo: &Repo, rev: &str, paths: &[&str]) -> Result<HashSet<String>> {
    let mut args = vec![
        "ls-tree",
        "-z",
        "-r",
        "--name-only",
        "--full-tree",
        rev,
        "--",
    ];
    args.extend(paths);
    Ok(raw(repo, &args)?.split('\0').map(String::from).collect())
}

/// Put back what the merge in progress took from the remote that a remote
/// may not set (see the module doc); one line for each, for the reply.
pub(super) fn keep_local(repo: &Repo) -> Result<Vec<String>> {
    // NUL-separated: a name git would quote (a tab, a newline, a space at
    // either end) is matched as it is.
    let args = [
        "diff",
        "-z",
        "--cached",
        "--name-only",
        "--no-renames",
        "HEAD",
    ];
    let changed = raw(repo, &args)?;
    let changed: Vec<&str> = changed.split('\0').filter(|p| !p.is_empty()).collect();
    if changed.is_empty() {
        return Ok(Vec::new());
    }
    let links = linked(repo, &changed)?;
    let (ours, theirs) = (
        held(repo, "HEAD", &changed)?,
        held(repo, "MERGE_HEAD", &changed)?,
    );
    let mut said = Vec::new();
    for path in changed {
        let here = ours.contains(path);
        if !here && !theirs.contains(path) {
            // A side of a conflict of types (a file on one side, a link on
            // the other) that git set aside under a name of its own
            // (`FILE~HEAD`): the path it came from is put back whole.
            put_back(repo, path, false)?;
            continue;
        }
        let why = match steers(path) {
            true => "configuration and git's own files come from this machine",
            false if links.contains(path) => "links and submodules are never taken from a remote",
            false if here && !theirs.contains(path) && append_only(path) => {
                "the archive and memd's logs are only ever appended to: a remote cannot delete them"
            }
            false => continue,
        };
        put_back(repo, path, here)?;
        if links.contains(path) && here && merge_last_file(repo, path)? {
            said.push(format!(
                "{path}: the remote's link was not taken ({why}); what the remote last held there as a file was merged"
            ));
            continue;
        }
        said.push(format!("{path}: the remote's change was not taken ({why})"));
    }
    Ok(said)
}

/// `path` as HEAD (this machine's last commit) holds it (`here`), in the
/// index and the working tree; taken out of both when HEAD holds none.
fn put_back(repo: &Repo, path: &str, here: bool) -> Result<()> {
    if here {
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

/// The merge memd's drivers give `path`, if any ([`super::ATTRIBUTES`]).
fn merge_kind(path: &str) -> Option<merge::Kind> {
    super::ATTRIBUTES
        .iter()
        .find(|(pattern, _)| match pattern.strip_suffix("*.md") {
            Some(dir) => path
                .strip_prefix(dir)
                .is_some_and(|f| f.ends_with(".md") && !f.contains('/')),
            None => *pattern == path,
        })
        .map(|(_, kind)| *kind)
}

/// A data file the remote turned into a link, put back as this machine
/// had it ([`put_back`]), then merged with what the remote last held at
/// `path` as a file (against the two sides' merge base), by memd's own
/// driver: the link is refused, the facts and entries the other copies
/// pushed before it are not (a run would otherwise read an entry the
/// journal names and the file lacks as deleted by hand). Whether it merged
/// (false: no such file, no driver, or a conflict, and HEAD's stays).
fn merge_last_file(repo: &Repo, path: &str) -> Result<bool> {
    let Some(kind) = merge_kind(path) else {
        return Ok(false);
    };
    let revs = raw(repo, &["rev-list", "MERGE_HEAD", "--", path])?;
    let is_file = |rev: &str| {
        raw(repo, &["ls-tree", rev, "--", path]).is_ok_and(|l| l.starts_with("100644 "))
    };
    let Some(theirs) = revs.lines().find(|rev| is_file(rev)) else {
        return Ok(false);
    };
    let base = repo
        .run(&["merge-base", "HEAD", theirs])
        .unwrap_or_default();
    let blob = |rev: &str| -> Vec<u8> {
        repo.output(&["show", &format!("{rev}:{path}")])
            .ok()
            .filter(|o| o.status.success() && !rev.is_empty())
            .map(|o| o.stdout)
            .unwrap_or_default()
    };
    let file = repo.top.join(path);
    let ours = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
    let Some(merged) = merge::clean(kind, &blob(&base), &ours, &blob(theirs)) else {
        return Ok(false);
    };
    atomic::write(&file, &merged)?;
    repo.run(&["add", "--", path])?;
    Ok(true)
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
    use super::{append_only, steers};

    #[test]
    fn the_archives_days_and_memds_logs_are_append_only_and_the_rest_is_not() {
        for p in [
            "archive/2026-11-29.md",
            ".tombstones.jsonl",
            "consolidated/journal.jsonl",
        ] {
            assert!(append_only(p), "{p}");
        }
        for p in [
            "archive/x/2026-11-29.md",
            "MEMORY.md",
            "consolidated/memory.md",
            "memd.toml",
        ] {
            assert!(!append_only(p), "{p}");
        }
    }

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
