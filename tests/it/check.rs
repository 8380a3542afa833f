//! `memd check`: clean after normal use, and each kind of damage found
//! with its place; `--fix` repairs the index and nothing else.

use memd::Layout;
use serde_json::Value;

use crate::consolidate::add;
use crate::support::*;

fn check(layout: &Layout, args: &[&str]) -> (bool, Value) {
    let mut all = vec!["check", "--json"];
    all.extend(args);
    let out = memd(&layout.root, &all);
    let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}{}", stdout(&out), stderr(&out));
    });
    (out.status.success(), report)
}

fn problems(report: &Value) -> Vec<String> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}:{} {}",
                p["file"].as_str().unwrap(),
                p["line"],
                p["what"].as_str().unwrap()
            )
        })
        .collect()
}

fn lexical_dir() -> (tempfile::TempDir, Layout) {
    let (t, layout) = memory_dir();
    std::fs::write(layout.config_file(), "[embedder]\nkind = \"lexical\"\n").unwrap();
    (t, layout)
}

/// Two facts, consolidated into two entries; their ids.
fn consolidated() -> (tempfile::TempDir, Layout, Vec<String>) {
    let (t, layout) = lexical_dir();
    let facts = ["Drinks flat white coffee", "Has two cats"];
    let ids = add(&layout, "2026-11-20", &facts);
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    (t, layout, ids)
}

#[test]
fn a_directory_used_normally_checks_clean() {
    let (_t, layout, _) = consolidated();
    add(&layout, "2026-11-21", &["Plays the cello"]);
    assert!(memd(&layout.root, &["search", "cello"]).status.success());
    let (ok, report) = check(&layout, &[]);
    assert!(ok, "{report}");
    assert_eq!(report["facts"], 3);
    // The pending fact, the two entries and their two MEMORY.md lines.
    assert_eq!(report["index_rows"], 5, "{report}");
}

#[test]
fn damage_to_any_file_is_found_with_its_place() {
    let (_t, layout, ids) = consolidated();
    assert!(check(&layout, &[]).0);

    // An entry's metadata rewritten by hand: a new id (MEMORY.md's line
    // names one no entry has) and no sources (its fact was decided and is
    // now held by nothing: hidden). A deletion by hand is a note instead.
    let text = std::fs::read_to_string(layout.entries_file()).unwrap();
    let blocks: Vec<String> = text
        .split("\n\n")
        .map(|b| match b.contains("cats") {
            false => b.to_string(),
            true => {
                let id = b
                    .split("\"id\":\"")
                    .nth(1)
                    .unwrap()
                    .split('"')
                    .next()
                    .unwrap();
                let at = b.find("\"sources\":[").unwrap() + "\"sources\":[".len();
                let end = at + b[at..].find(']').unwrap();
                let b = format!("{}{}", &b[..at], &b[end..]);
                b.replace(id, "e-99999999")
            }
        })
        .collect();
    let kept: Vec<&str> = blocks.iter().map(String::as_str).collect();
    std::fs::write(layout.entries_file(), kept.join("\n\n")).unwrap();
    // A copied entry: two entries with one id.
    let coffee = kept
        .iter()
        .find(|b| b.contains("coffee"))
        .unwrap()
        .trim()
        .to_string();
    let mut text = std::fs::read_to_string(layout.entries_file()).unwrap();
    text.push_str(&format!("\n\n{coffee}\n"));
    std::fs::write(layout.entries_file(), text).unwrap();
    // A journal line that is not JSON.
    let mut journal = std::fs::read_to_string(layout.journal_file()).unwrap();
    journal.push_str("{ not json\n");
    std::fs::write(layout.journal_file(), journal).unwrap();

    let (ok, report) = check(&layout, &[]);
    assert!(!ok);
    let found = problems(&report).join("\n");
    assert!(
        found.contains(&format!(
            "archive/2026-11-20.md:5 fact {} was decided",
            ids[1]
        )),
        "{found}"
    );
    assert!(found.contains("2 entries have the id"), "{found}");
    assert!(found.contains("consolidated/journal.jsonl"), "{found}");
    assert!(
        found.contains("MEMORY.md") && found.contains("which is not a live entry"),
        "{found}"
    );

    // Broken MEMORY.md markers.
    let mut md = std::fs::read_to_string(layout.memory_md()).unwrap();
    md.push_str(memd::core_md::END);
    std::fs::write(layout.memory_md(), md).unwrap();
    let found = problems(&check(&layout, &[]).1).join("\n");
    assert!(found.contains("broken memd markers"), "{found}");
}

/// Duplicate rows in the index are a problem; `--fix` rebuilds the index
/// from the files and touches nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn index_duplicates_are_found_and_fix_rebuilds_only_the_index() {
    let (_t, layout) = indexed_with_a_duplicate().await;

    let archive_before = std::fs::read(layout.archive_file("2026-11-20")).unwrap();
    let l = layout.clone();
    let (ok, report) = tokio::task::spawn_blocking(move || check(&l, &[]))
        .await
        .unwrap();
    assert!(!ok);
    assert!(
        problems(&report).join("\n").contains("2 rows for"),
        "{report}"
    );
    let l = layout.clone();
    let (ok, report) = tokio::task::spawn_blocking(move || check(&l, &["--fix"]))
        .await
        .unwrap();
    assert!(ok, "{report}");
    assert_eq!(report["index_rows"], 2);
    assert_eq!(
        std::fs::read(layout.archive_file("2026-11-20")).unwrap(),
        archive_before
    );
}

/// `reindex` finds rows a sync cannot see (here a duplicate written behind
/// its back) and rebuilds the index from the files.
#[tokio::test(flavor = "multi_thread")]
async fn reindex_repairs_duplicate_rows() {
    let (_t, layout) = indexed_with_a_duplicate().await;
    let root = layout.root.clone();
    let (out, (ok, report)) = tokio::task::spawn_blocking(move || {
        let l = Layout::open(&root).unwrap();
        (memd(&root, &["reindex"]), check(&l, &[]))
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(ok, "{report}");
    assert_eq!(report["index_rows"], 2);
}

/// Two facts, indexed, and one index row added again behind memd's back.
async fn indexed_with_a_duplicate() -> (tempfile::TempDir, Layout) {
    let (t, layout) = lexical_dir();
    add(
        &layout,
        "2026-11-20",
        &["Drinks flat white coffee", "Has two cats"],
    );
    let root = layout.root.clone();
    let out = tokio::task::spawn_blocking(move || memd(&root, &["reindex"]))
        .await
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    duplicate_a_row(&layout).await;
    (t, layout)
}

/// Add one row of the index again, behind memd's back.
pub async fn duplicate_a_row(layout: &Layout) {
    use futures::TryStreamExt;
    use lancedb::query::{ExecutableQuery, QueryBase};
    let table = crate::support::lance_table(layout).await;
    let one: Vec<arrow_array::RecordBatch> = table
        .query()
        .limit(1)
        .execute()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    table.add(one).execute().await.unwrap();
}
