//! `memd forget --erase`: a forget that takes the text out of every file
//! memd keeps, `.memd/` (the index's old versions, the embedding cache)
//! included, and that a crash at any step leaves in force and finished by
//! running it again.

use std::path::Path;

use serde_json::Value;

use crate::support::{memd, stderr};
use crate::trust::{add, consolidate, entries, found, fresh, ok};

const SECRET: &str = "hunter2zebra";
const LATER: &str = "zebra9quartz";

/// Every file under `dir` (hidden ones and `.memd/` included) whose bytes
/// hold `needle`.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let path = e.path();
            if e.file_type().unwrap().is_dir() {
                todo.push(path);
                continue;
            }
            let bytes = std::fs::read(&path).unwrap_or_default();
            if bytes.windows(needle.len()).any(|w| w == needle.as_bytes()) {
                out.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// A memory with an entry that was updated (the old text kept as
/// history), searched for by its secret, and an unrelated fact: the id of
/// the entry.
fn with_secret_entry(dir: &Path) -> String {
    add(dir, &format!("The garage door code is {SECRET}"));
    add(dir, "Plays the cello in a quartet");
    consolidate(dir);
    let id = entries(dir)
        .into_iter()
        .find(|(_, t, _)| t.contains(SECRET))
        .unwrap()
        .0;
    let newer = format!("The garage door code is now {LATER}");
    ok(dir, &["add", &newer, "--supersedes", &id, "--no-similar"]);
    consolidate(dir);
    let (_, text, _) = entries(dir).into_iter().find(|(i, ..)| *i == id).unwrap();
    assert!(text.contains(SECRET) && text.contains(LATER), "{text}");
    assert!(!found(dir, SECRET).is_empty());
    id
}

fn erase(dir: &Path, id: &str) -> Value {
    serde_json::from_str(&ok(dir, &["forget", "--erase", id, "--json"])).unwrap()
}

#[test]
fn an_erased_entry_and_its_history_are_in_no_file_and_never_come_back() {
    let tmp = fresh();
    let dir = tmp.path();
    let id = with_secret_entry(dir);
    for needle in [SECRET, LATER] {
        assert!(files_holding(dir, needle).len() >= 5, "{needle}: set up");
    }
    let erased = erase(dir, &id);
    assert_eq!(erased["facts"].as_array().unwrap().len(), 2, "{erased}");
    for needle in [SECRET, LATER] {
        assert_eq!(files_holding(dir, needle), Vec::<String>::new(), "{needle}");
    }
    assert!(
        found(dir, "garage door code")
            .iter()
            .all(|t| !t.contains("garage"))
    );
    assert!(found(dir, "cello").iter().any(|t| t.contains("cello")));
    crate::support::assert_checks_clean(dir, "an erasure");

    let out = memd(dir, &["forget", "--undo", &id]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("cannot be undone"),
        "{}",
        stderr(&out)
    );
    // Said again word for word by the agent, it is not written at all.
    let again = format!("The garage door code is {SECRET}");
    let v: Value = serde_json::from_str(&ok(dir, &["add", &again, "--json"])).unwrap();
    assert_eq!(v["erased"], true, "{v}");
    assert_eq!(v["written"], false, "{v}");
    assert_eq!(files_holding(dir, SECRET), Vec::<String>::new());
    // Written again by hand, it stays out of the entries, of search and
    // of a rebuilt index; check calls it a problem (the text is on disk
    // again), and erasing it takes it out.
    let day = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut text = std::fs::read_to_string(&day).unwrap();
    text.push_str(&format!("- {again}\n"));
    std::fs::write(&day, text).unwrap();
    consolidate(dir);
    ok(dir, &["reindex", "--clear"]);
    assert!(entries(dir).iter().all(|(_, t, _)| !t.contains(SECRET)));
    assert!(
        found(dir, "garage door code")
            .iter()
            .all(|t| !t.contains(SECRET))
    );
    let (passed, kinds, _) = crate::trust::check(dir);
    assert!(
        !passed && kinds.iter().any(|k| k == "erased_said_again"),
        "{kinds:?}"
    );
    let layout = memd::Layout::open(dir).unwrap();
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    let said = facts
        .iter()
        .find(|f| f.text == again)
        .unwrap()
        .id
        .to_string();
    erase(dir, &said);
    assert_eq!(files_holding(dir, SECRET), Vec::<String>::new());
    crate::support::assert_checks_clean(dir, "the erased text said again");
}

#[test]
fn an_entry_forgotten_before_is_erased_from_the_journal_and_the_tombstones_too() {
    let tmp = fresh();
    let dir = tmp.path();
    let id = with_secret_entry(dir);
    ok(dir, &["forget", &id]);
    let held = files_holding(dir, SECRET);
    assert!(held.contains(&".tombstones.jsonl".to_string()), "{held:?}");
    erase(dir, &id);
    assert_eq!(files_holding(dir, SECRET), Vec::<String>::new());
    assert_eq!(files_holding(dir, LATER), Vec::<String>::new());
    crate::support::assert_checks_clean(dir, "an erasure after a forget");
}

/// A pending fact said on two days, in a day file with a byte that is not
/// UTF-8 on another line: both lines become redaction lines, every other
/// byte stays, and the other facts keep their ids.
#[test]
fn erasing_a_pending_fact_redacts_every_line_saying_it_and_leaves_every_other_byte() {
    let tmp = fresh();
    let dir = tmp.path();
    let secret = format!("Her PIN is {SECRET}");
    let first = "# 2026-01-01\n\n## 09:00:00\n- Keeps bees \u{1}\n- {S}\n  and keeps it safe\n- Likes tea\n"
        .replace("{S}", &secret)
        .replace('\u{1}', "\u{0}");
    let mut bytes = first.into_bytes();
    let nul = bytes.iter().position(|&b| b == 0).unwrap();
    bytes[nul] = 0xff;
    std::fs::write(dir.join("archive/2026-01-01.md"), &bytes).unwrap();
    std::fs::write(
        dir.join("archive/2026-01-02.md"),
        format!(
            "# 2026-01-02\n\n## 10:00:00\n- {} and keeps it safe\n- Drinks black coffee\n",
            secret.to_lowercase()
        ),
    )
    .unwrap();
    let layout = memd::Layout::open(dir).unwrap();
    let (before, _) = memd::archive::read_all(&layout).unwrap();
    let fact = before
        .iter()
        .find(|f| f.text.starts_with("Her PIN"))
        .unwrap();
    let fact_id = fact.id.to_string();
    let erased = erase(dir, &fact_id);
    assert_eq!(erased["facts"].as_array().unwrap().len(), 2, "{erased}");
    assert_eq!(files_holding(dir, SECRET), Vec::<String>::new());

    let after = std::fs::read(dir.join("archive/2026-01-01.md")).unwrap();
    assert!(after.contains(&0xff), "the byte that is not UTF-8 is kept");
    let text = String::from_utf8_lossy(&after);
    assert!(
        text.contains(&format!("- <!-- erased:{fact_id} ")),
        "{text}"
    );
    assert!(!text.contains("keeps it safe"), "{text}");
    let (now, _) = memd::archive::read_all(&layout).unwrap();
    let kept: Vec<_> = before
        .iter()
        .filter(|f| !f.text.to_lowercase().contains("pin is"))
        .collect();
    assert_eq!(now.len(), kept.len());
    for (a, b) in now.iter().zip(kept) {
        assert_eq!((&a.id, &a.text), (&b.id, &b.text));
    }
    assert_eq!(memd::archive::erased_all(&layout).unwrap().len(), 2);
    let out = memd(dir, &["forget", "--undo", &fact_id]);
    assert!(!out.status.success());
}

/// A redaction line keeps its fact's place among the day's occurrences
/// of that text: the same text written again by hand (or on another
/// copy before the erasure reached it) keeps an id of its own, never the
/// erased fact's. `memd add` does not write an erased text again.
#[test]
fn a_text_written_again_after_its_erasure_gets_an_id_of_its_own() {
    let tmp = fresh();
    let dir = tmp.path();
    let secret = format!("Her PIN is {SECRET}");
    std::fs::write(
        dir.join("archive/2026-01-01.md"),
        format!("# 2026-01-01\n\n## 09:00:00\n- {secret}\n"),
    )
    .unwrap();
    let layout = memd::Layout::open(dir).unwrap();
    let first = memd::archive::read_all(&layout).unwrap().0[0]
        .id
        .to_string();
    erase(dir, &first);
    let day = dir.join("archive/2026-01-01.md");
    let mut text = std::fs::read_to_string(&day).unwrap();
    text.push_str(&format!("\n## 10:00:00\n- {secret}\n"));
    std::fs::write(&day, text).unwrap();
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].id.to_string(), format!("{first}.2"));

    let out: Value = serde_json::from_str(&ok(dir, &["add", &secret, "--json"])).unwrap();
    assert_eq!(
        out["written"], false,
        "an erased text is not written again: {out}"
    );
    let said = ok(dir, &["add", &secret]);
    assert!(
        said.contains("not written: the user erased this text"),
        "an erased text is not said to be written under a key: {said}"
    );
}

