//! Review mode (`[consolidation] review = "manual"`): a run proposes its
//! ops in consolidated/REVIEW.md and applies none; accepting and rejecting
//! them, by editing the file or through `memd review`, gives what each
//! decision says, and no fact is ever lost.

use memd::consolidate;
use memd::ids::ProposalId;
use memd::review::{Carried, Proposals};

use crate::consolidate::{FORCE, add, cli_dir, entries, llm_config};
use crate::runs::mover;
use crate::support::*;

fn manual(url: &str) -> memd::config::Config {
    let mut c = llm_config(url);
    c.consolidation.review = memd::config::Review::Manual;
    c
}

/// A memory for the command line (built-in judge) in review mode.
fn manual_cli_dir() -> (tempfile::TempDir, memd::Layout) {
    let (t, layout) = cli_dir(None);
    let toml = std::fs::read_to_string(layout.config_file()).unwrap();
    let toml = toml.replace(
        "[consolidation]\n",
        "[consolidation]\nreview = \"manual\"\n",
    );
    std::fs::write(layout.config_file(), toml).unwrap();
    (t, layout)
}

fn texts(layout: &memd::Layout) -> Vec<String> {
    entries(layout).into_iter().map(|e| e.text).collect()
}

fn review_md(layout: &memd::Layout) -> String {
    std::fs::read_to_string(layout.review_md()).unwrap_or_default()
}

/// The proposal whose op names `needle` in its words.
pub(crate) fn item(layout: &memd::Layout, needle: &str) -> ProposalId {
    let open = memd::review::list(layout).unwrap().open;
    open.iter()
        .find(|o| o.says.contains(needle))
        .unwrap_or_else(|| panic!("no open proposal says {needle:?}: {open:#?}"))
        .item
        .clone()
}

/// REVIEW.md without the item of `id` (its line and the lines under it),
/// as a person deleting it in an editor leaves it.
fn without_item(text: &str, id: &str) -> String {
    let mut out = Vec::new();
    let mut skipping = false;
    for line in text.lines() {
        if line.starts_with("- [") {
            skipping = line.contains(id);
        } else if !line.starts_with(' ') {
            skipping = false;
        }
        if !skipping {
            out.push(line);
        }
    }
    out.join("\n") + "\n"
}

/// A memory with the Berlin entry (decided in auto mode), then review mode
/// on, and a Hamburg move and a dog added: the run proposes two ops.
async fn proposed(url: &str) -> (tempfile::TempDir, memd::Layout, consolidate::Report) {
    let (t, layout) = memory_dir();
    add(&layout, "2026-11-18", &["Lives in Berlin"]);
    consolidate::run(&memory(&layout, &llm_config(url)), FORCE)
        .await
        .unwrap();
    add(
        &layout,
        "2026-11-19",
        &["Moved to Hamburg", "Has a dog called Rex"],
    );
    let r = consolidate::run(&memory(&layout, &manual(url)), FORCE)
        .await
        .unwrap();
    (t, layout, r)
}

#[tokio::test(flavor = "multi_thread")]
async fn with_manual_review_a_run_applies_nothing_and_the_next_run_does_not_propose_the_same_facts_again()
 {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout, r) = proposed(&server.url).await;
    assert_eq!(r.proposed.len(), 2, "{r:?}");
    let a = &r.applied;
    assert_eq!((a.add, a.replace, a.remove, a.keep), (0, 0, 0, 0), "{r:?}");
    assert_eq!(texts(&layout), vec!["Lives in Berlin"]);
    let md = review_md(&layout);
    assert!(
        md.contains("update e-")
            && md.contains(
                "now \"Lives in Hamburg; previously Berlin.\"; previously \"Lives in Berlin\""
            ),
        "{md}"
    );
    assert!(md.contains("add \"Has a dog called Rex\""), "{md}");
    assert!(
        md.contains("): Moved to Hamburg"),
        "the facts it came from: {md}"
    );
    assert!(
        md.contains("  - Lives in Berlin\n  + Lives in Hamburg; previously Berlin."),
        "{md}"
    );
    let status = memd::status::gather(&memory(&layout, &manual(&server.url)), None).unwrap();
    assert_eq!(
        (
            status.pending_facts,
            status.review_open,
            status.facts_under_review
        ),
        (2, 2, 2)
    );
    assert_checks_clean(&layout.root, "a run that proposed");

    let again = consolidate::run(&memory(&layout, &manual(&server.url)), FORCE)
        .await
        .unwrap();
    assert!(again.proposed.is_empty(), "{again:?}");
    assert_eq!(
        (again.pending_facts, again.under_review),
        (0, 2),
        "{again:?}"
    );
    assert_eq!(review_md(&layout), md, "REVIEW.md is left as it was");
}

