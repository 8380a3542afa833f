//! Remotes written by someone other than memd: history rewritten, hostile
//! commits (configuration, links, taken-out lines, deleted files) pushed
//! between syncs, and what each leaves of this copy.

use std::path::Path;

use super::{
    assert_clean, assert_same, both_sync_and_hold_both_changes, entry_saying, git, remote, sync,
    tree, two_machines,
};
use crate::trust::{add, check, consolidate, entries, found, ok};

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