/// An erased entry's text written again by hand on another day is kept
/// out by the next run without the run's journal record saying it (the
/// record of a fact an erasure keeps out holds no text): only the line
/// the person wrote holds the text, which `memd check` names.
#[test]
fn an_erased_text_written_again_on_another_day_is_kept_out_without_the_journal_saying_it() {
    let tmp = fresh();
    let dir = tmp.path();
    let id = with_secret_entry(dir);
    erase(dir, &id);
    std::fs::write(
        dir.join("archive/2020-02-02.md"),
        format!("# 2020-02-02\n\n## 09:00:00\n- The garage door code is {SECRET}\n"),
    )
    .unwrap();
    consolidate(dir);
    assert!(entries(dir).iter().all(|(_, t, _)| !t.contains(SECRET)));
    assert_eq!(files_holding(dir, SECRET), ["archive/2020-02-02.md"]);
    let (_, kinds, _) = crate::trust::check(dir);
    assert_eq!(kinds, ["erased_said_again"], "the line alone");
}

#[test]
fn a_fact_an_entry_holds_is_erased_through_its_entry_and_an_unknown_id_is_not_found() {
    let tmp = fresh();
    let dir = tmp.path();
    let id = with_secret_entry(dir);
    let (_, _, sources) = entries(dir).into_iter().find(|(i, ..)| *i == id).unwrap();
    let out = memd(dir, &["forget", "--erase", &sources[0]]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&id), "{}", stderr(&out));
    assert!(!files_holding(dir, SECRET).is_empty(), "nothing was erased");
    let out = memd(dir, &["forget", "--erase", "e-00000000"]);
    assert!(!out.status.success());
    crate::support::assert_checks_clean(dir, "refused erasures");
}

