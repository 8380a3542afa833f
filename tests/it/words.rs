//! The index's words file (`.memd/index/words.bin`): a handle opened
//! afresh reads its query's words there instead of tokenising every row,
//! and finds exactly what a handle that tokenised them finds; a file that
//! is not of the table's version (nor of the table: one made anew counts
//! its versions from 1 again) is never read; `memd check` says when a
//! file of the table's version holds other words, and notes a damaged
//! one, which searches ignore and write anew.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde_json::Value;

use memd::archive;
use memd::config::Config;
use memd::index::{Index, Query};

use crate::index::{fact, lexical};
use crate::search::{remove_lines_containing, word_facts};
use crate::support::memd;
use crate::trust::{add, fresh, ok};

const QUERIES: [&str; 4] = [
    "coffee",
    "tea with the piano",
    "what did the user say about Lisbon and bicycles",
    "garden",
];

async fn open(layout: &memd::Layout) -> Index {
    let memory = memd::Memory::new(layout.clone(), Config::default()).with_embedder(lexical());
    Index::open(&memory).await.unwrap()
}

/// Each query's hits (vector and full-text lists fused) and its full-text
/// list alone: ids with their scores.
async fn results(index: &Index) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for q in QUERIES {
        let fused = index.reader.search(&Query::new(q, 10)).await.unwrap();
        let words = index.reader.full_text_hits(q, 1_000).await.unwrap();
        for hits in [fused, words] {
            out.push(
                hits.into_iter()
                    .map(|h| (h.id.to_string(), format!("{:.6}", h.score)))
                    .collect(),
            );
        }
    }
    out
}

