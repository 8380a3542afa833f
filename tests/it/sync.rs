//! `memd sync`: one memory on two machines through a git remote on this
//! machine (`file://`), changed apart and merged by memd's drivers.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::support::{memd, pause_and_kill, stderr, stdout};
use crate::trust::{add, check, consolidate, entries, found, fresh, ok};

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

/// The files of memory `dir` ([`tree`]) whose bytes say `text`.
fn files_saying(dir: &Path, text: &str) -> Vec<String> {
    tree(dir)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(text))
        .map(|(path, _)| path)
        .collect()
}

/// B syncs, then A, then B: both hold the same files, and no file, no
/// search and no check of either says `secret`.
fn synced_without_saying(a: &Path, b: &Path, secret: &str) {
    sync(b);
    sync(a);
    sync(b);
    assert_same(a, b);
    for dir in [a, b] {
        let holding = files_saying(dir, secret);
        assert!(holding.is_empty(), "{holding:?} hold the erased text");
        assert_clean(dir);
        assert!(!found(dir, secret).iter().any(|t| t.contains(secret)));
    }
}

/// An erasure on one machine reaches the other, which had written the
/// same text again meanwhile (before the erasure reached it): that fact
/// goes too, as it would have on the first machine (an erasure takes
/// every fact of its text), and no file of either holds the text.
#[test]
fn an_erasure_takes_the_text_the_other_machine_wrote_again_before_it_arrived() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let secret = "The garage code is 4417zebra";
    add(a, secret);
    consolidate(a);
    sync(a);
    sync(b);
    add(a, secret);
    let id = entry_saying(b, "4417zebra");
    ok(b, &["forget", "--erase", &id]);
    synced_without_saying(a, b, "4417zebra");
}

/// A fact erased on one machine that the other had consolidated with a
/// second fact of the same text (written before the erasure reached it)
/// into one entry: the merge takes the entry with both facts, so neither
/// machine's files, search or MEMORY.md say the text.
#[test]
fn an_erasure_takes_the_entry_the_other_machine_made_of_its_text() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let secret = "The garage code is 4417zebra";
    let first = add(a, secret);
    sync(a);
    sync(b);
    add(a, secret);
    consolidate(a);
    ok(b, &["forget", "--erase", &first]);
    synced_without_saying(a, b, "4417zebra");
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
fn a_remote_someone_rewrote_is_merged_keeping_both_sides_and_said() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    // Someone replaces the remote's history with B's files in one commit.
    let other = tempfile::tempdir().unwrap();
    git(other.path(), &["clone", "--quiet", &url, "."]);
    git(
        other.path(),
        &["checkout", "--quiet", "--orphan", "rewritten"],
    );
    git(
        other.path(),
        &[
            "-c",
            "user.name=x",
            "-c",
            "user.email=x@x",
            "commit",
            "--quiet",
            "-m",
            "squashed",
        ],
    );
    git(
        other.path(),
        &["push", "--quiet", "--force", "origin", "rewritten:main"],
    );
    add(a, "User keeps bees");
    let said = sync(a);
    assert!(said.contains("rewritten"), "{said}");
    sync(b);
    sync(a);
    assert_same(a, b);
    for dir in [a, b] {
        assert_clean(dir);
        for fact in ["bees", "chess on Sundays", "Seattle"] {
            assert!(found(dir, fact).iter().any(|t| t.contains(fact)), "{fact}");
        }
    }
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

/// A clone of the remote that a stranger commits to with plain git.
fn stranger(url: &str) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    git(t.path(), &["clone", "--quiet", url, "."]);
    git(t.path(), &["config", "user.email", "stranger@example.com"]);
    git(t.path(), &["config", "user.name", "stranger"]);
    t
}

/// Commit everything in `dir` and push it to the remote's main.
fn push_all(dir: &Path) {
    git(dir, &["add", "--all", "."]);
    git(dir, &["commit", "--quiet", "--no-verify", "-m", "stranger"]);
    git(dir, &["push", "--quiet", "origin", "HEAD:main"]);
}