#[tokio::test(flavor = "multi_thread")]
async fn accepting_one_op_and_rejecting_another_in_review_md_gives_the_entries_each_says_and_undo_takes_it_back()
 {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout, _) = proposed(&server.url).await;
    let before = std::fs::read(layout.entries_file()).unwrap();
    let (hamburg, rex) = (item(&layout, "Hamburg"), item(&layout, "Rex"));
    let md = review_md(&layout).replace(&format!("- [ ] {hamburg}"), &format!("- [x] {hamburg}"));
    std::fs::write(layout.review_md(), without_item(&md, &rex)).unwrap();

    let r = consolidate::run(&memory(&layout, &manual(&server.url)), FORCE)
        .await
        .unwrap();
    let carried = r.review.clone().expect("the run carried out the decisions");
    assert_eq!(carried.accepted, vec![hamburg.clone()], "{carried:?}");
    assert_eq!(carried.rejected, vec![rex.clone()], "{carried:?}");
    assert_eq!(carried.kept_verbatim.len(), 1, "{carried:?}");
    assert!(r.proposed.is_empty(), "nothing left to propose: {r:?}");
    let all = entries(&layout);
    let got: Vec<&str> = all.iter().map(|e| e.text.as_str()).collect();
    assert_eq!(
        got,
        vec![
            "Lives in Hamburg; previously Berlin.",
            "Has a dog called Rex"
        ]
    );
    let rex_entry = &all[1];
    assert_eq!(
        rex_entry.meta.as_ref().unwrap().sources,
        carried.kept_verbatim,
        "the rejected op's fact, word for word, in an entry of its own"
    );
    let md = review_md(&layout);
    assert!(!md.contains("- ["), "no item left: {md}");
    assert_checks_clean(&layout.root, "a review carried out");
    let runs = memd::runs::list(&layout).unwrap();
    let run = carried.run.clone().unwrap();
    assert_eq!(
        runs.iter().find(|r| r.id == run).map(|r| r.kind.as_str()),
        Some("review"),
        "{runs:?}"
    );

    let undone = memd::runs::undo(
        &memd::Memory::open(&layout.root).unwrap(),
        &run,
        memd::runs::Options::default(),
    )
    .unwrap();
    assert_eq!(undone.pending_again.len(), 2, "{undone:?}");
    assert_eq!(std::fs::read(layout.entries_file()).unwrap(), before);
    assert_checks_clean(&layout.root, "the review undone");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_accepted_op_whose_entry_was_edited_by_hand_since_is_left_open_and_its_facts_stay_pending()
 {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout, _) = proposed(&server.url).await;
    let hamburg = item(&layout, "Hamburg");
    let file = std::fs::read_to_string(layout.entries_file()).unwrap();
    std::fs::write(
        layout.entries_file(),
        file.replace("Lives in Berlin", "Lives in Berlin, Kreuzberg"),
    )
    .unwrap();
    let memory = memory(&layout, &manual(&server.url));
    memd::review::decide(&memory, std::slice::from_ref(&hamburg), false, true).unwrap();
    let carried = memd::review::apply(&memory, None).await.unwrap();
    assert!(carried.accepted.is_empty(), "{carried:?}");
    assert_eq!(carried.left.len(), 1, "{carried:?}");
    assert_eq!(carried.left[0].item, hamburg);
    assert!(carried.left[0].why.contains("changed since"), "{carried:?}");
    assert_eq!(texts(&layout), vec!["Lives in Berlin, Kreuzberg"]);
    assert!(
        review_md(&layout).contains(&format!("- [x] {hamburg}")),
        "the item stays, as the person left it"
    );
    assert_checks_clean(&layout.root, "an accepted op left open");

    // Rejecting it instead keeps the fact word for word.
    memd::review::decide(&memory, std::slice::from_ref(&hamburg), false, false).unwrap();
    let carried = memd::review::apply(&memory, None).await.unwrap();
    assert_eq!(carried.rejected, vec![hamburg], "{carried:?}");
    assert!(texts(&layout).contains(&"Moved to Hamburg".to_string()));
    assert_checks_clean(&layout.root, "the op rejected after all");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_review_md_edited_into_nonsense_is_reported_and_nothing_is_taken_as_rejected() {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout, _) = proposed(&server.url).await;
    let hamburg = item(&layout, "Hamburg");
    std::fs::write(
        layout.review_md(),
        format!("whatever\n- [maybe] {hamburg} yes please\n* [[[\n"),
    )
    .unwrap();
    let memory = memory(&layout, &manual(&server.url));
    let carried = memd::review::apply(&memory, None).await.unwrap();
    assert_eq!(
        carried
            .unreadable
            .iter()
            .map(|u| u.line)
            .collect::<Vec<_>>(),
        vec![2, 3],
        "{carried:?}"
    );
    assert!(
        carried.rejected.is_empty() && carried.accepted.is_empty(),
        "{carried:?}"
    );
    let why = |id: &ProposalId| {
        let l = carried.left.iter().find(|l| l.item == *id);
        l.map(|l| l.why.clone()).unwrap_or_default()
    };
    assert!(why(&hamburg).contains("line 2"), "{carried:?}");
    let rex = Proposals::load(&layout).unwrap().all[1].item.clone();
    assert!(
        why(&rex).contains("cannot read"),
        "the dog's item is gone, and not taken as rejected: {carried:?}"
    );
    assert_eq!(carried.open, 2);
    assert_eq!(texts(&layout), vec!["Lives in Berlin"]);
    let out = memd(&layout.root, &["check", "--json"]);
    assert!(out.status.success(), "{}", stdout(&out));
    assert!(
        stdout(&out).contains("review_unreadable"),
        "{}",
        stdout(&out)
    );

    // Invalid UTF-8: a clear error naming the file, and nothing changes.
    std::fs::write(layout.review_md(), b"- [x] \xff\xfe\n").unwrap();
    let out = memd(&layout.root, &["review", "apply"]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("REVIEW.md:1: not valid UTF-8"),
        "{}",
        stderr(&out)
    );
    assert_eq!(texts(&layout), vec!["Lives in Berlin"]);
    assert_eq!(Proposals::load(&layout).unwrap().open().count(), 2);
}