/// The words file's inode (a load from the table writes it anew, under a
/// new inode; a handle that read it leaves it as it is).
fn inode(layout: &memd::Layout) -> u64 {
    std::fs::metadata(layout.index_words()).unwrap().ino()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_opened_afresh_reads_the_words_file_and_finds_what_a_handle_that_tokenised_every_row_finds()
 {
    let (_tmp, layout) = crate::support::memory_dir();
    let index = open(&layout).await;
    let facts = word_facts();
    let day = |i: usize| format!("2026-11-{:02}", 10 + i % 3);
    for (i, t) in facts.iter().enumerate() {
        archive::append(&layout, &day(i), &format!("09:00:{i:02}"), &[fact(t)]).unwrap();
        if i % 16 == 15 {
            index.writer.sync().await.unwrap();
            index.reader.full_text_hits("coffee", 3).await.unwrap();
        }
    }
    // Rows deleted by hand and one added: the long-lived handle keeps its
    // words in step by its own writes, so the file stays at an older version.
    for n in [7, 13, 24] {
        remove_lines_containing(&layout.archive_file(&day(n)), &format!("User {n} "));
    }
    let extra = "User rode the bicycle to the garden twice";
    archive::append(&layout, "2026-11-13", "10:00:00", &[fact(extra)]).unwrap();
    index.writer.sync().await.unwrap();
    let kept = results(&index).await;

    // A new handle: the file is of an older version, so it loads the
    // words from the table and writes the file for this version.
    let loaded = open(&layout).await;
    assert_eq!(results(&loaded).await, kept, "loaded from the table");
    let written = inode(&layout);
    // Another new handle reads that file: the same hits, the same scores.
    let read = open(&layout).await;
    assert_eq!(results(&read).await, kept, "read from the words file");
    assert_eq!(
        inode(&layout),
        written,
        "the file was read, not written anew"
    );
}

/// A file of an odd number of rows is read too. The rows' lengths (u32)
/// and kinds (u8) are one part of the file, and its reader skipped to the
/// next 8 bytes between them: with an odd number of rows every part after
/// them was read 8 bytes off, the file read as damaged, and each new
/// process loaded the words from the table and wrote the file anew.
#[tokio::test(flavor = "multi_thread")]
async fn a_words_file_of_an_odd_number_of_rows_is_read_by_the_next_handle() {
    for n in [1usize, 3, 4] {
        let (_tmp, layout) = crate::support::memory_dir();
        let index = open(&layout).await;
        for i in 0..n {
            let text = format!("User drinks coffee with the piano teacher {i}");
            archive::append(
                &layout,
                "2026-11-10",
                &format!("09:00:{i:02}"),
                &[fact(&text)],
            )
            .unwrap();
        }
        index.writer.sync().await.unwrap();
        drop(index);
        let loaded = open(&layout).await;
        let kept = results(&loaded).await;
        assert!(!kept[0].is_empty(), "{n} rows: {kept:?}");
        let written = inode(&layout);
        let read = open(&layout).await;
        assert_eq!(results(&read).await, kept, "{n} rows");
        assert_eq!(
            inode(&layout),
            written,
            "{n} rows: the file was read, not written anew"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_words_file_of_a_table_made_anew_is_not_read_though_it_names_the_same_version_and_the_writer_writes_none()
 {
    let (_tmp, layout) = crate::support::memory_dir();
    let day = layout.archive_file("2026-11-10");
    let facts = word_facts();
    let write = |facts: &[String]| {
        for (i, t) in facts.iter().enumerate() {
            archive::append(&layout, "2026-11-10", &format!("09:00:{i:02}"), &[fact(t)]).unwrap();
        }
    };
    let version = |bytes: &[u8]| u64::from_le_bytes(bytes[8..16].try_into().unwrap());
    // A handle that made the version itself writes no file (its writes
    // go on); one that found it does.
    let synced = |layout: &memd::Layout| {
        let layout = layout.clone();
        async move {
            let writer = open(&layout).await;
            writer.writer.sync().await.unwrap();
            results(&writer).await;
            assert!(!layout.index_words().exists(), "written by the writer");
            let reader = open(&layout).await;
            let found = results(&reader).await;
            (found, std::fs::read(layout.index_words()).unwrap())
        }
    };
    write(&facts[..24]);
    let (_, old) = synced(&layout).await;

    // `reindex --clear`, and other facts in the day file: a table made
    // anew, by the same steps, reaches the same version.
    Index::clear(&layout).await.unwrap();
    std::fs::remove_file(&day).unwrap();
    write(&facts[24..]);
    let (want, new) = synced(&layout).await;
    assert_eq!(version(&old), version(&new), "set up: the same version");
    assert_ne!(old, new);

    // The first table's file put back: a new handle does not read it.
    std::fs::write(layout.index_words(), &old).unwrap();
    let fresh = open(&layout).await;
    assert_eq!(results(&fresh).await, want);
    let found = memd::index::words_check::compare(&layout, None)
        .await
        .unwrap();
    assert_eq!(found, memd::index::words_check::Found::Same, "written anew");
}

/// A memory searched through the CLI (which writes the words file).
fn searched(dir: &Path) -> Vec<Value> {
    for t in word_facts().iter().take(20) {
        add(dir, t);
    }
    let hits = ok(dir, &["search", "coffee with tea", "--json", "-k", "20"]);
    assert!(dir.join(memd::layout::rel::INDEX_WORDS).exists());
    serde_json::from_str(&hits).unwrap()
}

fn findings(dir: &Path, list: &str) -> Vec<Value> {
    // (It exits 1 when there are problems.)
    let out = memd(dir, &["check", "--json"]);
    let report: Value = serde_json::from_str(&crate::support::stdout(&out)).unwrap();
    report[list]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["kind"] == "index_words")
        .cloned()
        .collect()
}

#[test]
fn check_reports_a_words_file_of_the_tables_version_holding_other_words_and_fix_rebuilds_it() {
    let tmp = fresh();
    let dir = tmp.path();
    let before = searched(dir);
    assert!(findings(dir, "problems").is_empty());
    other_lengths(dir);
    let problems = findings(dir, "problems");
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(!memd(dir, &["check"]).status.success());
    ok(dir, &["check", "--fix"]);
    crate::support::assert_checks_clean(dir, "check --fix");
    let after: Vec<Value> = serde_json::from_str(&ok(
        dir,
        &["search", "coffee with tea", "--json", "-k", "20"],
    ))
    .unwrap();
    assert_eq!(after, before);
}

/// The words file given the first row another length, its checksum made
/// to agree: a file searches would read, with other scores.
fn other_lengths(dir: &Path) {
    let path = dir.join(memd::layout::rel::INDEX_WORDS);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[80] = bytes[80].wrapping_add(3);
    let mut crc = crc32fast::Hasher::new();
    crc.update(&bytes[..64]);
    crc.update(&bytes[72..]);
    let crc = crc.finalize() as u64;
    bytes[64..72].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
}

/// A process whose index is open (a daemon) keeps what its check found
/// of the words file, for the file's stamp and the table's version: once
/// either changed, the file is compared again.
#[tokio::test(flavor = "multi_thread")]
async fn what_a_check_kept_of_the_words_file_is_found_again_once_it_or_the_table_changed() {
    let tmp = fresh();
    let dir = tmp.path();
    searched(dir);
    let layout = memd::Layout::open(dir).unwrap();
    let index = open(&layout).await;
    let words = |r: &memd::check::Report| -> Vec<String> {
        (r.problems.iter().chain(&r.notes))
            .filter(|f| f.kind == memd::check::Kind::IndexWords)
            .map(|f| f.what.clone())
            .collect()
    };
    let check = || memd::check::run_kept(&layout, Some(&index));
    // Settled: a stamp proves a file's bytes only once a write after it
    // would carry later times.
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(words(&check().await.unwrap()), Vec::<String>::new());
    assert_eq!(words(&check().await.unwrap()), Vec::<String>::new());

    other_lengths(dir);
    let found = words(&check().await.unwrap());
    assert_eq!(found.len(), 1, "the file rewritten: {found:?}");
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(words(&check().await.unwrap()), found, "kept");

    // The table moves on: the file is of another version now.
    add(dir, "The user waters the basil every morning");
    assert_eq!(words(&check().await.unwrap()), Vec::<String>::new());
}

#[test]
fn a_damaged_words_file_is_noted_by_check_ignored_by_search_and_written_anew() {
    let tmp = fresh();
    let dir = tmp.path();
    let before = searched(dir);
    let path = dir.join(memd::layout::rel::INDEX_WORDS);
    let search = || -> Vec<Value> {
        let args = ["search", "coffee with tea", "--json", "-k", "20"];
        serde_json::from_str(&ok(dir, &args)).unwrap()
    };
    // A byte of the header (the words in all, which every score reads)
    // and one of what follows it.
    for at in [48, std::fs::metadata(&path).unwrap().len() as usize / 2] {
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[at] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let notes = findings(dir, "notes");
        assert_eq!(notes.len(), 1, "byte {at} damaged: a note");
        assert!(findings(dir, "problems").is_empty(), "byte {at}");
        assert_eq!(search(), before, "byte {at}");
        assert!(findings(dir, "notes").is_empty(), "written anew");
    }
}