#[test]
fn a_remote_neither_configures_this_machine_nor_switches_memds_merges_off() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let evil = stranger(&url);
    let e = evil.path();
    std::fs::write(
        e.join("memd.toml"),
        "[llm]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"x\"\napi_key_env = \"HOME\"\n",
    )
    .unwrap();
    std::fs::write(e.join(".gitattributes"), "archive/*.md merge=binary\n").unwrap();
    std::fs::write(e.join(".gitignore"), "archive/\n").unwrap();
    push_all(e);
    let config = std::fs::read_to_string(a.join("memd.toml")).unwrap();
    let said = sync(a);
    assert!(
        said.contains("memd.toml"),
        "the sync says what it did not take: {said}"
    );
    assert_eq!(
        std::fs::read_to_string(a.join("memd.toml")).unwrap(),
        config
    );
    assert_eq!(git(a, &["show", "HEAD:memd.toml"]), config);
    let attributes = std::fs::read_to_string(a.join(".gitattributes")).unwrap();
    assert!(!attributes.contains("merge=binary"), "{attributes}");
    // The day's file changed on both machines still merges by memd's driver.
    add(a, "User keeps bees");
    add(b, "User reads sci-fi");
    sync(a);
    both_sync_and_hold_both_changes(a, b);
}

#[test]
fn a_remotes_links_are_never_followed_out_of_the_memory() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let a = a.path();
    let outside = tempfile::tempdir().unwrap();
    let (core, entries_file) = (
        outside.path().join("core.md"),
        outside.path().join("entries.md"),
    );
    std::fs::write(&core, "a file of someone else's\n").unwrap();
    std::fs::write(&entries_file, "- The stranger's entry\n").unwrap();
    let evil = stranger(&url);
    let e = evil.path();
    let day = std::fs::read_dir(e.join("archive"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap();
    let day = format!("archive/{}", day.file_name().to_string_lossy());
    for (link, to) in [
        ("MEMORY.md", &core),
        ("consolidated/memory.md", &entries_file),
        (day.as_str(), &entries_file),
    ] {
        std::fs::remove_file(e.join(link)).unwrap();
        std::os::unix::fs::symlink(to, e.join(link)).unwrap();
    }
    push_all(e);
    // This machine wrote that day too: a file here, a link there.
    add(a, "User grows tomatoes");
    let said = sync(a);
    assert!(said.contains("MEMORY.md"), "{said}");
    for link in ["MEMORY.md", "consolidated/memory.md", day.as_str()] {
        let m = std::fs::symlink_metadata(a.join(link)).unwrap();
        assert!(!m.file_type().is_symlink(), "{link} is a link");
    }
    assert!(found(a, "tomatoes").iter().any(|t| t.contains("tomatoes")));
    add(a, "User keeps bees");
    consolidate(a);
    assert_eq!(
        std::fs::read_to_string(&core).unwrap(),
        "a file of someone else's\n"
    );
    assert_eq!(
        std::fs::read_to_string(&entries_file).unwrap(),
        "- The stranger's entry\n"
    );
    assert!(entries(a).iter().all(|(_, t, _)| !t.contains("stranger")));
    assert_clean(a);
}

#[test]
fn a_redaction_without_its_erasure_receipt_is_put_back_and_check_names_it() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let a = a.path();
    let layout = memd::Layout::open(a).unwrap();
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    let tea = facts.iter().find(|f| f.text.contains("green tea")).unwrap();
    let evil = stranger(&url);
    let e = evil.path();
    let day = e.join(format!("archive/{}.md", tea.day));
    let text = std::fs::read_to_string(&day).unwrap();
    let line = text.lines().nth(tea.line - 1).unwrap().to_string();
    assert!(line.contains("green tea"), "{line}");
    let redacted = format!("- <!-- erased:{} 2026-11-29T00:00:00Z -->", tea.id);
    std::fs::write(&day, text.replace(&line, &redacted)).unwrap();
    let (_, kinds, _) = check(e);
    assert!(
        kinds.iter().any(|k| k == "redacted_without_receipt"),
        "{kinds:?}"
    );
    push_all(e);
    let said = sync(a);
    assert!(said.contains("put back"), "{said}");
    let now = std::fs::read_to_string(a.join(format!("archive/{}.md", tea.day))).unwrap();
    assert!(now.contains(&line), "{now}");
    assert!(
        found(a, "green tea")
            .iter()
            .any(|t| t.contains("green tea"))
    );
    assert_clean(a);
}

