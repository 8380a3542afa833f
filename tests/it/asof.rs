//! Memory as of a past time: `memd show --as-of` gives the entries file
//! and MEMORY.md's generated lines byte for byte as they were, says so
//! when a hand edit memd never saw makes that unknowable, and `memd
//! search --as-of` searches the facts written by then and the entries as
//! they were (the random test checks `show` at every step of its runs).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::serving::{Http, start_in_process};
use crate::support::{memd, stderr};
use crate::trust::{add, consolidate, entries, fresh, ok};

/// Now, to the microsecond, after a short pause: a time strictly between
/// the step before and the step after (and a hand edit after it gets a
/// later modification time, whatever the file system's clock tick).
fn now() -> String {
    std::thread::sleep(Duration::from_millis(30));
    let t = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    std::thread::sleep(Duration::from_millis(30));
    t
}

/// The entries file and MEMORY.md's generated lines as they are.
fn files(dir: &Path) -> (String, String) {
    let memory = std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap();
    let core = std::fs::read(dir.join("MEMORY.md")).unwrap();
    let md = memd::core_md::CoreMd::parse(&core).unwrap();
    (memory, md.generated().unwrap().to_string())
}

/// The id of the entry whose text says `needle`.
fn entry_saying(dir: &Path, needle: &str) -> String {
    let all = entries(dir).into_iter();
    all.filter(|(_, t, _)| t.contains(needle))
        .map(|e| e.0)
        .next()
        .unwrap()
}

/// `memd add TEXT --supersedes ID`.
fn supersede(dir: &Path, text: &str, id: &str) {
    ok(dir, &["add", text, "--supersedes", id, "--no-similar"]);
}

fn show(dir: &Path, at: &str, file: &str) -> std::process::Output {
    memd(dir, &["show", "--as-of", at, "--file", file])
}

fn shown(dir: &Path, at: &str) -> Value {
    serde_json::from_str(&ok(dir, &["show", "--as-of", at, "--json"])).unwrap()
}

#[test]
fn show_as_of_gives_both_files_byte_for_byte_as_each_write_left_them() {
    let t = fresh();
    let dir = t.path();
    let mut seen = vec![(now(), files(dir))];
    add(dir, "User works at Acme Corp");
    add(dir, "User has a cat named Miso");
    consolidate(dir);
    seen.push((now(), files(dir)));
    let id = entry_saying(dir, "Acme");
    supersede(dir, "User works at Globex", &id);
    consolidate(dir);
    seen.push((now(), files(dir)));
    ok(
        dir,
        &["edit", &id, "--text", "User works at Globex as a designer"],
    );
    seen.push((now(), files(dir)));
    let cat = entry_saying(dir, "Miso");
    ok(dir, &["forget", &cat]);
    seen.push((now(), files(dir)));
    assert!(
        seen.windows(2).all(|w| w[0].1 != w[1].1),
        "every step wrote"
    );
    for (at, (memory, core)) in &seen {
        let m = show(dir, at, "memory");
        assert!(m.status.success(), "as of {at}: {}", stderr(&m));
        assert_eq!(String::from_utf8(m.stdout).unwrap(), *memory, "as of {at}");
        let c = show(dir, at, "core");
        assert!(c.status.success(), "as of {at}: {}", stderr(&c));
        assert_eq!(String::from_utf8(c.stdout).unwrap(), *core, "as of {at}");
    }
    // The file as it was holds the entry forgotten since, and says so.
    let v = shown(dir, &seen[1].0);
    assert_eq!(v["forgotten_since"], serde_json::json!([cat]), "{v}");
    assert_eq!(
        shown(dir, &seen[4].0)["forgotten_since"],
        serde_json::json!([])
    );
}

#[test]
fn a_hand_edit_memd_did_not_see_happen_makes_the_time_before_it_unknowable_and_memd_says_so() {
    let t = fresh();
    let dir = t.path();
    add(dir, "User works at Acme Corp");
    consolidate(dir);
    let written = files(dir).0;
    let path = dir.join("consolidated/memory.md");
    now();
    std::fs::write(&path, written.replace("Acme Corp", "Acme Corporation")).unwrap();
    let between = now();
    std::fs::write(&path, written.replace("Acme Corp", "ACME")).unwrap();
    let after = now();
    add(dir, "User likes tea");
    consolidate(dir);

    let out = show(dir, &between, "memory");
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("does not know"), "{}", stderr(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("Acme"));
    let v = shown(dir, &between);
    assert_eq!(v["memory"]["state"], "unknowable");
    let until = v["memory"]["known_until"].as_str().unwrap();
    let from = v["memory"]["known_from"].as_str().unwrap();
    let at_until = show(dir, until, "memory");
    assert_eq!(String::from_utf8(at_until.stdout).unwrap(), written);
    let at_from = show(dir, from, "memory");
    let hand = String::from_utf8(at_from.stdout).unwrap();
    assert!(hand.contains("ACME") && !hand.contains("Acme"), "{hand}");
    let later = String::from_utf8(show(dir, &after, "memory").stdout).unwrap();
    assert_eq!(
        later, hand,
        "the file as found holds from its modification time"
    );
    // MEMORY.md's lines were not edited: they stay known throughout.
    assert_eq!(v["core"]["state"], "known");
}

