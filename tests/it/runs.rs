//! `memd runs` and `memd undo`: a run taken back, and given back.

use memd::consolidate;
use memd::entries::Document;
use memd::runs::{self, Options};
use serde_json::json;

use crate::consolidate::{FORCE, add, cli_dir, entries, llm_config};
use crate::support::*;

/// A judge that rewrites the Berlin entry for a Hamburg fact, folds a
/// tomato fact into the tomato entry, and adds everything else.
pub fn mover(body: &serde_json::Value) -> Reply {
    if is_promotion(body) {
        return Reply::Json(promote_every_entry(body));
    }
    if is_update_check(body) {
        return Reply::Json(outdated("none"));
    }
    let p = prompt_of(body);
    let ops: Vec<serde_json::Value> = listed(&p, 'F')
        .into_iter()
        .map(
            |(f, text)| match (alias_of(&p, 'E', "Berlin"), alias_of(&p, 'E', "tomatoes")) {
                (Some(e), _) if text.contains("Hamburg") => json!({"op": "REPLACE", "target": e,
                "from": [f], "text": "Lives in Hamburg; previously Berlin."}),
                (_, Some(e)) if text.contains("tomatoes") => {
                    json!({"op": "KEEP", "target": e, "from": [f]})
                }
                _ => json!({"op": "ADD", "text": text, "from": [f]}),
            },
        )
        .collect();
    Reply::Json(chat(json!({ "ops": ops }).to_string()))
}

fn pending(layout: &memd::Layout) -> usize {
    let config = memd::config::Config::load(&layout.root).unwrap();
    memd::status::gather(&crate::support::memory(layout, &config), None)
        .unwrap()
        .pending_facts
}

#[tokio::test(flavor = "multi_thread")]
async fn undoing_a_run_gives_back_the_files_byte_for_byte_and_undoing_the_undo_gives_back_the_run()
{
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout) = memory_dir();
    let config = llm_config(&server.url);
    add(
        &layout,
        "2026-11-18",
        &["Lives in Berlin", "Grows tomatoes on the balcony"],
    );
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let entries_before = std::fs::read(layout.entries_file()).unwrap();
    add(
        &layout,
        "2026-11-19",
        &[
            "Moved to Hamburg",
            "Still grows tomatoes",
            "Has a dog called Rex",
        ],
    );
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let a = &r.applied;
    assert_eq!((a.add, a.replace, a.keep), (1, 1, 1), "{r:?}");
    let entries_after = std::fs::read(layout.entries_file()).unwrap();
    assert_eq!(pending(&layout), 0);

    a_dry_run_plans_the_undo_and_changes_nothing(&layout, &r.run_id, &entries_after);

    let undo_run = undoing_the_run_gives_back_the_files(&layout, &r.run_id, &entries_before);

    let back_run = undoing_the_undo_gives_back_the_run(&layout, &undo_run, &entries_after);

    let listed = runs::list(&layout).unwrap();
    let kinds: Vec<(&str, Vec<memd::ids::RunId>)> = listed
        .iter()
        .map(|r| (r.kind.as_str(), r.undone_by.clone()))
        .collect();
    assert_eq!(
        kinds,
        vec![
            ("consolidate", vec![]),
            ("consolidate", vec![undo_run.clone()]),
            ("undo", vec![back_run.unwrap()]),
            ("undo", vec![]),
        ]
    );
    assert_eq!(listed[1].facts, 3);
    assert_eq!(listed[1].judges, vec!["scripted".to_string()]);
}

/// A dry run of undoing run `run_id` plans its three changes and three
/// facts pending again, and leaves the entries as `entries_after`.
fn a_dry_run_plans_the_undo_and_changes_nothing(
    layout: &memd::Layout,
    run_id: &str,
    entries_after: &[u8],
) {
    let dry = Options {
        dry_run: true,
        keep_out: false,
    };
    let planned = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &run_id.parse().unwrap(),
        dry,
    )
    .unwrap();
    assert_eq!(
        (planned.changes.len(), planned.pending_again.len()),
        (3, 3),
        "{planned:?}"
    );
    assert_eq!(std::fs::read(layout.entries_file()).unwrap(), entries_after);
}

