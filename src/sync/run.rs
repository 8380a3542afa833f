//! One sync, step by step (see the module doc of [`super`]).

use std::fs::File;

use super::{PUSH_ATTEMPTS, Repo, Synced, prepare};
use crate::error::{Error, Result};
use crate::pause::{Step, at};
use crate::versions::Writing;
use crate::{Memory, atomic, erase};

/// Sync `memory` with its remote (`remote`: set it first). Blocking: it
/// runs git.
pub fn sync(memory: &Memory, remote: Option<&str>) -> Result<Synced> {
    let repo = prepare(&memory.layout.root, remote)?;
    let branch = repo
        .run(&["symbolic-ref", "--short", "HEAD"])
        .unwrap_or_else(|_| "main".into());
    let mut out = Synced {
        repository: repo.top.display().to_string(),
        remote: repo.run(&["remote", "get-url", "origin"])?,
        branch: branch.clone(),
        ..Synced::default()
    };
    if repo.ok(&["rev-parse", "-q", "--verify", "MERGE_HEAD"]) {
        out.conflicts = resolved_or_not(&repo)?;
        if !out.conflicts.is_empty() {
            return Ok(out);
        }
        finish_merge(memory, &repo, &mut out)?;
    }
    for attempt in 0..PUSH_ATTEMPTS {
        if attempt > 0 {
            out.notes.push(
                "the push lost a race with another machine's: fetched and merged again".into(),
            );
        }
        commit_and_merge(memory, &repo, &mut out)?;
        if !out.conflicts.is_empty() {
            return Ok(out);
        }
        match push(&repo, &branch)? {
            Pushed::Done => {
                out.pushed = true;
                return Ok(out);
            }
            Pushed::Behind => continue,
        }
    }
    Err(Error::Service(format!(
        "the push to {} lost to another machine's {PUSH_ATTEMPTS} times; your changes are committed here, and the next sync pushes them",
        out.remote
    )))
}

/// Commit the local changes, fetch, and merge what the remote has.
fn commit_and_merge(memory: &Memory, repo: &Repo, out: &mut Synced) -> Result<()> {
    let branch = out.branch.clone();
    let tracking = format!("refs/remotes/origin/{branch}");
    let before = repo.run(&["rev-parse", "-q", "--verify", &tracking]).ok();
    // Before the locks: a slow network holds up no append or run.
    repo.run(&["fetch", "--quiet", "origin"]).map_err(|e| {
        Error::Service(format!(
            "{e}; nothing changed here, and the next sync tries again"
        ))
    })?;
    {
        let _writing = Writing::start(memory)?;
        let _days = lock_days(memory)?;
        if let Some(message) = commit_local(repo)? {
            out.committed = Some(message);
        }
        at(&memory.layout, Step::SyncCommitted);
        let Ok(theirs) = repo.run(&["rev-parse", "-q", "--verify", &tracking]) else {
            return Ok(());
        };
        if let Some(old) = &before
            && *old != theirs
            && !repo.ok(&["merge-base", "--is-ancestor", old, &theirs])
        {
            out.notes.push(format!(
                "the remote's history was rewritten since the last sync (origin/{branch} no longer holds {old:.12}); merged with yours, nothing of either dropped"
            ));
        }
        if repo.ok(&["merge-base", "--is-ancestor", &theirs, "HEAD"]) {
            return Ok(());
        }
        let merged = repo.output(&[
            "merge",
            "--no-commit",
            "--no-ff",
            "--allow-unrelated-histories",
            &tracking,
        ])?;
        out.merged = true;
        let put_back = super::authority::keep_local(repo)?;
        // A conflict over what a remote may not set is settled by putting
        // this machine's back: when that was the only one, the merge goes on.
        let settled = !put_back.is_empty()
            && repo
                .run(&["diff", "--name-only", "--diff-filter=U"])?
                .is_empty();
        out.notes.extend(put_back);
        if !merged.status.success() && !settled {
            return left_to_the_person(repo, out, &super::said(&merged));
        }
    }
    finish_merge(memory, repo, out)
}

/// A merge git could not finish: the files in conflict are the person's
/// when each holds conflict markers; one without (a merge driver that
/// failed: a binary gone, a crash) is never the person's to commit as it
/// is, so the merge is taken back whole, and the sync fails saying why.
fn left_to_the_person(repo: &Repo, out: &mut Synced, said: &str) -> Result<()> {
    let files = repo.run(&["diff", "--name-only", "--diff-filter=U"])?;
    let unmarked: Vec<&str> = files
        .lines()
        .filter(|f| !has_markers(&repo.top.join(f)))
        .collect();
    if files.is_empty() || !unmarked.is_empty() {
        let _ = repo.run(&["merge", "--abort"]);
        return Err(Error::Service(format!(
            "git merge failed ({said}); nothing was merged{}",
            match unmarked.is_empty() {
                true => String::new(),
                false => format!(", the merge of {} failed", unmarked.join(", ")),
            }
        )));
    }
    out.conflicts = unmerged(&files);
    Ok(())
}

fn has_markers(path: &std::path::Path) -> bool {
    let text = std::fs::read(path).unwrap_or_default();
    text.split(|b| *b == b'\n')
        .any(|l| l.starts_with(b"<<<<<<< ") || l.starts_with(b">>>>>>> "))
}