#[test]
fn a_search_as_of_a_past_time_finds_the_entry_as_it_was_and_nothing_written_after() {
    let t = fresh();
    let dir = t.path();
    add(dir, "User works at Acme Corp");
    consolidate(dir);
    let id = entries(dir).into_iter().next().unwrap().0;
    let before = now();
    // A fact's time is its section's heading, to the second.
    std::thread::sleep(Duration::from_millis(1100));
    supersede(dir, "User works at Globex", &id);
    add(dir, "User adopted a cat named Miso");
    consolidate(dir);

    let search = |at: Option<&str>| -> Vec<String> {
        let mut args = vec![
            "search",
            "where does the user work",
            "--json",
            "--min-score",
            "0",
        ];
        if let Some(at) = at {
            args.extend(["--as-of", at]);
        }
        let v: Value = serde_json::from_str(&ok(dir, &args)).unwrap();
        let hits = v.as_array().unwrap();
        hits.iter()
            .map(|h| h["text"].as_str().unwrap().to_string())
            .collect()
    };
    let then = search(Some(&before));
    assert_eq!(
        then.first().map(String::as_str),
        Some("User works at Acme Corp"),
        "{then:?}"
    );
    assert!(
        then.iter()
            .all(|h| !h.contains("Globex") && !h.contains("Miso")),
        "{then:?}"
    );
    let today = search(None);
    assert!(today[0].contains("Globex"), "{today:?}");

    // Forgotten since stays forgotten, even as of a time it was there.
    ok(dir, &["forget", &id]);
    let then = search(Some(&before));
    assert!(then.iter().all(|h| !h.contains("Acme")), "{then:?}");
}

#[test]
fn the_api_takes_as_of_for_show_and_search() {
    let t = fresh();
    let dir = t.path();
    add(dir, "User works at Acme Corp");
    consolidate(dir);
    let before = now();
    std::thread::sleep(Duration::from_millis(1100));
    add(dir, "User adopted a cat named Miso");
    consolidate(dir);
    let layout = memd::Layout::open(dir).unwrap();
    let d = start_in_process(&layout);
    let http = Http::at(&d.base, None);
    let q = |s: &str| s.replace('+', "%2B").replace(':', "%3A");
    let (status, v) = http.get(&format!("/v1/show?as_of={}", q(&before)));
    assert_eq!(status, 200, "{v}");
    let memory = v["memory"]["text"].as_str().unwrap();
    assert!(
        memory.contains("Acme") && !memory.contains("Miso"),
        "{memory}"
    );
    let (status, v) = http.get(&format!(
        "/v1/search?q=cat&min_score=0&as_of={}",
        q(&before)
    ));
    assert_eq!(status, 200, "{v}");
    let texts: Vec<&str> = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap())
        .collect();
    assert!(
        !texts.is_empty() && texts.iter().all(|t| !t.contains("Miso")),
        "{texts:?}"
    );
    let (status, v) = http.get("/v1/show?as_of=last%20tuesday");
    assert_eq!(status, 400, "{v}");
    d.stop();
}

#[test]
fn an_erased_text_is_gone_from_every_version_and_show_says_that_time_held_erased_text() {
    let t = fresh();
    let dir = t.path();
    add(dir, "The safe code is 4471zebra");
    add(dir, "User likes tea");
    consolidate(dir);
    let before = now();
    let id = entry_saying(dir, "4471zebra");
    ok(dir, &["forget", "--erase", &id]);
    let versions = std::fs::read_to_string(dir.join("consolidated/versions.jsonl")).unwrap();
    assert!(!versions.contains("4471zebra"), "{versions}");
    let v = shown(dir, &before);
    assert_eq!(v["memory"]["state"], "unknowable");
    assert!(
        v["memory"]["why"].as_str().unwrap().contains("erase"),
        "{v}"
    );
    let (clean, problems, _) = crate::trust::check(dir);
    assert!(clean, "{problems:?}");
}

#[test]
fn check_finds_a_version_that_cannot_be_rebuilt() {
    let t = fresh();
    let dir = t.path();
    add(dir, "User works at Acme Corp");
    consolidate(dir);
    let path = dir.join("consolidated/versions.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        text.replace("User works at Acme Corp", "User works at Initech"),
    )
    .unwrap();
    let (clean, problems, v) = crate::trust::check(dir);
    assert!(!clean, "{v}");
    assert!(
        problems.iter().any(|p| p == "version_damaged"),
        "{problems:?}"
    );
}