/// Undoing run `run_id` gives back the entries as `entries_before`, its
/// facts pending again and MEMORY.md as it was; undoing it again does
/// nothing. The undo's run.
fn undoing_the_run_gives_back_the_files(
    layout: &memd::Layout,
    run_id: &str,
    entries_before: &[u8],
) -> memd::ids::RunId {
    let undone = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &run_id.parse().unwrap(),
        Options::default(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(layout.entries_file()).unwrap(),
        entries_before
    );
    assert_eq!(
        (undone.pending_again.len(), pending(layout)),
        (3, 3),
        "{undone:?}"
    );
    assert!(undone.left.is_empty(), "{undone:?}");
    let core = std::fs::read_to_string(layout.memory_md()).unwrap();
    assert!(
        core.contains("Lives in Berlin") && !core.contains("Hamburg"),
        "{core}"
    );
    assert!(!core.contains("Rex"), "{core}");
    assert_checks_clean(&layout.root, "an undo");

    let again = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &run_id.parse().unwrap(),
        Options::default(),
    )
    .unwrap();
    assert_eq!(
        (again.run.as_deref(), again.changes.len()),
        (None, 0),
        "{again:?}"
    );
    undone.run.unwrap()
}

/// Undoing the undo `undo_run` gives back the run: the entries as
/// `entries_after`, no fact pending. The run of this undo, if any.
fn undoing_the_undo_gives_back_the_run(
    layout: &memd::Layout,
    undo_run: &str,
    entries_after: &[u8],
) -> Option<memd::ids::RunId> {
    let back = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &undo_run.parse().unwrap(),
        Options::default(),
    )
    .unwrap();
    assert_eq!(back.changes.len(), 3, "{back:?}");
    assert_eq!(std::fs::read(layout.entries_file()).unwrap(), entries_after);
    assert_eq!(pending(layout), 0);
    assert_checks_clean(&layout.root, "an undo of an undo");
    back.run
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_edited_by_hand_since_the_run_is_left_alone_and_reported() {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout) = memory_dir();
    let config = llm_config(&server.url);
    add(&layout, "2026-11-18", &["Lives in Berlin"]);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    add(
        &layout,
        "2026-11-19",
        &["Moved to Hamburg", "Has a dog called Rex"],
    );
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let file = std::fs::read_to_string(layout.entries_file()).unwrap();
    let edited = "Lives in Hamburg (Altona); previously Berlin.";
    std::fs::write(
        layout.entries_file(),
        file.replace("Lives in Hamburg; previously Berlin.", edited),
    )
    .unwrap();

    let undone = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &r.run_id,
        Options::default(),
    )
    .unwrap();
    let all = entries(&layout);
    let texts: Vec<&str> = all.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        texts,
        vec![edited],
        "the hand edit stays, the ADD is undone"
    );
    let hamburg = all[0].id().unwrap();
    assert_eq!(undone.left.len(), 1, "{undone:?}");
    assert_eq!(undone.left[0].entry, hamburg);
    assert!(
        undone.left[0].why.contains("changed since the run"),
        "{undone:?}"
    );
    assert_eq!(
        undone.pending_again.len(),
        1,
        "only the dog fact: {undone:?}"
    );
    assert_checks_clean(&layout.root, "an undo that left a hand edit alone");
}

/// A merge undone: both entries back, each with its own facts; the undo
/// undone merges them again.
#[tokio::test(flavor = "multi_thread")]
async fn an_undone_merge_brings_the_merged_entry_back_with_its_facts() {
    let server = scripted(|_, body| {
        if is_promotion(body) {
            return Reply::Json(promote_every_entry(body));
        }
        let p = prompt_of(body);
        let dup = alias_of(&p, 'E', "cello.").unwrap();
        let keep = alias_of(&p, 'E', "on Sundays").unwrap();
        Reply::Json(chat(
            json!({"ops": [{"op": "REMOVE", "target": dup, "into": keep}]}).to_string(),
        ))
    })
    .await;
    let (_t, layout) = memory_dir();
    let config = llm_config(&server.url);
    let facts = add(
        &layout,
        "2026-11-18",
        &["Tom plays the cello on Sundays", "Tom plays the cello."],
    );
    let mut doc = Document::read(&layout.entries_file()).unwrap();
    for ((text, unreviewed), fact) in [
        ("Tom plays the cello on Sundays", false),
        ("Tom plays the cello.", true),
    ]
    .into_iter()
    .zip(&facts)
    {
        let mut meta = doc.new_meta(text, "2026-11-18", vec![fact.parse().unwrap()]);
        meta.unreviewed = unreviewed;
        doc.push(text, meta);
    }
    doc.save(&layout.entries_file(), "2026-11-18").unwrap();
    let before = std::fs::read(layout.entries_file()).unwrap();
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(r.applied.remove, 1, "{r:?}");
    let merged = std::fs::read(layout.entries_file()).unwrap();

    let undone = runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &r.run_id,
        Options::default(),
    )
    .unwrap();
    assert_eq!(std::fs::read(layout.entries_file()).unwrap(), before);
    assert!(undone.pending_again.is_empty(), "{undone:?}");
    assert_checks_clean(&layout.root, "an undone merge");

    runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &undone.run.unwrap(),
        Options::default(),
    )
    .unwrap();
    assert_eq!(std::fs::read(layout.entries_file()).unwrap(), merged);
    assert_checks_clean(&layout.root, "a merge undone twice");
}