/// An erasure on a copy that never pushed, of a text the other copy wrote
/// and pushed as a fact of its own: after both sync, neither copy's files
/// nor the remote's tip hold the text.
#[test]
fn an_erasure_made_before_a_copy_ever_pushed_takes_the_other_copys_same_text_too() {
    const SECRET: &str = "ORCHID-7731";
    let (remote, url) = remote();
    let (a, b) = (fresh(), fresh());
    let (a, b) = (a.path(), b.path());
    add(b, &format!("The vault code is {SECRET}"));
    ok(b, &["sync", "--remote", &url]);
    let mine = add(a, &format!("The vault code is {SECRET}"));
    ok(a, &["forget", "--erase", &mine]);
    ok(a, &["sync", "--remote", &url]);
    sync(b);
    sync(a);
    for dir in [a, b] {
        let holding = files_saying(dir, SECRET);
        assert!(
            holding.is_empty(),
            "{} holds it in {holding:?}",
            dir.display()
        );
        assert_clean(dir);
    }
    let tip = git(remote.path(), &["ls-tree", "-r", "--name-only", "main"]);
    for file in tip.lines() {
        let text = git(remote.path(), &["show", &format!("main:{file}")]);
        assert!(!text.contains(SECRET), "the remote's {file} holds it");
    }
}

#[test]
fn a_remote_that_deletes_the_archive_and_the_logs_deletes_nothing_here() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let a = a.path();
    ok(a, &["forget", &entry_saying(a, "green tea")]);
    sync(a);
    let before = tree(a);
    let evil = stranger(&url);
    let e = evil.path();
    git(
        e,
        &[
            "rm",
            "--quiet",
            "-r",
            "archive",
            ".tombstones.jsonl",
            "consolidated/journal.jsonl",
        ],
    );
    git(e, &["commit", "--quiet", "--no-verify", "-m", "stranger"]);
    git(e, &["push", "--quiet", "origin", "HEAD:main"]);
    let said = sync(a);
    assert!(said.contains("cannot delete"), "{said}");
    let after = tree(a);
    for (path, bytes) in before
        .iter()
        .filter(|(p, _)| p.starts_with("archive/") || p.ends_with(".jsonl"))
    {
        assert_eq!(
            after.get(path),
            Some(bytes),
            "{path} was deleted or changed"
        );
    }
    assert!(found(a, "Seattle").iter().any(|t| t.contains("Seattle")));
    assert!(
        found(a, "green tea")
            .iter()
            .all(|t| !t.contains("green tea")),
        "the forget holds"
    );
    assert_clean(a);
}

#[test]
fn a_remote_that_takes_a_fact_out_of_a_day_file_takes_nothing_from_this_copy() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let a = a.path();
    let evil = stranger(&url);
    let e = evil.path();
    let day = std::fs::read_dir(e.join("archive"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&day).unwrap();
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| !l.contains("Seattle"))
        .collect();
    assert_ne!(kept, text);
    std::fs::write(&day, kept).unwrap();
    push_all(e);
    let said = sync(a);
    assert!(said.contains("appended again"), "{said}");
    assert!(found(a, "Seattle").iter().any(|t| t.contains("Seattle")));
    assert_clean(a);
}

