//! Updates a run makes of facts that change an entry's value: history
//! kept, typos dropped, an update added beside its entry caught by the
//! second look.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_change_over_time_becomes_one_entry_with_its_history() {
    let (_t, layout) = memory_dir();
    let google = add(
        &layout,
        "2026-11-01",
        &["Works at Google as a data engineer"],
    );
    let server = scripted(|n, body| {
        let p = prompt_of(body);
        if n == 0 || is_promotion(body) {
            return faithful(body);
        }
        let entry = alias_of(&p, 'E', "Google").expect("the Google entry is in the cluster");
        let fact = alias_of(&p, 'F', "Microsoft").expect("the new fact is in the cluster");
        Reply::Json(chat(
            json!({"ops": [{"op": "REPLACE", "target": entry, "from": [fact],
                "text": "Currently works at Microsoft on the Fabric team (since 2026-11-20); previously worked at Google as a data engineer."}]})
            .to_string(),
        ))
    })
    .await;
    let config = llm_config(&server.url);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(entries(&layout).len(), 1);

    let microsoft = add(
        &layout,
        "2026-11-20",
        &["Now works at Microsoft on the Fabric team"],
    );
    // Before consolidation both are retrievable: the entry and the new fact.
    let index = memd::index::Index::open(&memd::Memory::new(layout.clone(), config.clone()))
        .await
        .unwrap();
    index.writer.sync().await.unwrap();
    let hits = index
        .reader
        .search(&memd::index::Query::new("where does the user work", 5).logged())
        .await
        .unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    assert!(texts.iter().any(|t| t.contains("Google")), "{texts:?}");
    assert!(texts.iter().any(|t| t.contains("Microsoft")), "{texts:?}");
    drop(index);

    let report = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(report.applied.replace, 1, "{report:#?}");
    let all = entries(&layout);
    assert_eq!(all.len(), 1, "{all:#?}");
    let e = &all[0];
    assert!(
        e.text.contains("Currently works at Microsoft")
            && e.text.contains("previously worked at Google")
    );
    let mut want = google.clone();
    want.extend(microsoft.clone());
    assert_eq!(sources(e), want);
    assert!(is_done(&layout, &microsoft[0]));

    // The journal keeps the lineage, and `memd history` prints it.
    the_journal_keeps_the_google_entrys_lineage(&layout, e.id().unwrap());
}

/// The journal keeps the lineage of entry `id`, added as the Google fact
/// and replaced by the scripted judge, and `memd history` prints it.
fn the_journal_keeps_the_google_entrys_lineage(layout: &Layout, id: &str) {
    let history = memd::forget::history(layout, id).unwrap();
    let ops: Vec<journal::Op> = history.iter().map(|r| r.op).collect();
    assert_eq!(ops, vec![journal::Op::Add, journal::Op::Replace]);
    assert_eq!(
        history[1].before.as_deref(),
        Some("Works at Google as a data engineer")
    );
    assert_eq!(history[1].model.as_deref(), Some("scripted"));
    assert!(history[1].prompt_hash.is_some());
    let out = memd(&layout.root, &["history", id]);
    assert!(
        stdout(&out).contains("before: Works at Google"),
        "{}",
        stdout(&out)
    );
}

/// Small models ADD an update beside the entry it supersedes; the second
/// look asks about that one ADD and turns it into a REPLACE with history.
#[tokio::test(flavor = "multi_thread")]
async fn an_update_added_beside_its_entry_is_caught_by_the_second_look() {
    let (_t, layout) = memory_dir();
    let old = add(
        &layout,
        "2026-11-01",
        &["Hanna Berglund and Iris Okafor co-host a podcast about careers"],
    );
    let cat = add(
        &layout,
        "2026-11-01",
        &["Iris Okafor has a cat named Pixel"],
    );
    let server = scripted(|_, body| {
        let p = prompt_of(body);
        if !is_update_check(body) {
            // The ingest, then the update: every fact ADDed, as a small
            // model does.
            return faithful(body);
        }
        let fact = &listed(&p, 'F')[0].1;
        Reply::Json(if fact.contains("Piet") {
            outdated(&alias_of(&p, 'E', "podcast").expect("the podcast entry is shown"))
        } else if fact.contains("Tokyo") {
            // A name that was not shown, then garbage: the ADD stays.
            outdated("E9")
        } else {
            chat("I think so")
        })
    })
    .await;
    let mut config = llm_config(&server.url);
    config.consolidation.check_updates = true;
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(entries(&layout).len(), 2);
    // No entries yet: nothing to ask about.
    assert_eq!(asked(&server), 0);

    let new = add(
        &layout,
        "2026-11-20",
        &[
            "Piet Hallam and Iris Okafor co-host a podcast about careers",
            "Iris Okafor visited Tokyo in May",
            "Iris Okafor wrote a novel about careers",
        ],
    );
    let report = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(
        (report.applied.replace, report.applied.add),
        (1, 2),
        "{report:#?}"
    );
    // Each ADD beside an entry it shares words with is asked about once.
    assert_eq!(asked(&server), 3);
    the_podcast_entry_is_replaced_and_the_others_added(&layout, &old, &cat, &new);

    // Turned off, no second look is asked.
    with_updates_unchecked_no_second_look_is_asked(&layout, &config, &server).await;
}

