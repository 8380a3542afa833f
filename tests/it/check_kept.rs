//! A process whose index is open (a daemon) checks the index's rows from
//! what it kept since its last check (`memd::index::rows_check`): it reads
//! the files and the parts of the table that changed, and finds exactly
//! what a deep check, which compares every row, finds.

use memd::Layout;
use memd::check::Report;
use memd::config::Config;
use memd::index::Index;

use crate::check::duplicate_a_row;
use crate::consolidate::add;
use crate::index::lexical;
use crate::support::{lance_table, memory_dir};

/// A memory with the lexical embedder, two facts on 2026-11-20 and
/// `second` on 2026-11-21.
fn two_days(second: &[&str]) -> (tempfile::TempDir, Layout) {
    let (t, layout) = memory_dir();
    std::fs::write(layout.config_file(), "[embedder]\nkind = \"lexical\"\n").unwrap();
    add(
        &layout,
        "2026-11-20",
        &["Drinks flat white coffee", "Has two cats"],
    );
    add(&layout, "2026-11-21", second);
    (t, layout)
}

async fn open(layout: &Layout) -> Index {
    let memory = memd::Memory::new(layout.clone(), Config::default()).with_embedder(lexical());
    Index::open(&memory).await.unwrap()
}

/// What a report says of the index, sorted: every finding of its rows,
/// and how many rows it counted.
fn of_rows(r: &Report) -> (Vec<String>, Option<usize>) {
    let rows = |k: memd::check::Kind| {
        matches!(
            k,
            memd::check::Kind::IndexRows | memd::check::Kind::IndexUnsynced
        )
    };
    let mut all: Vec<String> = (r.problems.iter().map(|f| ("problem", f)))
        .chain(r.notes.iter().map(|f| ("note", f)))
        .filter(|(_, f)| rows(f.kind))
        .map(|(l, f)| format!("{l} {:?}: {}", f.kind, f.what))
        .collect();
    all.sort();
    (all, r.index_rows)
}

/// What `view` takes of the kept check's report, asserted to be what it
/// takes of a deep check's and of a fresh process's.
async fn kept_and_deep<T: PartialEq + std::fmt::Debug>(
    (layout, index): (&Layout, &Index),
    when: &str,
    view: fn(&Report) -> T,
) -> T {
    let kept = view(&memd::check::run_kept(layout, Some(index)).await.unwrap());
    let deep = memd::check::run_with(layout, Some(index), true).await;
    let deep = view(&deep.unwrap());
    let fresh = view(&memd::check::run(layout).await.unwrap());
    assert_eq!(kept, deep, "{when}: kept (left) against deep");
    assert_eq!(deep, fresh, "{when}: deep (left) against a fresh process's");
    kept
}