#[test]
fn the_command_line_lists_accepts_and_rejects_and_an_item_accepted_twice_is_applied_once() {
    let (_t, layout) = manual_cli_dir();
    let dir = &layout.root;
    for text in ["Plays the violin", "Allergic to peanuts"] {
        assert!(memd(dir, &["add", text]).status.success());
    }
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("2 ops proposed"), "{}", stdout(&out));
    assert!(texts(&layout).is_empty());
    let out = memd(dir, &["review", "--json"]);
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ids: Vec<String> = listed["open"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["item"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    let violin = item(&layout, "violin");
    let peanuts = item(&layout, "peanuts");

    let out = memd(dir, &["review", "accept", &violin]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(review_md(&layout).contains(&format!("- [x] {violin}")));
    let out = memd(dir, &["review", "reject", &peanuts, "--apply", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let done: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let carried: Carried = serde_json::from_value(done["carried"].clone()).unwrap();
    assert_eq!(
        (carried.accepted.clone(), carried.rejected.clone()),
        (vec![violin.clone()], vec![peanuts.clone()])
    );
    let mut got = texts(&layout);
    got.sort();
    assert_eq!(got, vec!["Allergic to peanuts", "Plays the violin"]);

    // Accepted again through the command line: nothing to do (a retry);
    // rejected after it was accepted, or accepted after it was rejected:
    // a clear refusal saying what was decided; by putting its item back,
    // taken out again and applied once.
    let out = memd(dir, &["review", "accept", &violin]);
    assert!(out.status.success(), "{}", stderr(&out));
    for (verb, id, said) in [
        ("reject", &violin, "accepted and applied already"),
        ("accept", &peanuts, "rejected already"),
    ] {
        let out = memd(dir, &["review", verb, id]);
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(err.contains(said) && !err.contains("there is no"), "{err}");
    }
    std::fs::write(
        layout.review_md(),
        format!(
            "{}\n- [x] {violin} add \"Plays the violin\"\n",
            review_md(&layout)
        ),
    )
    .unwrap();
    let out = memd(dir, &["review", "apply", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let carried: Carried = serde_json::from_slice::<serde_json::Value>(&out.stdout)
        .map(|v| serde_json::from_value(v["carried"].clone()).unwrap())
        .unwrap();
    assert_eq!(carried.repeated, vec![violin.clone()], "{carried:?}");
    assert_eq!(texts(&layout).len(), 2, "applied once");
    assert!(!review_md(&layout).contains(violin.as_str()));
    assert_checks_clean(dir, "an item accepted twice");
}

/// An update the agent declared is proposed like any op in review mode;
/// rejected, its fact becomes an entry of its own and the entry it named
/// stays: the person reviewing has the last word over the agent.
#[test]
fn a_declared_update_rejected_in_review_keeps_both_the_fact_and_the_entry_it_named() {
    let (_t, layout) = cli_dir(None);
    let dir = &layout.root;
    assert!(memd(dir, &["add", "Lives in Berlin"]).status.success());
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let berlin = entries(&layout)[0].meta.as_ref().unwrap().id.clone();
    let toml = std::fs::read_to_string(layout.config_file()).unwrap();
    let toml = toml.replace(
        "[consolidation]\n",
        "[consolidation]\nreview = \"manual\"\n",
    );
    std::fs::write(layout.config_file(), toml).unwrap();
    let out = memd(
        dir,
        &["add", "Moved to Hamburg", "--supersedes", berlin.as_str()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(texts(&layout), vec!["Lives in Berlin"], "nothing applied");
    let hamburg = item(&layout, "Hamburg");
    let out = memd(dir, &["review", "reject", hamburg.as_str(), "--apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut got = texts(&layout);
    got.sort();
    assert_eq!(got, vec!["Lives in Berlin", "Moved to Hamburg"]);
    assert!(
        entries(&layout)
            .iter()
            .any(|e| e.meta.as_ref().unwrap().id == berlin)
    );
    assert_checks_clean(dir, "a declared update rejected");
}

#[test]
fn a_review_killed_at_each_step_loses_nothing_and_applies_nothing_twice() {
    let (_t, layout) = manual_cli_dir();
    let dir = &layout.root;
    assert!(memd(dir, &["add", "Plays the violin"]).status.success());
    // Killed after the proposal, before its item: the next carry-out
    // writes the item, and nothing is taken as rejected.
    kill_at(dir, &["consolidate", "--force"], "review-proposed");
    assert!(!review_md(&layout).contains("- [ ]"));
    let out = memd(dir, &["review", "apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let violin = item(&layout, "violin");
    assert!(
        review_md(&layout).contains(&format!("- [ ] {violin}")),
        "{}",
        review_md(&layout)
    );
    assert_checks_clean(dir, "a run killed after proposing");
    // Killed after applying, before recording the decision: carried out
    // once, and recorded by the next carry-out.
    assert!(memd(dir, &["review", "accept", &violin]).status.success());
    kill_at(dir, &["review", "apply"], "review-applied");
    assert_eq!(texts(&layout), vec!["Plays the violin"]);
    let out = memd(dir, &["review", "apply", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(texts(&layout), vec!["Plays the violin"], "applied once");
    assert!(Proposals::load(&layout).unwrap().open().next().is_none());
    assert!(!review_md(&layout).contains(violin.as_str()));
    assert_checks_clean(dir, "a review killed after applying");
}

#[tokio::test(flavor = "multi_thread")]
async fn erasing_a_fact_under_review_takes_its_text_out_of_the_proposals_and_review_md() {
    let server = scripted(|_, body| mover(body)).await;
    let (_t, layout, _) = proposed(&server.url).await;
    let rex = item(&layout, "Rex");
    let props = Proposals::load(&layout).unwrap();
    let fact = props.get(&rex).unwrap().op.from()[0].clone();
    let out = memd(&layout.root, &["forget", "--erase", &fact]);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in [layout.proposals_file(), layout.review_md()] {
        let bytes = std::fs::read(&file).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains("dog called Rex"),
            "{} still says it",
            file.display()
        );
    }
    let props = Proposals::load(&layout).unwrap();
    assert_eq!(
        props.decided.get(&rex).map(|d| d.decision),
        Some(memd::review::Decision::Withdrawn)
    );
    assert!(
        review_md(&layout).contains("Hamburg"),
        "the other item stays"
    );
    assert_checks_clean(&layout.root, "an erasure of a fact under review");
}

/// Two entries that say the same, one deleted by hand: the next run
/// merges that one into its twin, which is the person's edit carried out,
/// not an op of the run. A run that proposes its own ops beside it has
/// still applied none of them, and `memd check` says so. (Found by the
/// random test, seed 5631785880548023366: check reported the merge as a
/// REMOVE applied past review.)
#[test]
fn a_twin_deleted_by_hand_is_merged_by_a_run_in_review_and_check_sees_no_op_applied_past_review() {
    let (_t, layout) = manual_cli_dir();
    let dir = &layout.root;
    for text in ["Plays the violin", "plays the violin"] {
        assert!(memd(dir, &["add", text]).status.success());
    }
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    for o in memd::review::list(&layout).unwrap().open {
        let out = memd(dir, &["review", "reject", o.item.as_str()]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = memd(dir, &["review", "apply"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let twins: Vec<_> = entries(&layout)
        .into_iter()
        .filter(|e| e.text.eq_ignore_ascii_case("plays the violin"))
        .collect();
    assert_eq!(twins.len(), 2, "rejected, each fact is kept word for word");
    let gone = twins[1].meta.as_ref().unwrap().id.to_string();
    delete_entry_by_hand(&layout.entries_file(), &gone).unwrap();

    assert!(memd(dir, &["add", "Allergic to peanuts"]).status.success());
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("1 op proposed"), "{}", stdout(&out));
    let journal = memd::journal::read(&layout.journal_file()).unwrap();
    assert!(
        journal
            .iter()
            .any(|r| r.entry == gone && r.into.is_some() && r.op == memd::journal::Op::Remove),
        "the twin was merged: {journal:#?}"
    );
    assert_checks_clean(dir, "a twin deleted by hand, merged by a run that proposed");
}

/// The other side of the test above: a decision of the judge that a run in
/// review applied all the same (here written into the journal as such a
/// run would) is what `memd check` reports.
#[test]
fn an_op_a_run_in_review_applied_all_the_same_is_reported_by_check() {
    let (_t, layout) = manual_cli_dir();
    let dir = &layout.root;
    assert!(memd(dir, &["add", "Plays the violin"]).status.success());
    let out = memd(dir, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_checks_clean(dir, "a run that proposed");
    let run = Proposals::load(&layout).unwrap().all[0].run.clone();
    let clock = memd::clock::Clock::System;
    let mut r = memd::journal::Record::new(&clock, &run, memd::journal::Op::Add, "e-0badc0de");
    r.after = Some("Plays the violin".into());
    r.model = Some("built-in".into());
    let line = serde_json::to_string(&r).unwrap();
    let mut journal = std::fs::read_to_string(layout.journal_file()).unwrap_or_default();
    journal.push_str(&line);
    journal.push('\n');
    std::fs::write(layout.journal_file(), journal).unwrap();
    let out = memd(dir, &["check", "--json"]);
    assert!(!out.status.success());
    assert!(stdout(&out).contains("review_bypassed"), "{}", stdout(&out));
}
