//! `memd sync`: one memory on two machines through a git remote on this
//! machine (`file://`), changed apart and merged by memd's drivers.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::{memd, pause_and_kill, stderr, stdout};
use crate::trust::{add, check, consolidate, entries, found, fresh, ok};

mod erasure;
mod hostile;

/// A bare repository to sync through, and its URL.
fn remote() -> (tempfile::TempDir, String) {
    let t = tempfile::tempdir().unwrap();
    git(
        t.path(),
        &["init", "--quiet", "--bare", "--initial-branch=main"],
    );
    let url = format!("file://{}", t.path().display());
    (t, url)
}

pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn sync(dir: &Path) -> String {
    ok(dir, &["sync"])
}

/// Every file of a memory but what is derived (`.memd/`), git's own, and
/// temporary files.
pub(crate) fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            let name = e.file_name().to_string_lossy().into_owned();
            // A temporary file a killed write left is no file of the
            // memory's (git ignores it: `.*.tmp`).
            let temporary = name.starts_with('.') && name.ends_with(".tmp");
            if rel == ".git" || rel == ".memd" || temporary {
                continue;
            }
            match e.file_type().unwrap().is_dir() {
                true => todo.push(e.path()),
                false => {
                    out.insert(rel, std::fs::read(e.path()).unwrap());
                }
            }
        }
    }
    out
}

fn assert_same(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    for (path, bytes) in &ta {
        assert_eq!(
            String::from_utf8_lossy(bytes),
            String::from_utf8_lossy(tb.get(path).map_or(&[][..], |b| b)),
            "{path} differs"
        );
    }
    assert_eq!(ta.keys().collect::<Vec<_>>(), tb.keys().collect::<Vec<_>>());
}

fn assert_clean(dir: &Path) {
    let (passed, kinds, v) = check(dir);
    assert!(passed, "memd check: {kinds:?}\n{v:#}");
}

fn entry_saying(dir: &Path, words: &str) -> String {
    entries(dir)
        .into_iter()
        .find(|(_, t, _)| t.contains(words))
        .unwrap_or_else(|| panic!("no entry says {words:?}: {:?}", entries(dir)))
        .0
}

/// The user moved: an update of `entry` (Seattle) the agent declares.
fn moved_to_portland(dir: &Path, entry: &str) {
    let args = [
        "add",
        "User moved to Portland",
        "--supersedes",
        entry,
        "--no-similar",
    ];
    ok(dir, &args);
}

/// Two machines sharing `url`: A started it, B joined with facts of its
/// own; both hold the same files.
fn two_machines(url: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let (a, b) = (fresh(), fresh());
    let (a_, b_) = (a.path(), b.path());
    add(a_, "User likes green tea");
    add(a_, "User lives in Seattle");
    consolidate(a_);
    ok(a_, &["sync", "--remote", url]);
    add(b_, "User plays chess on Sundays");
    ok(b_, &["sync", "--remote", url]);
    sync(a_);
    assert_same(a_, b_);
    (a, b)
}

#[test]
fn two_machines_that_change_one_memory_apart_hold_the_same_files_after_both_sync_twice() {
    for a_first in [true, false] {
        let (_remote, url) = remote();
        let (a, b) = two_machines(&url);
        let (a, b) = (a.path(), b.path());
        // Apart: a move declared as an update, a forget and a new fact on
        // A; a run, a new fact, a hand note in MEMORY.md and an undo on B.
        let seattle = entry_saying(a, "Seattle");
        let tea = entry_saying(a, "green tea");
        moved_to_portland(a, &seattle);
        consolidate(a);
        ok(a, &["forget", &tea]);
        add(a, "User drinks coffee at work");
        consolidate(b);
        add(b, "User owns a cat named Miso");
        let undone = consolidate(b);
        ok(b, &["undo", &undone]);
        let md = std::fs::read_to_string(b.join("MEMORY.md")).unwrap();
        std::fs::write(
            b.join("MEMORY.md"),
            md.replace("# MEMORY\n", "# MEMORY\n\nCall mom on Fridays.\n"),
        )
        .unwrap();
        let (x, y) = if a_first { (a, b) } else { (b, a) };
        for _ in 0..2 {
            sync(x);
            sync(y);
        }
        sync(x);
        assert_same(a, b);
        for dir in [a, b] {
            assert_clean(dir);
            let md = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
            assert!(md.contains("Call mom on Fridays."), "{md}");
            for fact in ["Portland", "coffee at work", "Miso", "chess on Sundays"] {
                assert!(
                    found(dir, fact).iter().any(|t| t.contains(fact)),
                    "{fact} is not found after the syncs"
                );
            }
            assert!(
                !found(dir, "green tea")
                    .iter()
                    .any(|t| t.contains("green tea"))
            );
        }
    }
}