/// The table's rows rewritten behind memd's back by `how`.
async fn behind_its_back(layout: &Layout, how: &str) {
    let table = lance_table(layout).await;
    match how {
        "duplicate" => duplicate_a_row(layout).await,
        "delete" => {
            let n = table.count_rows(None).await.unwrap();
            table.delete("text = 'Has two cats'").await.unwrap();
            assert_eq!(
                table.count_rows(None).await.unwrap(),
                n - 1,
                "one row deleted"
            );
        }
        "rehash" => {
            let update = table.update().only_if("text = 'Plays the cello'");
            update.column("hash", "'0000'").execute().await.unwrap();
        }
        other => panic!("{other}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_check_that_kept_what_it_read_finds_what_a_check_of_every_row_finds() {
    let (_t, layout) = two_days(&["Rides a blue bicycle", "Plays the cello"]);
    let index = open(&layout).await;
    index.writer.sync().await.unwrap();
    let clean = kept_and_deep((&layout, &index), "synced", of_rows).await;
    assert_eq!(clean, (vec![], Some(4)));
    assert_eq!(
        kept_and_deep((&layout, &index), "again", of_rows).await,
        clean
    );

    // An append, not synced yet: noted; synced: clean, one row more.
    add(&layout, "2026-11-21", &["Grows basil on the balcony"]);
    let (notes, _) = kept_and_deep((&layout, &index), "appended", of_rows).await;
    assert_eq!(notes.len(), 1, "{notes:?}");
    index.writer.sync().await.unwrap();
    assert_eq!(
        kept_and_deep((&layout, &index), "appended, synced", of_rows).await,
        (vec![], Some(5))
    );

    for how in ["duplicate", "delete", "rehash"] {
        behind_its_back(&layout, how).await;
        let (found, _) = kept_and_deep((&layout, &index), how, of_rows).await;
        assert!(
            found.iter().any(|f| f.starts_with("problem IndexRows")),
            "{how}: {found:?}"
        );
        // Rebuilt: clean again, and the kept check sees it.
        let memory = memd::Memory::new(layout.clone(), Config::default()).with_embedder(lexical());
        let target = memd::request::Target::local(memory);
        let fix = memd::request::Check {
            fix: true,
            deep: false,
        };
        let report = target.run(fix).await.unwrap();
        assert!(
            report.problems.is_empty(),
            "{how}, fixed: {:?}",
            report.problems
        );
        assert_eq!(
            kept_and_deep((&layout, &index), "fixed", of_rows).await.0,
            Vec::<String>::new()
        );
    }
}

/// Every finding of a report but the notes of files changed since their
/// last sync, sorted.
fn findings(r: &Report) -> Vec<String> {
    let unsynced = |f: &&memd::check::Finding| f.kind != memd::check::Kind::IndexUnsynced;
    let mut all: Vec<String> = (r.problems.iter().map(|f| ("problem", f)))
        .chain(r.notes.iter().filter(unsynced).map(|f| ("note", f)))
        .map(|(l, f)| format!("{l} {:?} {}:{:?} {}", f.kind, f.file, f.line, f.what))
        .collect();
    all.sort();
    all
}

/// The entries file with the sources of the entry holding `text` taken
/// out by hand: its fact, decided, is then held by nothing (hidden).
fn sources_taken_out(layout: &Layout, text: &str) {
    let file = std::fs::read_to_string(layout.entries_file()).unwrap();
    let blocks: Vec<String> = (file.split("\n\n"))
        .map(|b| match b.contains(text) {
            false => b.to_string(),
            true => {
                let at = b.find("\"sources\":[").unwrap() + "\"sources\":[".len();
                let end = at + b[at..].find(']').unwrap();
                format!("{}{}", &b[..at], &b[end..])
            }
        })
        .collect();
    std::fs::write(layout.entries_file(), blocks.join("\n\n")).unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn what_a_check_kept_of_each_day_file_is_found_again_when_the_day_or_what_it_reads_changed() {
    let (_t, layout) = two_days(&["Rides a blue bicycle"]);
    let root = layout.root.clone();
    let out = tokio::task::spawn_blocking(move || {
        crate::support::memd(&root, &["consolidate", "--force"])
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let index = open(&layout).await;
    index.writer.sync().await.unwrap();
    let clean = kept_and_deep((&layout, &index), "consolidated", findings).await;
    assert!(!clean.iter().any(|f| f.starts_with("problem")), "{clean:?}");

    // The entries file (which every day's findings read) edited by hand:
    // a decided fact of the first day held by nothing.
    let original = std::fs::read_to_string(layout.entries_file()).unwrap();
    sources_taken_out(&layout, "cats");
    let hidden = kept_and_deep((&layout, &index), "sources taken out", findings).await;
    assert!(
        hidden
            .iter()
            .any(|f| f.starts_with("problem FactHidden archive/2026-11-20.md")),
        "{hidden:?}"
    );
    // Another day grows: the first day's finding stands.
    add(&layout, "2026-11-21", &["Plays the cello"]);
    let grown = kept_and_deep((&layout, &index), "a day grew", findings).await;
    assert!(
        grown.iter().any(|f| f.starts_with("problem FactHidden")),
        "{grown:?}"
    );
    // Put back: nothing hidden, though the first day file never changed.
    std::fs::write(layout.entries_file(), &original).unwrap();
    let back = kept_and_deep((&layout, &index), "put back", findings).await;
    assert!(!back.iter().any(|f| f.starts_with("problem")), "{back:?}");
}