/// The records of `consolidated/versions.jsonl`.
fn versions(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("consolidated/versions.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A memory of one entry, then a run with nothing pending (a writer that
/// leaves the files as it found them, a while after they were written):
/// its versions tail holds both files' stamps.
fn proven() -> tempfile::TempDir {
    let t = fresh();
    add(t.path(), "User works at Acme Corp");
    consolidate(t.path());
    now();
    ok(t.path(), &["consolidate"]);
    t
}

/// A writer that finds the files as it last left them reads neither, by
/// their stamps; a hand edit of the same length, made in place with the
/// file's modification time put back, still reads as an edit (its change
/// time moved), and the next writer records it as found.
#[test]
fn a_hand_edit_of_the_same_length_with_its_time_put_back_is_found_by_the_next_writer() {
    use std::io::Write;
    let t = proven();
    let dir = t.path();
    ok(dir, &["consolidate"]);
    let before = versions(dir);
    let path = dir.join("consolidated/memory.md");
    let written = std::fs::read_to_string(&path).unwrap();
    let modified = std::fs::metadata(&path).unwrap().modified().unwrap();
    let edited = written.replace("Acme Corp", "Acme Inc.");
    assert_eq!(edited.len(), written.len());
    let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.write_all(edited.as_bytes()).unwrap();
    file.set_modified(modified).unwrap();
    drop(file);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        modified
    );
    ok(dir, &["consolidate"]);
    let after = versions(dir);
    assert_eq!(after.len(), before.len() + 1, "{after:?}");
    let found = after.last().unwrap();
    assert_eq!(
        (found["file"].as_str(), found["by"].as_str()),
        (Some("memory"), Some("found")),
        "{found}"
    );
    let shown = String::from_utf8(show(dir, &now(), "memory").stdout).unwrap();
    assert_eq!(shown, edited);
}

/// The versions tail `whole` cut inside its chunk lists, after its
/// stamps: what a writer reads of it, and no more.
fn cut_in_chunk_lists(whole: &str) -> &str {
    let lists = "\"last\":[";
    &whole[..whole.find(lists).unwrap() + lists.len()]
}

/// A writer that finds the files as the versions tail's stamps prove
/// them reads the tail no further than those stamps, written first: cut
/// off after them, the tail is read, proves the files, and is left as it
/// is. A writer that changes a file reads the history instead, records
/// its version, and writes the tail whole again.
#[test]
fn a_writer_the_tail_proves_reads_it_no_further_than_its_stamps() {
    let t = proven();
    let dir = t.path();
    let path = dir.join(".memd/versions-tail.json");
    let whole = String::from_utf8(std::fs::read(&path).unwrap()).unwrap();
    let (seen, last) = (
        whole.find("\"seen\"").unwrap(),
        whole.find("\"last\":[").unwrap(),
    );
    assert!(seen < last, "the stamps come first: {whole}");
    let cut = cut_in_chunk_lists(&whole);
    std::fs::write(&path, cut).unwrap();
    ok(dir, &["consolidate"]);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), cut);
    let before = versions(dir);
    add(dir, "User works at Globex Corp");
    ok(dir, &["consolidate", "--force"]);
    let after = versions(dir);
    assert!(after.len() > before.len(), "{after:?}");
    let tail: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert!(tail["last"].is_array(), "{tail}");
    let shown = String::from_utf8(show(dir, &now(), "memory").stdout).unwrap();
    assert_eq!(
        shown,
        std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap()
    );
    let (clean, _, v) = crate::trust::check(dir);
    assert!(clean, "{v}");
}

/// `memd check` reads the tail's stamps as a writer does, from the
/// tail's head: a tail cut off after its stamps, one of which proves
/// another content, is still found, and `--fix` deletes it.
#[test]
fn check_reads_the_tails_stamps_as_a_writer_does() {
    let t = proven();
    let dir = t.path();
    let path = dir.join(".memd/versions-tail.json");
    let whole = std::fs::read_to_string(&path).unwrap();
    let cut = cut_in_chunk_lists(&whole);
    let at = cut.find("\"sha\":\"").unwrap() + 7;
    let wrong = format!("{}0123456789abcdef{}", &cut[..at], &cut[at + 16..]);
    assert_ne!(wrong, cut);
    std::fs::write(&path, wrong).unwrap();
    let (clean, problems, v) = crate::trust::check(dir);
    assert!(!clean, "{v}");
    assert_eq!(problems, ["versions_tail"], "{v}");
    ok(dir, &["check", "--fix"]);
    assert!(!path.exists());
}

/// `memd check` finds a versions tail whose stamp of a file is the file's
/// while its hash is another content's (a writer would take an edit for
/// the last version), and `--fix` deletes the tail, which is derived.
#[test]
fn check_finds_a_versions_tail_whose_stamp_proves_another_content_and_fix_deletes_it() {
    let t = proven();
    let dir = t.path();
    let (clean, _, v) = crate::trust::check(dir);
    assert!(clean, "{v}");
    let path = dir.join(".memd/versions-tail.json");
    let mut tail: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let seen = tail["seen"].as_array_mut().unwrap();
    assert_eq!(seen.len(), 2, "both files proven: {seen:?}");
    seen[0]["sha"] = "0123456789abcdef".into();
    std::fs::write(&path, serde_json::to_vec(&tail).unwrap()).unwrap();
    let (clean, problems, v) = crate::trust::check(dir);
    assert!(!clean, "{v}");
    assert_eq!(problems, ["versions_tail"], "{v}");
    ok(dir, &["check", "--fix"]);
    assert!(!path.exists());
    let (clean, _, v) = crate::trust::check(dir);
    assert!(clean, "{v}");
}