/// Both machines consolidate the same fact apart, alike: they make the
/// same entry under the same id (an entry's id comes from its text and
/// its facts), so after the sync one entry holds it and says it, and a
/// run after changes nothing of that.
#[test]
fn a_fact_both_machines_consolidated_alike_is_one_entry_after_the_sync() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    consolidated_apart((a, b), "User keeps bees in the garden", false);
    assert_eq!(holding(a, "bees").len(), 1, "{:?}", holding(a, "bees"));
    assert_eq!(holding(a, "bees")[0].2.len(), 1, "the fact is held");
    assert_clean(a);
    consolidate(a);
    sync(a);
    sync(b);
    assert_same(a, b);
    for dir in [a, b] {
        assert_clean(dir);
        assert_eq!(holding(dir, "bees").len(), 1, "{:?}", holding(dir, "bees"));
        assert!(found(dir, "bees").iter().any(|t| t.contains("bees")));
    }
}

/// Both machines consolidate the same fact apart into different entries
/// (one also holds a second saying of it): after the sync one entry holds
/// the fact (the other, a duplicate, merged into it), and `memd undo` of
/// the sync's run takes that merge back.
#[test]
fn a_fact_both_machines_consolidated_apart_is_one_entry_and_the_merge_undoes() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    consolidated_apart((a, b), "User keeps bees in the garden", true);
    assert_eq!(holding(a, "bees").len(), 1, "{:?}", holding(a, "bees"));
    assert_clean(a);
    let runs: serde_json::Value = serde_json::from_str(&ok(a, &["runs", "--json"])).unwrap();
    let mut runs_back = runs.as_array().unwrap().iter().rev();
    let merged = runs_back.find(|r| r["kind"] == "sync" && r["ops"]["REMOVE"].is_number());
    let merged = merged.unwrap_or_else(|| panic!("{runs:#}"));
    ok(a, &["undo", merged["id"].as_str().unwrap()]);
    assert_eq!(holding(a, "bees").len(), 2, "{:?}", holding(a, "bees"));
    assert_clean(a);
}

/// `text` added on `a` and synced to `b` (which says it again, with
/// `again`); each consolidates apart, then syncs bring the two together.
fn consolidated_apart((a, b): (&Path, &Path), text: &str, again: bool) {
    add(a, text);
    sync(a);
    sync(b);
    if again {
        add(b, text);
    }
    consolidate(a);
    consolidate(b);
    sync(a);
    sync(b);
    sync(a);
    assert_same(a, b);
}

/// The entries of memory `dir` that say `text`.
fn holding(dir: &Path, text: &str) -> Vec<(String, String, Vec<String>)> {
    entries(dir)
        .into_iter()
        .filter(|(_, t, _)| t.contains(text))
        .collect()
}

#[test]
fn an_entry_forgotten_on_one_machine_stays_forgotten_when_the_other_changed_it() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let seattle = entry_saying(a, "Seattle");
    ok(a, &["forget", &seattle]);
    moved_to_portland(b, &seattle);
    consolidate(b);
    assert!(entry_saying(b, "Portland") == seattle);
    sync(a);
    sync(b);
    sync(a);
    assert_same(a, b);
    for dir in [a, b] {
        assert!(!entries(dir).iter().any(|(id, ..)| *id == seattle));
        assert!(!found(dir, "Seattle").iter().any(|t| t.contains("Seattle")));
        assert!(
            found(dir, "Portland")
                .iter()
                .any(|t| t.contains("Portland"))
        );
        assert_clean(dir);
    }
    consolidate(b);
    assert!(entries(b).iter().any(|(_, t, _)| t.contains("Portland")));
    assert_clean(b);
}

#[test]
fn a_push_the_remote_refuses_leaves_the_memory_as_it_was_and_the_next_sync_pushes_it() {
    let (remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let hook = remote.path().join("hooks/pre-receive");
    let flag = remote.path().join("refuse");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\n[ -e {} ] && echo 'no pushes today' && exit 1\nexit 0\n",
            flag.display()
        ),
    )
    .unwrap();
    Command::new("chmod").arg("+x").arg(&hook).status().unwrap();
    std::fs::write(&flag, "").unwrap();
    add(a, "User keeps bees");
    let before = tree(a);
    let out = memd(a, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("refused the push") && said.contains("no pushes today"),
        "{said}"
    );
    assert_eq!(tree(a), before, "a refused push changes no file");
    std::fs::remove_file(&flag).unwrap();
    assert!(sync(a).contains("pushed"));
    sync(b);
    assert!(found(b, "bees").iter().any(|t| t.contains("bees")));
}