/// Settle the merge across files, finish the other side's erasures, and
/// commit it.
fn finish_merge(memory: &Memory, repo: &Repo, out: &mut Synced) -> Result<()> {
    // Again for a merge an earlier sync left (killed after git merged).
    out.notes.extend(super::authority::keep_local(repo)?);
    at(&memory.layout, Step::SyncMerged);
    let settled = super::settle::settle(memory, |rev, path| repo.show(rev, path))?;
    let counts = [
        (
            settled.forgotten_kept_out,
            "entries forgotten on one side kept out",
        ),
        (
            settled.held_twice,
            "facts held by two entries now held by one",
        ),
        (
            settled.duplicates,
            "entries saying what another holding their facts says merged into it",
        ),
        (
            settled.pending_again,
            "facts whose entry went made pending again",
        ),
        (
            settled.emptied,
            "entries holding only facts forgotten on one side taken out",
        ),
        (
            settled.let_go,
            "facts forgotten on one side let go by entries holding more",
        ),
    ];
    for (n, what) in counts {
        if n > 0 {
            out.settled.push(format!("{n} {what}"));
        }
    }
    for f in &settled.kept {
        out.notes.push(format!(
            "fact {f}: the merge took it out of its day file; it was appended again (the archive is only ever appended to)"
        ));
    }
    for f in &settled.unredacted {
        out.notes.push(format!(
            "fact {f}: a redaction line came without the erasure receipt that names it; the fact's line was put back (an erasure is taken only with its receipt)"
        ));
    }
    for id in &settled.erasures {
        match erase::erase(memory, id) {
            Ok(_) => out.erased_again.push(id.clone()),
            Err(e) => out.notes.push(format!(
                "erasing {id} again on the merge was refused ({e}); a check names what still holds it"
            )),
        }
    }
    at(&memory.layout, Step::SyncSettled);
    let _days = lock_days(memory)?;
    repo.run(&["add", "--all", "."])?;
    repo.run(&["commit", "--quiet", "--no-edit", "--no-verify"])?;
    Ok(())
}

/// `git add` the files a person resolved (no conflict marker left); the
/// ones still in conflict, with why.
fn resolved_or_not(repo: &Repo) -> Result<Vec<String>> {
    let mut left = Vec::new();
    for path in repo
        .run(&["diff", "--name-only", "--diff-filter=U"])?
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>()
    {
        match has_markers(&repo.top.join(&path)) {
            true => left.push(format!("{path}: still has conflict markers")),
            false => {
                repo.run(&["add", "--", &path])?;
            }
        }
    }
    Ok(left)
}

/// The files a merge left in conflict (`git diff --name-only
/// --diff-filter=U`), each with what to do.
fn unmerged(files: &str) -> Vec<String> {
    files
        .lines()
        .map(|p| format!("{p}: changed on both sides in one place; edit it to what it should say (remove the <<<<<<< ======= >>>>>>> markers), then sync again"))
        .collect()
}

/// Stage everything and commit it, when anything changed; the message.
fn commit_local(repo: &Repo) -> Result<Option<String>> {
    repo.run(&["add", "--all", "."])?;
    if repo.ok(&["diff", "--cached", "--quiet"]) {
        return Ok(None);
    }
    let message = describe(&repo.run(&["diff", "--cached", "--unified=0", "--no-color"])?);
    repo.run(&["commit", "--quiet", "--no-verify", "-m", &message])?;
    Ok(Some(message))
}

/// A commit message from the staged diff: what kinds of change it holds.
fn describe(diff: &str) -> String {
    let mut file = String::new();
    let (mut facts, mut erased, mut records, mut forgets) = (0, 0, 0, 0);
    let mut changed: Vec<&str> = Vec::new();
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ b/") {
            file = path.to_string();
            continue;
        }
        let added = line.starts_with('+') && !line.starts_with("+++");
        match file.as_str() {
            f if f.starts_with("archive/") && added && line.contains("<!-- erased:") => erased += 1,
            f if f.starts_with("archive/") && added && line.starts_with("+- ") => facts += 1,
            "consolidated/journal.jsonl" if added => records += 1,
            ".tombstones.jsonl" if added => forgets += 1,
            "consolidated/memory.md" if !changed.contains(&"entries") => changed.push("entries"),
            "MEMORY.md" if !changed.contains(&"MEMORY.md") => changed.push("MEMORY.md"),
            _ => {}
        }
    }
    let mut parts = Vec::new();
    for (n, what) in [
        (facts, "facts added"),
        (erased, "facts erased"),
        (records, "journal records (runs, edits, undos)"),
        (forgets, "tombstones (forgets)"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    parts.extend(changed.iter().map(|c| format!("{c} changed")));
    if parts.is_empty() {
        parts.push("other files changed".into());
    }
    format!("memd sync: {}", parts.join(", "))
}

enum Pushed {
    Done,
    /// The remote moved on meanwhile.
    Behind,
}

fn push(repo: &Repo, branch: &str) -> Result<Pushed> {
    let refspec = format!("HEAD:refs/heads/{branch}");
    let out = repo.output(&["push", "--quiet", "origin", &refspec])?;
    if out.status.success() {
        return Ok(Pushed::Done);
    }
    let why = super::said(&out);
    // Lost to another push: refused as behind, or (two pushes at once)
    // the ref moved while this one was being written.
    let behind = [
        "fetch first",
        "non-fast-forward",
        "[rejected]",
        "cannot lock ref",
        "failed to update ref",
    ]
    .iter()
    .any(|w| why.contains(w))
        && !why.contains("hook declined");
    match behind {
        true => Ok(Pushed::Behind),
        false => Err(Error::Service(format!(
            "the remote refused the push: {why}; your changes are committed here, and the next sync pushes them"
        ))),
    }
}

/// Every day file opened with its lock held, so that no append lands
/// while git replaces the file (an append waiting on the lock then finds
/// the file the path names: [`crate::atomic::open_locked`]).
fn lock_days(memory: &Memory) -> Result<Vec<File>> {
    let layout = &memory.layout;
    let mut out = Vec::new();
    for day in layout.archive_days()? {
        out.push(atomic::open_locked(&layout.archive_file(&day))?);
    }
    Ok(out)
}
