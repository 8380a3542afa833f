//! Entries deleted or forgotten by hand, restatements and rewordings of
//! them, and near duplicates: what the next run makes of each.

use super::{lexical_memory, pending};
use crate::support::{memd, stderr, stdout};

/// A person who deletes the whole `consolidated/` folder (the entries,
/// their journal and versions) takes away what held the decided facts:
/// they are pending again at once (found by search, counted by status,
/// noted by check, never hidden) and the next run decides them anew, while
/// what was forgotten stays out. An entry deleted by hand beside it is
/// still forgotten (it was hidden for good: "decided, but no entry holds
/// it", with no remedy, and no run brought it back).
#[test]
fn the_facts_of_a_deleted_consolidated_folder_are_pending_again_and_decided_anew() {
    let tmp = lexical_memory();
    let dir = tmp.path();
    for fact in [
        "Keeps bees on the roof",
        "Plays the cello",
        "Hates mornings",
    ] {
        assert!(memd(dir, &["add", "--no-similar", fact]).status.success());
    }
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    let out = memd(dir, &["forget", "--match", "mornings", "--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    // A hand deletion first: its facts stay out until the run records it.
    let cello = entry_id_of(dir, "cello");
    crate::support::delete_entry_by_hand(&dir.join("consolidated/memory.md"), &cello).unwrap();
    assert_eq!(pending(dir), 0, "a hand-deleted entry's fact came back");

    std::fs::remove_dir_all(dir.join("consolidated")).unwrap();
    // Nothing is left to say the cello was deleted: pending, as the bees.
    assert_eq!(pending(dir), 2);
    let out = memd(dir, &["search", "bees on the roof", "--json"]);
    assert!(
        stdout(&out).contains("Keeps bees on the roof"),
        "{}",
        stdout(&out)
    );
    let out = memd(dir, &["check", "--json"]);
    let report = stdout(&out);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("\"decided_again\""), "{report}");
    assert!(!report.contains("\"fact_hidden\""), "{report}");

    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let entries = std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap();
    assert!(entries.contains("Keeps bees on the roof"), "{entries}");
    assert!(entries.contains("Plays the cello"), "{entries}");
    assert!(
        !entries.contains("mornings"),
        "a forgotten fact came back: {entries}"
    );
    assert_eq!(pending(dir), 0);
    crate::support::assert_checks_clean(dir, "a run after consolidated/ was deleted");
    let out = memd(dir, &["check", "--json"]);
    assert!(
        !stdout(&out).contains("\"decided_again\""),
        "{}",
        stdout(&out)
    );
}

/// The id of the entry whose text says `word`.
fn entry_id_of(dir: &std::path::Path, word: &str) -> String {
    let text = std::fs::read_to_string(dir.join("consolidated/memory.md")).unwrap();
    text.split("\n\n")
        .find(|b| b.contains(word))
        .and_then(|b| b.split("\"id\":\"").nth(1))
        .and_then(|s| s.split('"').next())
        .unwrap()
        .to_string()
}

/// Deleting an entry by hand is forgetting it (DESIGN §1): the next run
/// tombstones it with its facts and journals it, `memd check` is clean
/// again, and a restatement of the fact stays out.
#[test]
fn an_entry_deleted_by_hand_is_forgotten_not_hidden() {
    let tmp = lexical_memory();
    let dir = tmp.path();
    for fact in ["Keeps bees on the roof", "Plays the cello"] {
        assert!(memd(dir, &["add", "--no-similar", fact]).status.success());
    }
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    let path = dir.join("consolidated/memory.md");
    let text = std::fs::read_to_string(&path).unwrap();
    let kept: Vec<&str> = text
        .split("\n\n")
        .filter(|b| !b.contains("cello"))
        .collect();
    let gone_id = entry_id_of(dir, "cello");
    std::fs::write(&path, kept.join("\n\n")).unwrap();
    // A person's deletion is theirs, not a fault: noted until a run
    // records it.
    let out = memd(dir, &["check", "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("\"deleted_by_hand\""),
        "{}",
        stdout(&out)
    );

    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("1 entry deleted by hand"),
        "{}",
        stdout(&out)
    );
    crate::support::assert_checks_clean(dir, "an entry deleted by hand");
    let history = stdout(&memd(dir, &["history", &gone_id]));
    assert!(history.contains("HAND_REMOVE"), "{history}");

    assert!(
        memd(dir, &["add", "--no-similar", "Plays the cello."])
            .status
            .success()
    );
    assert_eq!(pending(dir), 0, "a forgotten fact came back");
    // Nothing else vanished, and a second run records nothing more.
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(
        !stdout(&out).contains("deleted by hand"),
        "{}",
        stdout(&out)
    );
    assert!(std::fs::read_to_string(&path).unwrap().contains("bees"));
}

/// A fact a tombstone keeps out is never silent: the run that meets it
/// names it with the forgotten entry, the journal records it (so the
/// entry's history shows it), `memd status` counts it, and it is reported
/// once.
#[test]
fn a_restatement_of_a_forgotten_entry_is_named_not_silent() {
    let tmp = lexical_memory();
    let dir = tmp.path();
    assert!(
        memd(dir, &["add", "--no-similar", "Lives at 14 Elm Street"])
            .status
            .success()
    );
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    let layout = memd::Layout::open(dir).unwrap();
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    let id = doc.entries().next().unwrap().id().unwrap().to_string();
    assert!(memd(dir, &["forget", &id]).status.success());

    assert!(
        memd(dir, &["add", "--no-similar", "lives at 14 Elm Street."])
            .status
            .success()
    );
    let out = memd(dir, &["consolidate", "--force"]);
    let said = stdout(&out);
    assert!(
        said.contains(&format!(
            "restates something forgotten (forgotten entry {id})"
        )),
        "{said}"
    );
    let history = stdout(&memd(dir, &["history", &id]));
    assert!(history.contains("SUPPRESS"), "{history}");
    let status = stdout(&memd(dir, &["status", "--json"]));
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["facts_forgotten"], 2, "{status}");
    assert_eq!(status["pending_facts"], 0, "{status}");

    let again = stdout(&memd(dir, &["consolidate", "--force"]));
    assert!(!again.contains("forgotten"), "{again}");
    crate::support::assert_checks_clean(dir, "a suppressed restatement");
}