/// SIGKILL at each step of an erasure: what was erased stays out of search
/// at once, `memd check` reports the erasure unfinished, and running the
/// command again finishes it (no file holds the text, check is clean).
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn sigkill_at_each_step_of_an_erasure_leaves_it_in_force_and_running_it_again_finishes_it() {
    for step in [
        "erase-receipt",
        "erase-journaled",
        "erase-entries-written",
        "erase-archive-written",
    ] {
        let tmp = fresh();
        let dir = tmp.path();
        let id = with_secret_entry(dir);
        crate::support::kill_at(dir, &["forget", "--erase", &id], step);
        // (What the user searches for after the erasure is theirs: the
        // recall log records it. Searched here by other words.)
        assert!(
            found(dir, "garage door code")
                .iter()
                .all(|t| !t.contains(SECRET)),
            "after a kill at {step}"
        );
        let out = memd(dir, &["check", "--json"]);
        let report = crate::support::stdout(&out);
        assert!(
            report.contains("erase_unfinished"),
            "after {step}: {report}"
        );
        ok(dir, &["forget", "--erase", &id]);
        for needle in [SECRET, LATER] {
            let held = files_holding(dir, needle);
            assert_eq!(held, Vec::<String>::new(), "{needle} after {step}");
        }
        crate::support::assert_checks_clean(dir, &format!("an erasure killed at {step}"));
    }
}

/// An erasure killed after its receipt, and an entry a person wrote
/// since saying the text: running the command again finishes the erasure
/// (what a new erasure would be refused for no longer stops it: it is
/// made, and nothing lifts it), and the person's entry is theirs.
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn an_erasure_made_is_finished_by_running_it_again_whatever_was_written_since() {
    let tmp = fresh();
    let dir = tmp.path();
    let secret = format!("The alarm code is {SECRET}");
    let fact = add(dir, &secret);
    crate::support::kill_at(dir, &["forget", "--erase", &fact], "erase-receipt");
    let core = dir.join("consolidated/memory.md");
    let mut text = std::fs::read_to_string(&core).unwrap();
    text.push_str(&format!("\nRemember: {secret}\n"));
    std::fs::write(&core, text).unwrap();
    ok(dir, &["forget", "--erase", &fact]);
    // The person's entry (and the index's row of it) still say it.
    let mut held = files_holding(dir, SECRET);
    held.retain(|f| !f.starts_with(".memd/index/"));
    assert_eq!(held, ["consolidated/memory.md"]);
    crate::support::assert_checks_clean(dir, "an erasure finished after a person's entry");
}

/// What says the erased text and is not the erasure's to take (another
/// fact that says it within its own words, the person's own text in
/// MEMORY.md) is named, and nothing is erased until it changes.
#[test]
fn text_the_erasure_would_leave_elsewhere_is_named_and_nothing_is_erased() {
    let tmp = fresh();
    let dir = tmp.path();
    let secret = format!("The alarm code is {SECRET}");
    let fact = add(dir, &secret);
    let other = add(dir, &format!("Told Bob: {secret}, remember it"));
    let out = memd(dir, &["forget", "--erase", &fact]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains(&other), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("nothing was erased"),
        "{}",
        stderr(&out)
    );
    erase(dir, &other);
    let core = dir.join("MEMORY.md");
    let mut notes = std::fs::read_to_string(&core).unwrap();
    notes.push_str(&format!("\n{secret}\n"));
    std::fs::write(&core, notes).unwrap();
    let out = memd(dir, &["forget", "--erase", &fact]);
    assert!(stderr(&out).contains("MEMORY.md"), "{}", stderr(&out));
    let notes = std::fs::read_to_string(&core).unwrap().replace(&secret, "");
    std::fs::write(&core, notes).unwrap();
    erase(dir, &fact);
    assert_eq!(files_holding(dir, SECRET), Vec::<String>::new());
    crate::support::assert_checks_clean(dir, "the erasures");
}