/// The update checks `s` was asked.
fn asked(s: &Scripted) -> usize {
    s.requests
        .lock()
        .unwrap()
        .iter()
        .filter(|b| is_update_check(b))
        .count()
}

/// After the second look: the podcast entry of fact `old` replaced by
/// the first of `new`, with history, beside the cat's entry of `cat` and
/// an entry each for the other two of `new`.
fn the_podcast_entry_is_replaced_and_the_others_added(
    layout: &Layout,
    old: &[String],
    cat: &[String],
    new: &[String],
) {
    let all = entries(layout);
    assert_eq!(all.len(), 4, "{all:#?}");
    let podcast = entry_with(&all, "Piet");
    assert_eq!(
        podcast.text,
        "Piet Hallam and Iris Okafor co-host a podcast about careers \
         (previously: Hanna Berglund and Iris Okafor co-host a podcast about careers)"
    );
    let mut want = old.to_vec();
    want.push(new[0].clone());
    assert_eq!(sources(podcast), want);
    assert_eq!(sources(entry_with(&all, "Pixel")), cat);
    assert_eq!(sources(entry_with(&all, "Tokyo")), vec![new[1].clone()]);
    assert_eq!(sources(entry_with(&all, "novel")), vec![new[2].clone()]);
    let history = memd::forget::history(layout, podcast.id().unwrap()).unwrap();
    assert_eq!(history.last().unwrap().op, journal::Op::Replace);
}

/// With `config`'s update check turned off, a run ADDs an update and
/// `server` is asked no second look.
async fn with_updates_unchecked_no_second_look_is_asked(
    layout: &Layout,
    config: &Config,
    server: &Scripted,
) {
    let mut off = config.clone();
    off.consolidation.check_updates = false;
    let before = asked(server);
    add(
        layout,
        "2026-11-21",
        &["Ann Lee and Iris Okafor co-host a podcast about careers"],
    );
    let report = consolidate::run(&crate::support::memory(layout, &off), FORCE)
        .await
        .unwrap();
    assert_eq!(report.applied.add, 1, "{report:#?}");
    assert_eq!(asked(server), before);
}

#[test]
fn a_replace_keeps_the_old_value_unless_it_was_a_typo_or_is_history_already() {
    a_replace_keeps_a_changed_value_drops_a_typo_and_keeps_history_written();
    a_replace_keeps_the_old_text_a_new_statement_no_longer_says();
}