/// The memory directory `memd init` makes, on the built-in defaults
/// (MiniLM, no LLM).
fn default_memory() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    assert!(memd(tmp.path(), &["init"]).status.success());
    tmp
}

fn entry_texts(dir: &std::path::Path) -> Vec<(String, Vec<String>)> {
    let layout = memd::Layout::open(dir).unwrap();
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    doc.entries()
        .map(|e| {
            let sources = e.meta.clone().unwrap().sources;
            (
                e.text.clone(),
                sources.into_iter().map(String::from).collect(),
            )
        })
        .collect()
}

/// Tier 2 of deduplication: with the built-in judge, a fact that says what
/// an entry says in nearly the same words (subject, articles, a plural
/// "s") is kept into it, and two such pending facts make one entry; a fact
/// that differs by a negation, a name or a word order stays apart.
#[test]
fn a_near_duplicate_is_merged_by_the_built_in_judge_and_a_near_miss_is_not() {
    let tmp = default_memory();
    let dir = tmp.path();
    let add = |fact: &str| assert!(memd(dir, &["add", "--no-similar", fact]).status.success());
    add("Loves coffee, especially flat white.");
    add("User is vegetarian");
    add("Bob reports to Ann");
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    add("The user loves coffee, especially flat whites");
    add("User has a dog called Rex");
    add("Has a dog called Rex.");
    add("User is not vegetarian");
    add("Ann reports to Bob");
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(
        stdout(&out).contains("1 near-duplicates"),
        "{}",
        stdout(&out)
    );
    let entries = entry_texts(dir);
    let texts: Vec<&str> = entries.iter().map(|(t, _)| t.as_str()).collect();
    // The negation is no near duplicate: it updates the statement it
    // negates, which stays readable as history (`src/update.rs`).
    assert_eq!(entries.len(), 5, "{texts:?}");
    let coffee = &entries[0];
    assert_eq!(coffee.0, "Loves coffee, especially flat white.");
    assert_eq!(coffee.1.len(), 2, "both facts are the entry's sources");
    let rex: Vec<_> = entries.iter().filter(|(t, _)| t.contains("Rex")).collect();
    assert_eq!(rex.len(), 1, "{texts:?}");
    assert_eq!(rex[0].1.len(), 2);
    let day = crate::support::archive_day(dir);
    let negated = format!(
        "User is not vegetarian (since {day}; previously: User is vegetarian, since {day})"
    );
    assert!(texts.contains(&negated.as_str()), "{texts:?}");
    assert!(texts.contains(&"Ann reports to Bob"), "{texts:?}");
    crate::support::assert_checks_clean(dir, "near-duplicate merges");
}

/// Forgetting catches a rewording: a fact that says what a forgotten entry
/// said, in nearly the same words, stays out and is named; `memd forget
/// --undo` brings the entry back with its id, and the rewording with it.
#[test]
fn a_rewording_of_a_forgotten_entry_stays_out_until_the_forget_is_undone() {
    let tmp = default_memory();
    let dir = tmp.path();
    let add = |fact: &str| assert!(memd(dir, &["add", "--no-similar", fact]).status.success());
    add("Lives at 14 Elm Street");
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    let layout = memd::Layout::open(dir).unwrap();
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    let id = doc.entries().next().unwrap().id().unwrap().to_string();
    assert!(memd(dir, &["forget", &id]).status.success());

    add("The user lives at 14 Elm Street");
    let said = stdout(&memd(dir, &["consolidate", "--force"]));
    assert!(said.contains(&format!("(forgotten entry {id})")), "{said}");
    assert!(entry_texts(dir).is_empty());
    assert_eq!(pending(dir), 0);
    let found = stdout(&memd(dir, &["search", "Elm Street", "--json"]));
    assert!(
        !found.contains("Elm"),
        "a forgotten fact was found: {found}"
    );

    let out = memd(dir, &["forget", "--undo", &id]);
    assert!(out.status.success(), "{}", stderr(&out));
    let entries = entry_texts(dir);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].0, "Lives at 14 Elm Street");
    let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
    assert_eq!(
        doc.entries().next().unwrap().id().map(|i| i.as_str()),
        Some(id.as_str())
    );
    // The rewording is pending again, and says what the entry says.
    assert_eq!(pending(dir), 1);
    assert!(memd(dir, &["consolidate", "--force"]).status.success());
    let entries = entry_texts(dir);
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].1.len(), 2, "{entries:?}");
    let history = stdout(&memd(dir, &["history", &id]));
    assert!(history.contains("UNFORGET"), "{history}");
    // Nothing left to undo.
    let again = memd(dir, &["forget", "--undo", &id]);
    assert_eq!(again.status.code(), Some(4), "{}", stderr(&again));
    crate::support::assert_checks_clean(dir, "an undone forget");
}