#[test]
fn a_conflict_in_the_persons_own_text_is_left_for_the_person_and_the_rest_is_merged() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    for (dir, note) in [(a, "Prefers mornings."), (b, "Prefers evenings.")] {
        let md = std::fs::read_to_string(dir.join("MEMORY.md")).unwrap();
        std::fs::write(
            dir.join("MEMORY.md"),
            md.replace("# MEMORY\n", &format!("# MEMORY\n\n{note}\n")),
        )
        .unwrap();
    }
    add(a, "User keeps bees");
    add(b, "User reads sci-fi");
    sync(a);
    let out = memd(b, &["sync"]);
    assert_eq!(out.status.code(), Some(6), "{}", stdout(&out));
    assert!(stderr(&out).contains("MEMORY.md"), "{}", stderr(&out));
    let (passed, kinds, _) = check(b);
    assert!(
        !passed && kinds.contains(&"sync_unfinished".to_string()),
        "{kinds:?}"
    );
    let day = std::fs::read_dir(b.join("archive"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(day).unwrap();
    assert!(
        text.contains("User keeps bees") && text.contains("User reads sci-fi"),
        "{text}"
    );
    // Still unresolved: another sync says so and changes nothing.
    assert_eq!(memd(b, &["sync"]).status.code(), Some(6));
    let md = std::fs::read_to_string(b.join("MEMORY.md")).unwrap();
    let resolved: String = md
        .lines()
        .filter(|l| {
            !l.starts_with("<<<<<<<") && !l.starts_with("=======") && !l.starts_with(">>>>>>>")
        })
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(b.join("MEMORY.md"), resolved).unwrap();
    assert!(sync(b).contains("pushed"));
    sync(a);
    assert_same(a, b);
    assert_clean(a);
}

#[test]
fn a_sync_killed_at_any_step_is_finished_by_the_next() {
    for step in ["sync-committed", "sync-merged", "sync-settled"] {
        let (_remote, url) = remote();
        let (a, b) = changed_apart(&url);
        let (a, b) = (a.path(), b.path());
        assert!(
            pause_and_kill(b, &["sync"], step),
            "sync exited before {step}"
        );
        if step != "sync-committed" {
            let (passed, kinds, _) = check(b);
            assert!(
                !passed && kinds.iter().any(|k| k == "sync_unfinished"),
                "check is loud about a merge left uncommitted at {step}: {kinds:?}"
            );
        }
        both_sync_and_hold_both_changes(a, b);
    }
}

/// [`two_machines`], each with a run of its own since: A's synced, B's
/// not yet.
fn changed_apart(url: &str) -> (tempfile::TempDir, tempfile::TempDir) {
    let (a, b) = two_machines(url);
    add(a.path(), "User keeps bees");
    consolidate(a.path());
    sync(a.path());
    add(b.path(), "User reads sci-fi");
    consolidate(b.path());
    (a, b)
}

/// B syncs, then A: both hold the same files, are clean, and find both
/// changes of [`changed_apart`].
fn both_sync_and_hold_both_changes(a: &Path, b: &Path) {
    sync(b);
    sync(a);
    assert_same(a, b);
    for dir in [a, b] {
        assert_clean(dir);
        for fact in ["bees", "sci-fi"] {
            assert!(found(dir, fact).iter().any(|t| t.contains(fact)), "{fact}");
        }
    }
}

/// A merge driver killed mid-merge (each one git runs, one after
/// another) leaves a file in conflict without markers: the sync takes the
/// merge back whole and fails saying so, nothing half-merged is committed,
/// and the next sync merges.
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn a_merge_driver_killed_mid_merge_takes_the_merge_back_and_the_next_sync_merges() {
    let (_remote, url) = remote();
    let (a, b) = changed_apart(&url);
    let (a, b) = (a.path(), b.path());
    let before = tree(b);
    let mut child =
        crate::support::paused(b, &["sync"], "merge-driver").expect("the merge ran a driver");
    let marker = b.join(".memd/paused-at-merge-driver");
    let mut killed = 0;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if let Ok(pid) = std::fs::read_to_string(&marker) {
            std::fs::remove_file(&marker).unwrap();
            let kill = Command::new("kill").args(["-KILL", pid.trim()]).status();
            assert!(kill.unwrap().success());
            killed += 1;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(killed > 0);
    assert!(!status.success(), "a sync whose merge failed succeeded");
    assert!(
        !b.join(".git/MERGE_HEAD").exists(),
        "the merge was taken back"
    );
    assert_eq!(tree(b), before, "the files are as the sync found them");
    assert_clean(b);
    both_sync_and_hold_both_changes(a, b);
}

#[test]
fn a_memory_without_a_remote_is_told_how_to_set_one() {
    let dir = fresh();
    let out = memd(dir.path(), &["sync"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--remote"), "{}", stderr(&out));
}

#[test]
fn the_daemon_of_one_memory_syncs_on_its_timer() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let mut toml = std::fs::read_to_string(a.join("memd.toml")).unwrap();
    toml.push_str("[sync]\ninterval_seconds = 1\n");
    std::fs::write(a.join("memd.toml"), toml).unwrap();
    let _daemon = crate::serving::start(&memd::Layout::new(a), &[]);
    add(a, "User keeps bees");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        sync(b);
        if found(b, "bees").iter().any(|t| t.contains("bees")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon never pushed the fact"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

#[test]
fn a_remote_that_cannot_be_reached_leaves_the_memory_as_it_was_and_the_next_sync_pushes() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    add(a, "User keeps bees");
    // The network is down: the remote cannot be reached.
    let gone = format!("file://{}/nowhere.git", a.display());
    git(a, &["remote", "set-url", "origin", &gone]);
    let before = tree(a);
    let out = memd(a, &["sync"]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let said = stderr(&out);
    assert!(
        said.contains("fetch") && said.contains("next sync"),
        "{said}"
    );
    assert_eq!(tree(a), before, "a failed fetch changes no file");
    assert!(ok(a, &["sync", "--remote", &url]).contains("pushed"));
    sync(b);
    assert!(found(b, "bees").iter().any(|t| t.contains("bees")));
}

#[test]
fn a_fresh_clone_is_told_it_lacks_the_merge_drivers_until_its_first_sync() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let clone = tempfile::tempdir().unwrap();
    git(clone.path(), &["clone", "--quiet", &url, "."]);
    let notes = |dir: &Path| -> Vec<String> {
        let (passed, _, v) = check(dir);
        assert!(passed, "{v:#}");
        v["notes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["kind"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(notes(clone.path()).contains(&"sync_drivers".to_string()));
    sync(clone.path());
    assert!(!notes(clone.path()).contains(&"sync_drivers".to_string()));
    assert!(!notes(a.path()).contains(&"sync_drivers".to_string()));
}

#[test]
fn the_daemon_of_one_memory_syncs_after_a_run_that_changed_something() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let mut toml = std::fs::read_to_string(a.join("memd.toml")).unwrap();
    toml = toml.replace(
        "[consolidation]\n",
        "[consolidation]\ninterval_seconds = 1\n",
    );
    toml.push_str("[sync]\nafter_consolidation = true\n");
    std::fs::write(a.join("memd.toml"), toml).unwrap();
    let _daemon = crate::serving::start(&memd::Layout::new(a), &[]);
    add(a, "User keeps bees");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    loop {
        sync(b);
        if entries(b).iter().any(|(_, t, _)| t.contains("bees")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the daemon never pushed its run"
        );
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
}

#[test]
fn a_memory_inside_another_repository_is_never_synced_with_it() {
    let (_remote, url) = remote();
    let outer = tempfile::tempdir().unwrap();
    git(outer.path(), &["init", "--quiet"]);
    std::fs::write(outer.path().join("private.txt"), "not the memory's").unwrap();
    let dir = outer.path().join("memory");
    assert!(
        memd(&dir, &["init", dir.to_str().unwrap()])
            .status
            .success()
    );
    let out = memd(&dir, &["sync", "--remote", &url]);
    assert_eq!(out.status.code(), Some(2), "{}", stdout(&out));
    assert!(stderr(&out).contains("git init"), "{}", stderr(&out));
    let origin = Command::new("git")
        .arg("-C")
        .arg(outer.path())
        .args(["remote"])
        .output()
        .unwrap();
    assert!(
        origin.stdout.is_empty(),
        "the outer repository's remotes are untouched"
    );
    git(&dir, &["init", "--quiet"]);
    ok(&dir, &["sync", "--remote", &url]);
    let pushed = git(outer.path(), &["ls-remote", &url]);
    assert!(!pushed.is_empty());
    let clone = tempfile::tempdir().unwrap();
    git(clone.path(), &["clone", "--quiet", &url, "."]);
    assert!(!clone.path().join("private.txt").exists());
}