/// A search that asked for the erased text keeps its hit on another row
/// (promotion counts it), without the query.
#[test]
fn a_search_for_the_erased_text_keeps_its_hits_on_other_rows_without_the_query() {
    let tmp = fresh();
    let dir = tmp.path();
    let fact = add(dir, &format!("The garage door code is {SECRET}"));
    add(dir, "The garage door is painted green");
    found(dir, "garage door");
    erase(dir, &fact);
    let log = std::fs::read_to_string(dir.join(".recall_log.jsonl")).unwrap();
    let hits: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(!hits.is_empty(), "{log}");
    assert!(hits.iter().all(|h| h["id"] != fact.as_str()), "{log}");
    assert!(hits.iter().all(|h| h["query"] == ""), "{log}");
}

/// `git` in `dir`, which must succeed; its stdout.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn an_erasure_in_a_git_repository_names_the_commits_holding_the_text_and_rewrites_none() {
    let tmp = fresh();
    let dir = tmp.path();
    git(dir, &["init", "-q"]);
    let id = with_secret_entry(dir);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "memory"]);
    let commit = git(dir, &["rev-parse", "HEAD"]).trim().to_string();
    let erased = erase(dir, &id);
    let g = &erased["git"];
    assert_eq!(g["searched"], true, "{erased}");
    assert_eq!(g["commits"], serde_json::json!([commit]), "{erased}");
    assert!(g["purge"].as_str().unwrap().contains("filter-repo"), "{g}");
    // History is left as it was: the commit still holds the text.
    assert_eq!(git(dir, &["rev-parse", "HEAD"]).trim(), commit);
    let shown = git(dir, &["show", &format!("{commit}:consolidated/memory.md")]);
    assert!(shown.contains(SECRET));
    let outside: Vec<String> = files_holding(dir, SECRET)
        .into_iter()
        .filter(|f| !f.starts_with(".git/"))
        .collect();
    assert_eq!(outside, Vec::<String>::new());

    // Outside a repository, nothing is said of git.
    let plain = fresh();
    let id = with_secret_entry(plain.path());
    assert!(erase(plain.path(), &id).get("git").is_none());
}

/// An erasure takes every occurrence of its text, or refuses naming what
/// holds it: a short text said inside a longer fact is said there too.
#[test]
fn an_erased_text_said_inside_a_longer_fact_is_refused_by_name_and_then_taken_out_everywhere() {
    let t = fresh();
    let dir = t.path();
    let code = add(dir, "KOALA-3321");
    let longer = add(dir, "The alarm code is KOALA-3321, said the user");
    add(dir, "The user waters the koala-shaped plant daily");
    let out = memd(dir, &["forget", "--erase", &code]);
    assert!(!out.status.success(), "the erasure went ahead");
    assert!(stderr(&out).contains(&longer), "{}", stderr(&out));
    let stones = std::fs::read_to_string(dir.join(".tombstones.jsonl")).unwrap_or_default();
    assert!(!stones.contains("erase"), "nothing was written: {stones}");
    erase(dir, &longer);
    erase(dir, &code);
    for needle in ["KOALA-3321", "koala-3321"] {
        assert_eq!(files_holding(dir, needle), Vec::<String>::new(), "{needle}");
    }
    assert!(
        found(dir, "koala-shaped plant")
            .iter()
            .any(|t| t.contains("plant")),
        "a fact that shares a word, not the text, stays"
    );
}

#[test]
fn an_entry_a_run_added_and_an_undo_took_out_is_not_called_deleted_by_hand_once_its_text_is_erased()
{
    let dir = fresh();
    let d = dir.path();
    let fact = add(d, &format!("The locker code is {SECRET}"));
    let run = consolidate(d);
    ok(d, &["undo", &run]);
    erase(d, &fact);
    add(d, "The user likes rain");
    consolidate(d);
    let journal = std::fs::read_to_string(d.join("consolidated/journal.jsonl")).unwrap();
    assert!(
        !journal.contains("HAND_REMOVE"),
        "an entry no person deleted was recorded as deleted by hand:\n{journal}"
    );
    let stones = std::fs::read_to_string(d.join(".tombstones.jsonl")).unwrap();
    assert!(!stones.contains("deleted by hand"), "{stones}");
}