#[test]
fn a_remote_that_takes_a_redaction_line_out_leaves_the_erasure_in_force_here() {
    let (_remote, url) = remote();
    let (a, _b) = two_machines(&url);
    let a = a.path();
    let secret = add(a, "The gate code is HERON-5150");
    ok(a, &["forget", "--erase", &secret]);
    sync(a);
    let evil = stranger(&url);
    let e = evil.path();
    let mut taken = 0;
    for day in std::fs::read_dir(e.join("archive")).unwrap().flatten() {
        let text = std::fs::read_to_string(day.path()).unwrap();
        let kept: String = text
            .split_inclusive('\n')
            .filter(|l| !l.contains(&secret))
            .collect();
        taken += usize::from(kept != text);
        std::fs::write(day.path(), kept).unwrap();
    }
    assert_eq!(taken, 1, "the stranger took the redaction line out");
    push_all(e);
    sync(a);
    let redacted = tree(a)
        .into_iter()
        .filter(|(p, _)| p.starts_with("archive/"))
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains(&format!("erased:{secret}")))
        .count();
    assert_eq!(redacted, 1, "the redaction line is back, once");
    assert_clean(a);
}

/// The random test's case: the other copy consolidated a fact into an
/// entry and pushed; a stranger then turned the entries file and a day
/// file into links. This copy refuses the links and still takes what the
/// other copy pushed before them: its entry and its fact, nothing
/// recorded as deleted by hand, nothing forgotten.
#[test]
fn a_remote_that_links_a_data_file_still_brings_what_the_other_copy_pushed_before() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    add(b, "User collects stamps");
    consolidate(b);
    sync(b);
    let evil = stranger(&url);
    let e = evil.path();
    let outside = tempfile::tempdir().unwrap();
    let elsewhere = outside.path().join("else.md");
    std::fs::write(&elsewhere, "- someone else's\n").unwrap();
    let days: Vec<String> = std::fs::read_dir(e.join("archive"))
        .unwrap()
        .flatten()
        .map(|d| format!("archive/{}", d.file_name().to_string_lossy()))
        .collect();
    for link in days
        .iter()
        .map(String::as_str)
        .chain(["consolidated/memory.md"])
    {
        std::fs::remove_file(e.join(link)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, e.join(link)).unwrap();
    }
    push_all(e);
    let said = sync(a);
    assert!(said.contains("was merged"), "{said}");
    assert!(
        entries(a).iter().any(|(_, t, _)| t.contains("stamps")),
        "{:?}",
        entries(a)
    );
    let stones = std::fs::read_to_string(a.join(".tombstones.jsonl")).unwrap_or_default();
    assert!(!stones.contains("deleted by hand"), "{stones}");
    assert!(found(a, "stamps").iter().any(|t| t.contains("stamps")));
    assert_clean(a);
    sync(b);
    assert_clean(b);
    assert!(entries(b).iter().any(|(_, t, _)| t.contains("stamps")));
}

/// The erasure's twin of the test above: an entry erased on one machine
/// while the other declared an update of it. The erasure takes the old
/// text everywhere; the update is the user's own later word, and stays.
#[test]
fn an_entry_erased_on_one_machine_takes_its_text_but_not_the_update_the_other_declared() {
    let (_remote, url) = remote();
    let (a, b) = two_machines(&url);
    let (a, b) = (a.path(), b.path());
    let seattle = entry_saying(a, "Seattle");
    ok(a, &["forget", "--erase", &seattle]);
    moved_to_portland(b, &seattle);
    consolidate(b);
    sync(a);
    sync(b);
    sync(a);
    assert_same(a, b);
    for dir in [a, b] {
        let holding = files_saying(dir, "Seattle");
        assert!(
            holding.is_empty(),
            "{} holds it in {holding:?}",
            dir.display()
        );
        assert!(
            found(dir, "Portland")
                .iter()
                .any(|t| t.contains("Portland")),
            "the update was erased with the entry it updated"
        );
        assert_clean(dir);
    }
}
