//! The real binary: init, add, status, and the example memory directory.

use crate::support::{example_dir, memd, memd_with_stdin, stderr, stdout};

mod forget;

#[test]
fn init_creates_the_layout_and_is_idempotent() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    let out = memd(&dir, &["init"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for p in [
        "archive",
        "consolidated",
        ".memd",
        "memd.toml",
        "MEMORY.md",
        "consolidated/memory.md",
    ] {
        assert!(dir.join(p).exists(), "{p} missing");
    }
    std::fs::write(dir.join("MEMORY.md"), "mine\n").unwrap();
    assert!(memd(&dir, &["init"]).status.success());
    assert_eq!(
        std::fs::read_to_string(dir.join("MEMORY.md")).unwrap(),
        "mine\n"
    );
}

/// A directory is a memory when it has an `archive/` (an archive copied
/// or cloned alone): the first run makes `consolidated/`, with every fact
/// (it failed on "No such file or directory").
#[test]
fn a_memory_of_an_archive_alone_consolidates_into_a_new_consolidated_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    std::fs::create_dir_all(dir.join("archive")).unwrap();
    std::fs::write(dir.join("memd.toml"), "[embedder]\nkind = \"lexical\"\n").unwrap();
    for text in ["User likes tea", "User has a dog called Rex"] {
        let out = memd(&dir, &["add", text]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = memd(&dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let entries = std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap();
    for text in ["User likes tea", "User has a dog called Rex"] {
        assert!(entries.contains(text), "{text} missing from {entries}");
    }
    let out = memd(&dir, &["check"]);
    assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn add_prints_ids_and_retries_are_no_ops() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(memd(tmp.path(), &["init"]).status.success());
    let out = memd(
        tmp.path(),
        &[
            "add",
            "User prefers compact dashboards",
            "-c",
            "preference",
            "-s",
            "7f3a",
            "--key",
            "t1",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(v["category"], "preference");
    assert_eq!(v["written"], true);
    let id = v["id"].as_str().unwrap().to_string();
    let out = memd(
        tmp.path(),
        &[
            "add",
            "User prefers compact dashboards",
            "-c",
            "preference",
            "-s",
            "7f3a",
            "--key",
            "t1",
        ],
    );
    assert!(out.status.success());
    assert!(stdout(&out).starts_with(&id), "{}", stdout(&out));
    let day = std::fs::read_dir(tmp.path().join("archive"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(day).unwrap();
    assert_eq!(text.matches("compact dashboards").count(), 1, "{text}");
    assert!(text.contains("- [preference] User prefers compact dashboards <!-- key:t1 -->"));
}

#[test]
fn add_stdin_appends_one_fact_per_line() {
    let tmp = tempfile::tempdir().unwrap();
    assert!(memd(tmp.path(), &["init"]).status.success());
    let input = "first fact\n\n[project] second fact\nthird fact\n";
    let out = memd_with_stdin(
        tmp.path(),
        &["add", "--stdin", "--key", "batch1"],
        Some(input),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 3);
    // The same batch again: every line is already there.
    let out = memd_with_stdin(
        tmp.path(),
        &["add", "--stdin", "--key", "batch1"],
        Some(input),
    );
    assert!(
        stdout(&out).lines().all(|l| l.contains("already written")),
        "{}",
        stdout(&out)
    );
    let status = memd(tmp.path(), &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["facts"], 3);
    assert_eq!(v["pending_facts"], 3);
}

#[test]
fn bad_input_is_a_clear_error_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    // Not a memory directory.
    let out = memd(tmp.path(), &["add", "hello"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not a memory directory"),
        "{}",
        stderr(&out)
    );
    assert!(std::fs::read_dir(tmp.path()).unwrap().next().is_none());

    assert!(memd(tmp.path(), &["init"]).status.success());
    for (args, msg) in [
        (vec!["add", "  "], "empty"),
        (vec!["add", "two\nlines"], "one line"),
    ] {
        let out = memd(tmp.path(), &args);
        assert!(!out.status.success());
        assert!(stderr(&out).contains(msg), "{}", stderr(&out));
    }
    let out = memd_with_stdin(
        tmp.path(),
        &["add", "--stdin"],
        Some("ok line\n<!-- key:x --> bad\n"),
    );
    assert!(!out.status.success());
    assert_eq!(
        std::fs::read_dir(tmp.path().join("archive"))
            .unwrap()
            .count(),
        0
    );

    std::fs::write(tmp.path().join("memd.toml"), "[llm]\nmodle = \"x\"\n").unwrap();
    let out = memd(tmp.path(), &["status"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("modle"), "{}", stderr(&out));
}

#[test]
fn the_example_memory_dir_parses_cleanly() {
    let (_tmp, layout) = example_dir();
    let dir = layout.root.clone();
    let out = memd(&dir, &["status", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["warnings"].as_array().unwrap().len(), 0, "{v}");
    assert!(v["days"].as_array().unwrap().len() >= 3);
    assert!(v["entries"].as_u64().unwrap() >= 4);
    assert_eq!(v["entries_unsaved_hand_written"], 1);
    assert_eq!(v["entries_edited_by_hand"], 0);
    assert!(v["tombstones"].as_u64().unwrap() >= 1);
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    assert!(
        doc.entries()
            .any(|e| e.text.to_lowercase().contains("previously"))
    );
    assert_eq!(
        doc.render(),
        std::fs::read_to_string(layout.entries_file()).unwrap()
    );
    let md = memd::core_md::CoreMd::read(&layout.memory_md()).unwrap();
    assert!(!md.lines().is_empty());
    for l in md.lines() {
        assert!(
            doc.get(&l.entry_id).is_some(),
            "MEMORY.md names unknown entry {}",
            l.entry_id
        );
    }
    // Every entry's sources are facts that exist in the archive.
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    for e in doc.entries() {
        for s in e.meta.iter().flat_map(|m| &m.sources) {
            assert!(facts.iter().any(|f| &f.id == s), "unknown source {s}");
        }
    }
    let human = memd(&dir, &["status"]);
    assert!(
        stdout(&human).contains("judge             built-in"),
        "{}",
        stdout(&human)
    );
}

/// Scripts and agents branch on the exit code, never on message text.
#[test]
fn errors_map_to_exit_codes_by_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    // Not a memory directory: a request that cannot succeed as given.
    assert_eq!(memd(&dir, &["status"]).status.code(), Some(2));
    assert!(memd(&dir, &["init"]).status.success());
    assert_eq!(memd(&dir, &["add", ""]).status.code(), Some(2));
    // No such id.
    let out = memd(&dir, &["forget", "e-nothere"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("e-nothere"), "{}", stderr(&out));
    // A file memd will not guess about: named with its line.
    let layout = memd::Layout::open(&dir).unwrap();
    std::fs::write(layout.state_file(), "{\n  \"watermark\": [\n").unwrap();
    let out = memd(&dir, &["consolidate", "--force"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(".consolidation_state.json:3"),
        "{}",
        stderr(&out)
    );
    std::fs::remove_file(layout.state_file()).unwrap();
    // Busy: another process holds the entries lock.
    let _held = memd::entries::lock(&layout).unwrap();
    let out = memd(&dir, &["consolidate", "--force"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

/// The one day file of the memory directory `dir`.
fn only_day_file(dir: &std::path::Path) -> std::path::PathBuf {
    let mut days = std::fs::read_dir(dir.join("archive")).unwrap();
    days.next().unwrap().unwrap().path()
}

/// A new memory directory with the lexical embedder.
fn lexical_memory() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    assert!(memd(tmp.path(), &["init"]).status.success());
    let config = "[embedder]\nkind = \"lexical\"\n";
    std::fs::write(tmp.path().join("memd.toml"), config).unwrap();
    tmp
}

fn pending(dir: &std::path::Path) -> u64 {
    let out = memd(dir, &["status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["pending_facts"].as_u64().unwrap()
}

fn memd_in_tz(dir: &std::path::Path, tz: &str, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_memd"))
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env_remove("MEMD_DIR")
        .env("TZ", tz)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    out
}

/// Whether a fact is pending is decided per fact, never per day: a fact
/// that lands on a day a run already finished (an appender 26 hours
/// behind in another time zone, or a line added by hand to an old day
/// file) is still consolidated.
#[test]
fn a_fact_on_a_day_already_consolidated_is_still_pending() {
    let tmp = lexical_memory();
    let dir = tmp.path();
    let (behind, ahead) = ("Etc/GMT+12", "Etc/GMT-14");
    memd_in_tz(
        dir,
        behind,
        &["add", "--no-similar", "Keeps bees on the roof"],
    );
    // A run 26 hours ahead: the appender's day is over for it.
    memd_in_tz(dir, ahead, &["consolidate", "--force"]);
    assert_eq!(pending(dir), 0);

    memd_in_tz(
        dir,
        behind,
        &["add", "--no-similar", "Plays the cello on Sundays"],
    );
    assert_eq!(pending(dir), 1, "a fact on a consolidated day is hidden");
    let day = only_day_file(dir);
    let mut text = std::fs::read_to_string(&day).unwrap();
    text.push_str("- Owns a red canoe\n");
    std::fs::write(&day, text).unwrap();
    assert_eq!(
        pending(dir),
        2,
        "a line added by hand to an old day is hidden"
    );

    memd_in_tz(dir, ahead, &["consolidate", "--force"]);
    assert_eq!(pending(dir), 0);
    let entries = std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap();
    for fact in ["cello", "canoe", "bees"] {
        assert!(entries.contains(fact), "{fact} missing from\n{entries}");
    }
    crate::support::assert_checks_clean(dir, "facts on a consolidated day");
}

/// An append is all or nothing: a write that fails part-way (a file-size
/// limit here; a full disk fails the same way) leaves the day file as it
/// was, and the retry writes the fact once.
#[test]
fn an_append_that_fails_part_way_leaves_nothing_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert!(memd(dir, &["init"]).status.success());
    let small = memd(dir, &["add", "--no-similar", "Short fact first"]);
    assert!(small.status.success(), "{}", stderr(&small));
    let day = only_day_file(dir);
    let before = std::fs::read(&day).unwrap();
    let big = format!(
        "Remembers {}",
        "a long list of things ".repeat(300).trim_end()
    );
    let limited = std::process::Command::new("sh")
        .args(["-c", "ulimit -f 4; exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_memd"))
        .arg("--dir")
        .arg(dir)
        .args(["add", "--no-similar", "--key", "big1", &big])
        .env_remove("MEMD_DIR")
        .output()
        .unwrap();
    assert!(!limited.status.success());
    assert!(
        stderr(&limited).contains("nothing was written"),
        "{}",
        stderr(&limited)
    );
    assert_eq!(
        std::fs::read(&day).unwrap(),
        before,
        "a fragment of the fact was left"
    );

    for _ in 0..2 {
        let out = memd(dir, &["add", "--no-similar", "--key", "big1", &big]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let (facts, warnings) = memd::archive::read_all(&memd::Layout::open(dir).unwrap()).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(facts.iter().filter(|f| f.text == big).count(), 1);
    assert_eq!(facts.len(), 2);
    crate::support::assert_checks_clean(dir, "a failed append");
}

/// SIGKILL at each step of an append (holding the day file's lock before
/// writing, and after the write and fsync): the day file holds the fact
/// whole or not at all, `memd check` is clean, and a retry with the same
/// key writes it exactly once.
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn sigkill_at_each_step_of_an_append_leaves_a_clean_directory() {
    for step in ["append-locked", "append-written"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        assert!(memd(dir, &["init"]).status.success());
        let layout = memd::Layout::open(dir).unwrap();
        let args = [
            "add",
            "--no-similar",
            "--key",
            "k1",
            "Keeps bees on the roof",
        ];
        crate::support::kill_at(dir, &args, step);
        let (facts, warnings) = memd::archive::read_all(&layout).unwrap();
        assert!(warnings.is_empty(), "after {step}: {warnings:?}");
        let written = step == "append-written";
        assert_eq!(facts.len(), usize::from(written), "after {step}");
        crate::support::assert_checks_clean(dir, &format!("a kill at {step}"));

        let out = memd(dir, &args);
        assert!(out.status.success(), "{}", stderr(&out));
        let (facts, _) = memd::archive::read_all(&layout).unwrap();
        assert_eq!(facts.len(), 1, "after {step} and a retry");
        crate::support::assert_checks_clean(dir, &format!("a retry after a kill at {step}"));
    }
}

/// Links are followed the same way for reading and writing: a MEMORY.md
/// that links to a file shared with other agents stays a link and its
/// target is updated; a day file that is a link is read, so the id `add`
/// prints is found.
#[test]
fn symlinked_files_are_read_and_written_through_their_links() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mem");
    let shared = tmp.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    assert!(memd(&dir, &["init"]).status.success());
    std::fs::write(dir.join("memd.toml"), "[embedder]\nkind = \"lexical\"\n").unwrap();
    let core = shared.join("MEMORY.md");
    std::fs::rename(dir.join("MEMORY.md"), &core).unwrap();
    std::os::unix::fs::symlink(&core, dir.join("MEMORY.md")).unwrap();
    let today = chrono::Local::now().format("%Y-%m-%d").to_string();
    let day = shared.join("day.md");
    std::fs::write(&day, format!("# {today}\n\n- Keeps bees on the roof\n")).unwrap();
    let link = dir.join("archive").join(format!("{today}.md"));
    std::os::unix::fs::symlink("../../shared/day.md", &link).unwrap();

    let out = memd(&dir, &["add", "--no-similar", "Plays the cello"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(std::fs::read_to_string(&day).unwrap().contains("cello"));
    assert_eq!(pending(&dir), 2, "a linked day file is not read");
    let out = memd(&dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));

    let md = dir.join("MEMORY.md");
    assert!(
        std::fs::symlink_metadata(&md)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(std::fs::read_to_string(&core).unwrap().contains("cello"));
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    crate::support::assert_checks_clean(&dir, "linked files");
}

/// A consolidated/memory.md with a byte that is not UTF-8 is read, but
/// never rewritten (that would replace the byte for good): a run stops
/// with a clear error naming the line, the file keeps its bytes, and its
/// facts stay pending until the line is fixed by hand.
#[test]
fn an_entries_file_that_is_not_utf8_is_never_rewritten() {
    let tmp = lexical_memory();
    let dir = tmp.path();
    let entries = dir.join("consolidated/memory.md");
    let bytes = b"Caf\xe9 au lait every morning\n".to_vec();
    std::fs::write(&entries, &bytes).unwrap();
    assert!(
        memd(dir, &["add", "--no-similar", "Keeps bees on the roof"])
            .status
            .success()
    );
    let out = memd(dir, &["consolidate", "--force"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("memory.md:1"), "{}", stderr(&out));
    assert_eq!(std::fs::read(&entries).unwrap(), bytes);
    assert_eq!(pending(dir), 1);
    let check = memd(dir, &["check"]);
    assert!(!check.status.success());
    assert!(stdout(&check).contains("not UTF-8"), "{}", stdout(&check));
    // Fixed by hand, the next run goes through.
    std::fs::write(&entries, "Café au lait every morning\n").unwrap();
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    assert_eq!(pending(dir), 0);
    crate::support::assert_checks_clean(dir, "a fixed entries file");
}

/// Indexing a backlog is never silent: without a terminal, progress is
/// logged (a bar on a terminal), and a small sync stays quiet.
#[test]
fn indexing_a_backlog_shows_progress_and_a_small_sync_does_not() {
    let tmp = lexical_memory();
    let lines: String = (0..300)
        .map(|i| format!("User noted item number {i}\n"))
        .collect();
    let out = memd_with_stdin(
        tmp.path(),
        &["add", "--stdin", "--no-similar"],
        Some(&lines),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = memd(tmp.path(), &["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    let counts: Vec<(u64, u64)> = err
        .lines()
        .filter_map(|l| l.split("texts embedded: ").nth(1))
        .filter_map(|rest| {
            let (done, total) = rest.split(' ').next()?.split_once('/')?;
            Some((done.parse().ok()?, total.parse().ok()?))
        })
        .collect();
    assert!(counts.len() >= 2, "a first and a last line: {err}");
    let (first, last) = (counts[0], counts[counts.len() - 1]);
    assert!(first.0 == 0 && first.1 >= 300, "{err}");
    assert_eq!(last.0, last.1, "{err}");
    let out = memd(tmp.path(), &["add", "User noted one more item"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("texts embedded"), "{}", stderr(&out));
}

/// The binary `cargo install` builds (no cargo features), which
/// `scripts/test.sh` keeps beside the test build as `memd-shipped`.
fn shipped_memd() -> std::path::PathBuf {
    let built = std::path::Path::new(env!("CARGO_BIN_EXE_memd"));
    let shipped = built.with_file_name("memd-shipped");
    assert!(
        shipped.is_file(),
        "{} is missing: scripts/test.sh builds it (cargo build --bin memd, no features)",
        shipped.display()
    );
    shipped
}

/// The failpoints are test code: a build without the `failpoints` feature
/// runs straight through a step `MEMD_PAUSE_AT` names, where the test build
/// stops (the same step, the same command).
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn a_shipped_build_never_reads_memd_pause_at() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    assert!(memd(dir, &["init"]).status.success());
    let mut child = std::process::Command::new(shipped_memd())
        .arg("--dir")
        .arg(dir)
        .args(["add", "--no-similar", "Keeps bees on the roof"])
        .env("MEMD_PAUSE_AT", "append-locked")
        .env_remove("MEMD_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the shipped memd stopped at MEMD_PAUSE_AT=append-locked");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
    assert!(!dir.join(".memd/paused-at-append-locked").exists());
    let layout = memd::Layout::open(dir).unwrap();
    assert_eq!(memd::archive::read_all(&layout).unwrap().0.len(), 1);
    // The test build does stop there (and is killed, the fact unwritten).
    crate::support::kill_at(
        dir,
        &["add", "--no-similar", "Plays the cello"],
        "append-locked",
    );
    assert_eq!(memd::archive::read_all(&layout).unwrap().0.len(), 1);
}

#[test]
fn an_empty_listing_of_entries_says_so_and_how_facts_become_entries() {
    let t = crate::trust::fresh();
    let dir = t.path();
    crate::trust::add(dir, "The user keeps bees");
    let said = crate::trust::ok(dir, &["entries"]);
    assert!(
        said.contains("no entries yet") && said.contains("consolidate"),
        "{said:?}"
    );
    let said = crate::trust::ok(dir, &["entries", "--category", "nothing-here"]);
    assert_eq!(said.trim(), "no entries match");
    let json: serde_json::Value =
        serde_json::from_str(&crate::trust::ok(dir, &["entries", "--json"])).unwrap();
    assert_eq!(json, serde_json::json!([]));
    crate::trust::consolidate(dir);
    let said = crate::trust::ok(dir, &["entries"]);
    assert!(said.contains("bees"), "{said:?}");
}

#[test]
fn a_run_counts_what_it_did_in_words_that_agree_with_the_count() {
    let t = crate::trust::fresh();
    let dir = t.path();
    crate::trust::add(dir, "User works at Acme");
    crate::trust::consolidate(dir);
    let (entry, ..) = crate::trust::entries(dir).remove(0);
    crate::trust::ok(
        dir,
        &["add", "User now works at Globex", "--supersedes", &entry],
    );
    let said = crate::trust::ok(dir, &["consolidate", "--force"]);
    assert!(
        said.contains("\n1 fact applied as a declared update (supersedes)"),
        "{said}"
    );
}