/// A changed value is kept as history, a typo fixed is not, history the
/// judge wrote is kept unless it drops too much, and a contrast says
/// the old value is history unless it fixes a typo.
fn a_replace_keeps_a_changed_value_drops_a_typo_and_keeps_history_written() {
    use memd::consolidate::reply::repair::with_history;
    // Another person in the same role (Qwen 1.5B writes it this way).
    assert_eq!(
        with_history(
            "Piet Hallam and Iris Okafor co-host a podcast.",
            "Hanna Berglund and Iris Okafor co-host a podcast."
        ),
        "Piet Hallam and Iris Okafor co-host a podcast. \
         (previously: Hanna Berglund and Iris Okafor co-host a podcast.)"
    );
    // A number is a value, never a typo.
    assert_eq!(
        with_history("Sam is 35 years old", "Sam is 34 years old"),
        "Sam is 35 years old (previously: Sam is 34 years old)"
    );
    // A typo fix drops the wrong spelling.
    assert_eq!(
        with_history("John Smith lives in Oslo", "Jon Smith lives in Oslo"),
        "John Smith lives in Oslo"
    );
    // History the judge wrote is kept as written; so is a text that drops
    // nothing.
    for (new, old) in [
        (
            "Lives in Hamburg; previously lived in Berlin with Ann",
            "Lives in Berlin with Ann",
        ),
        (
            "Lives in Berlin with Ann and two cats",
            "Lives in Berlin with Ann",
        ),
    ] {
        assert_eq!(with_history(new, old), new);
    }
    // Own history that keeps too little of the old text: the old text too.
    assert_eq!(
        with_history(
            "Lives in Hamburg; previously Berlin",
            "Lives in Berlin with Ann and two cats"
        ),
        "Lives in Hamburg; previously Berlin (previously: Lives in Berlin with Ann and two cats)"
    );
    // A new value set against the old one ("X, not Y") drops no word of
    // the old text, and the old text is no longer true: it is history
    // (Qwen 1.5B's Letta update was "current only" without it). A contrast
    // that fixes a typo is not.
    assert_eq!(
        with_history(
            "Emil Rask, not Dani Moreau, collaborated with Luca Brenner on a tech startup.",
            "Dani Moreau and Luca Brenner collaborated on a tech startup."
        ),
        "Emil Rask, not Dani Moreau, collaborated with Luca Brenner on a tech startup. \
         (previously: Dani Moreau and Luca Brenner collaborated on a tech startup.)"
    );
    assert_eq!(
        with_history(
            "The manager is John, not Jon, since the start",
            "The manager is Jon"
        ),
        "The manager is John, not Jon, since the start"
    );
}

/// A new text that still says the old one is kept as written; one that
/// says every old word in another statement, or no longer says what
/// both did, keeps the old text as history, flattened.
fn a_replace_keeps_the_old_text_a_new_statement_no_longer_says() {
    use memd::consolidate::reply::repair::with_history;
    // Words put between the old ones, history written already, the same
    // contrast again, or "not" opening a clause of its own: the old text
    // is still said.
    for (new, old) in [
        (
            "Alice Smith, a nurse, lives in Seattle",
            "Alice lives in Seattle",
        ),
        (
            "Lives in Hamburg with Ann (previously: Lives in Berlin)",
            "Lives in Hamburg (previously: Lives in Berlin)",
        ),
        (
            "The manager is John, not Jon",
            "The manager is John, not Jon",
        ),
        (
            "Works at Acme, not only as an engineer but as a manager",
            "Works at Acme as an engineer",
        ),
    ] {
        assert_eq!(with_history(new, old), new);
    }
    // Every old word kept, in another statement: a swap of two people
    // (and a plural is no typo fixed; Qwen 1.5B's Letta update was
    // "current only" for it).
    assert_eq!(
        with_history(
            "Freya is the older sibling, with Dmitri being her younger brother.",
            "Dmitri and Freya are siblings, with Dmitri being the older brother."
        ),
        "Freya is the older sibling, with Dmitri being her younger brother. \
         (previously: Dmitri and Freya are siblings, with Dmitri being the older brother.)"
    );
    // Every old word kept, in another statement: a swap of two people.
    assert_eq!(
        with_history(
            "Dani is a published author, while Emil is known for graphic design.",
            "Emil is a published author."
        ),
        "Dani is a published author, while Emil is known for graphic design. \
         (previously: Emil is a published author.)"
    );
    // Every old word kept, in order, and what both did no longer said
    // (Qwen 1.5B's Letta update, set 73, was "current only" without it);
    // said of both still, the old text is still said.
    assert_eq!(
        with_history(
            "Hugo Steen attended Stanford University, while Ines Calloway attended the Massachusetts Institute of Technology.",
            "Hugo Steen and Ines Calloway both attended the Massachusetts Institute of Technology."
        ),
        "Hugo Steen attended Stanford University, while Ines Calloway attended the Massachusetts Institute of Technology. \
         (previously: Hugo Steen and Ines Calloway both attended the Massachusetts Institute of Technology.)"
    );
    assert_eq!(
        with_history(
            "Hugo and Ines both attended MIT in 2019",
            "Hugo and Ines both attended MIT"
        ),
        "Hugo and Ines both attended MIT in 2019"
    );
    // Older history is flattened, not nested.
    assert_eq!(
        with_history(
            "Works at Contoso",
            "Works at Microsoft (previously: Works at Google)"
        ),
        "Works at Contoso (previously: Works at Microsoft; Works at Google)"
    );
}