#[test]
fn keep_out_forgets_the_runs_facts_and_the_next_run_leaves_them_out() {
    let (_t, layout) = cli_dir(None);
    add(&layout, "2026-11-18", &["Has a dog called Rex"]);
    let out = memd(&layout.root, &["consolidate", "--force", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = run["run_id"].as_str().unwrap().to_string();

    let listed = stdout(&memd(&layout.root, &["runs"]));
    assert!(
        listed.contains(&run) && listed.contains("ADD 1"),
        "{listed}"
    );
    let dry = memd(&layout.root, &["undo", &run, "--dry-run"]);
    assert!(
        stdout(&dry).contains("- Has a dog called Rex"),
        "{}",
        stdout(&dry)
    );
    assert_eq!(entries(&layout).len(), 1, "a dry run writes nothing");

    let out = memd(&layout.root, &["undo", &run, "--keep-out"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("kept out"), "{}", stdout(&out));
    assert!(entries(&layout).is_empty());
    assert_checks_clean(&layout.root, "an undo with --keep-out");
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(entries(&layout).is_empty(), "a kept-out fact stays out");

    let out = memd(&layout.root, &["undo", "r-nothere"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("r-nothere"), "{}", stderr(&out));
}

/// A kill at each step of an undo leaves every fact accounted for, and
/// the same undo run again finishes it.
#[cfg_attr(
    not(feature = "failpoints"),
    ignore = "needs the failpoints feature: scripts/test.sh"
)]
#[test]
fn sigkill_at_every_step_of_an_undo_loses_nothing_and_running_it_again_finishes() {
    for step in ["undo-journaled", "undo-entries-written"] {
        let (_t, layout) = cli_dir(None);
        add(&layout, "2026-11-18", &["Grows tomatoes on the balcony"]);
        assert!(
            memd(&layout.root, &["consolidate", "--force"])
                .status
                .success()
        );
        let before = std::fs::read(layout.entries_file()).unwrap();
        add(
            &layout,
            "2026-11-19",
            &["Has two cats", "Grows tomatoes on the balcony"],
        );
        let out = memd(&layout.root, &["consolidate", "--force", "--json"]);
        let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let run = run["run_id"].as_str().unwrap().to_string();
        kill_at(&layout.root, &["undo", &run], step);
        assert_checks_clean(&layout.root, &format!("a kill at {step}"));
        let out = memd(&layout.root, &["undo", &run]);
        assert!(out.status.success(), "after {step}: {}", stderr(&out));
        assert_eq!(
            std::fs::read(layout.entries_file()).unwrap(),
            before,
            "after {step}"
        );
        assert_checks_clean(&layout.root, &format!("the undo after a kill at {step}"));
        let out = memd(&layout.root, &["consolidate", "--force"]);
        assert!(out.status.success(), "after {step}: {}", stderr(&out));
        let sources: usize = entries(&layout)
            .iter()
            .map(|e| e.meta.as_ref().unwrap().sources.len())
            .sum();
        assert_eq!(sources, 3, "every fact back in an entry after {step}");
        let stones = std::fs::read_to_string(layout.tombstones_file()).unwrap_or_default();
        assert_eq!(
            stones, "",
            "nothing taken for a deletion by hand after {step}"
        );
    }
}

/// The ids of the entries `memd entries --json` lists, with their texts.
fn entry_ids(dir: &std::path::Path) -> Vec<(String, String)> {
    let out = memd(dir, &["entries", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ids: Vec<(String, String)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["id"].as_str().unwrap().into(),
                e["text"].as_str().unwrap().into(),
            )
        })
        .collect();
    ids.sort();
    ids
}

/// An undo gives the facts back to pending; the next run makes the same
/// entries of them, under the ids they had (an id a person noted, or an
/// agent kept, still names its entry), and the memory checks clean.
#[test]
fn after_an_undo_and_a_re_run_the_same_entries_have_the_ids_they_had() {
    let (_t, layout) = cli_dir(None);
    add(
        &layout,
        "2026-11-18",
        &["Lives in Berlin", "Grows tomatoes on the balcony"],
    );
    let out = memd(&layout.root, &["consolidate", "--force", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let run: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let before = entry_ids(&layout.root);
    assert_eq!(before.len(), 2, "{before:?}");
    let run_id = run["run_id"].as_str().unwrap();
    let out = memd(&layout.root, &["undo", run_id]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(entry_ids(&layout.root).is_empty());
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(entry_ids(&layout.root), before);
    assert_checks_clean(&layout.root, "an undo and a re-run");
}
