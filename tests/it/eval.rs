//! The consolidation evaluation harness, checked with scripted judges whose
//! scores are known in advance.

use memd::config::{Config, EmbedderKind};
use serde_json::json;

use crate::support::*;

/// A one-set data file in the Letta format (made up for the test).
fn data() -> tempfile::TempDir {
    data_answering("Dan Park")
}

/// [`data`] with another `answer_after`.
fn data_answering(answer_after: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let row = json!({
        "set": 7,
        "facts": ["Ann Lee plays the violin in Vienna.", "Bob Ray is a chef in Lyon.", "Cy Fox swims every morning in Oslo."],
        "new_fact": "Dan Park plays the violin in Vienna.",
        "supersedes": [0],
        "question": "Who plays the violin in Vienna?",
        "answer_before": "Ann Lee",
        "answer_after": answer_after
    });
    std::fs::write(
        dir.path().join("letta_updates_dev.jsonl"),
        format!("{row}\n"),
    )
    .unwrap();
    dir
}

fn config(url: &str) -> Config {
    let mut c = Config::default();
    c.llm.base_url = url.into();
    c.llm.model = "scripted".into();
    c.llm.max_attempts = 1;
    c.embedder.kind = EmbedderKind::Lexical;
    c.consolidation.min_similarity = 0.0;
    c
}

fn ops(v: serde_json::Value) -> Reply {
    Reply::Json(chat(json!({ "ops": v }).to_string()))
}

/// Is this the update run (entries exist) rather than the ingest?
fn updating(body: &serde_json::Value) -> bool {
    !listed(&prompt_of(body), 'E').is_empty()
}

/// A judge that adds each fact, then replaces the violin entry with the
/// update and writes its history.
async fn perfect_judge() -> Scripted {
    scripted(|_, body| {
        if !updating(body) {
            return faithful(body);
        }
        let p = prompt_of(body);
        let e = alias_of(&p, 'E', "violin").unwrap();
        let f = alias_of(&p, 'F', "Dan Park").unwrap();
        ops(json!([{"op": "REPLACE", "target": e, "from": [f],
            "text": "Dan Park plays the violin in Vienna; previously Ann Lee did."}]))
    })
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_perfect_judge_scores_perfectly() {
    let server = perfect_judge().await;
    let d = data();
    let r = one_set(&d, config(&server.url), None).await.unwrap();
    assert_eq!(
        (r.facts, r.entries_after_ingest, r.false_merges),
        (3, 3, 0),
        "{r:#?}"
    );
    assert_eq!((r.update_rows, r.updates.history), (1, 1), "{r:#?}");
    assert_eq!((r.facts_lost, r.others_touched), (0, 0), "{r:#?}");
    assert_eq!(r.llm_calls, 2);
}

/// Some Letta answers are sentences of their own, which no entry names
/// word for word ("Greta Holm is not recognized as a Michigan-based
/// arts contributor"): an entry that says the new fact, with the old one
/// as history, is an update kept as history all the same. It was scored
/// "beside".
#[tokio::test(flavor = "multi_thread")]
async fn an_update_whose_answer_is_a_sentence_of_its_own_is_scored_by_the_new_fact() {
    let server = perfect_judge().await;
    let d = data_answering("The violinist of Vienna is a man called Dan Park, not Ann.");
    let r = one_set(&d, config(&server.url), None).await.unwrap();
    assert_eq!((r.update_rows, r.updates.history), (1, 1), "{r:#?}");
    assert_eq!(r.updates.beside, 0, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_merges_everything_is_caught() {
    let server = scripted(|_, body| {
        let facts: Vec<String> = listed(&prompt_of(body), 'F').into_iter().map(|(a, _)| a).collect();
        ops(json!([{"op": "ADD", "from": facts,
            "text": "Ann Lee plays the violin in Vienna, Bob Ray is a chef in Lyon and Cy Fox swims every morning in Oslo."}]))
    })
    .await;
    let d = data();
    let r = one_set(&d, config(&server.url), None).await.unwrap();
    assert_eq!(r.entries_after_ingest, 1, "{r:#?}");
    assert_eq!(r.false_merges, 2, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_drops_a_fact_is_caught() {
    let server = scripted(|_, body| {
        if !updating(body) {
            return faithful(body);
        }
        // Folds the chef entry into the updated violin entry, keeping only
        // Bob Ray's name: that he is a chef in Lyon would be gone.
        let p = prompt_of(body);
        let violin = alias_of(&p, 'E', "violin").unwrap();
        let chef = alias_of(&p, 'E', "chef").unwrap();
        let f = alias_of(&p, 'F', "Dan Park").unwrap();
        ops(json!([
            {"op": "REPLACE", "target": violin, "from": [f],
             "text": "Dan Park plays the violin in Vienna with Bob Ray; previously Ann Lee did."},
            {"op": "REMOVE", "target": chef, "into": violin}
        ]))
    })
    .await;
    let d = data();
    let r = one_set(&d, config(&server.url), None).await.unwrap();
    // Validation refuses the merge (it drops "chef" and "Lyon": a merge
    // must keep the removed entry's names and numbers), so the harness
    // finds nothing lost and nothing touched; the update is added beside.
    assert_eq!(r.false_merges, 0, "{r:#?}");
    assert_eq!(r.facts_lost, 0, "{r:#?}");
    assert_eq!(r.others_touched, 0, "{r:#?}");
    assert_eq!(r.updates.lost, 0, "{r:#?}");
}

/// Qwen 1.5B, told to keep history, appended a made-up past to every fact
/// it ADDed. Validation keeps the facts' own words instead, and the
/// harness counts what would have slipped through.
#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_invents_is_overruled_with_the_facts_own_words() {
    let server = scripted(|_, body| {
        if is_update_check(body) {
            return Reply::Json(outdated("none"));
        }
        let ops_: Vec<serde_json::Value> = listed(&prompt_of(body), 'F')
            .into_iter()
            .map(|(a, t)| {
                json!({"op": "ADD", "from": [a],
                "text": format!("{t}; previously they studied medicine in Edinburgh.")})
            })
            .collect();
        ops(json!(ops_))
    })
    .await;
    let d = data();
    let keep = tempfile::tempdir().unwrap();
    let r = one_set(&d, config(&server.url), Some(keep.path()))
        .await
        .unwrap();
    assert_eq!(
        (r.invented, r.facts_lost, r.false_merges),
        (0, 0, 0),
        "{r:#?}"
    );
    let memory =
        std::fs::read_to_string(keep.path().join("set-7/base/consolidated/memory.md")).unwrap();
    assert!(!memory.contains("Edinburgh"), "{memory}");
    assert!(memory.contains("Bob Ray is a chef in Lyon."), "{memory}");
}

/// The usual small-model reply: the update ADDed beside the entry it
/// supersedes. The second look names that entry, and the update is kept
/// as history; `--keep` leaves the files to read.
#[tokio::test(flavor = "multi_thread")]
async fn an_update_added_beside_but_named_on_the_second_look_is_history() {
    let server = scripted(|_, body| {
        if !is_update_check(body) {
            return faithful(body);
        }
        let p = prompt_of(body);
        Reply::Json(outdated(
            &alias_of(&p, 'E', "violin").unwrap_or_else(|| "none".into()),
        ))
    })
    .await;
    let d = data();
    let keep = tempfile::tempdir().unwrap();
    let mut c = config(&server.url);
    c.consolidation.check_updates = true;
    let r = one_set(&d, c.clone(), Some(keep.path())).await.unwrap();
    let u = &r.updates;
    assert_eq!((u.history, u.beside, u.current_only), (1, 0, 0), "{r:#?}");
    assert_eq!(
        (r.facts_lost, r.others_touched, r.false_merges),
        (0, 0, 0),
        "{r:#?}"
    );
    assert_eq!(r.outcomes, vec!["set 7 row 0: history; top hit current"]);
    assert_eq!(r.current_top, 1, "{r:#?}");
    let memory =
        std::fs::read_to_string(keep.path().join("set-7/update-0/consolidated/memory.md")).unwrap();
    assert!(
        memory.contains(
            "Dan Park plays the violin in Vienna. (previously: Ann Lee plays the violin in Vienna.)"
        ),
        "{memory}"
    );
    // A second run does not overwrite what was kept.
    let again = one_set(&d, config(&server.url), Some(keep.path())).await;
    assert!(again.unwrap_err().to_string().contains("exists already"));
}

#[test]
fn the_built_in_judge_never_merges_or_loses_but_keeps_no_history() {
    let d = data();
    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Lexical;
    let r = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(one_set(&d, c, None))
        .unwrap();
    assert_eq!(
        (r.false_merges, r.facts_lost, r.llm_calls),
        (0, 0, 0),
        "{r:#?}"
    );
    assert_eq!((r.updates.beside, r.updates.history), (1, 0), "{r:#?}");
}

/// A two-session conversation in the LoCoMo layout (made up for the test).
fn locomo_data() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let conv = json!([{
        "sample_id": "test-1",
        "conversation": {
            "speaker_a": "Ana", "speaker_b": "Ben",
            "session_1_date_time": "2:14 pm on 8 May, 2023",
            "session_2_date_time": "10:00 am on 20 May, 2023"
        },
        "observation": {
            "session_1_observation": {
                "Ana": [["Ana adopted a grey rescue greyhound named Comet.", "D1:3"]],
                "Ben": [["Ben is training for the Lisbon marathon.", "D1:5"]]
            },
            "session_2_observation": {
                "Ana": [["Ana adopted a grey rescue greyhound named Comet.", "D2:1"],
                        ["Ana started pottery classes on Thursdays.", "D2:4"]]
            }
        },
        "qa": [
            {"question": "What is the name of Ana's greyhound?", "answer": "Comet", "evidence": ["D1:3"], "category": 1},
            {"question": "Which marathon is Ben training for?", "answer": "Lisbon", "evidence": ["D1:5"], "category": 4},
            {"question": "When does Ana do pottery?", "answer": "Thursdays", "evidence": ["D2:4"], "category": 2},
            {"question": "Unscored adversarial question", "answer": "x", "evidence": ["D1:3"], "category": 5},
            {"question": "Evidence outside the observations", "answer": "x", "evidence": ["D1:9"], "category": 1}
        ]
    }]);
    std::fs::write(dir.path().join("locomo_dev.json"), conv.to_string()).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread")]
async fn locomo_streams_sessions_and_scores_evidence_recall() {
    let d = locomo_data();
    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Lexical;
    let r = memd::eval::locomo::run(d.path(), c.clone(), 1, 10, &[])
        .await
        .unwrap();
    assert_eq!((r.conversations, r.sessions, r.facts), (1, 2, 4), "{r:#?}");
    // The restated adoption merged into its entry for free: 3 entries.
    assert_eq!(r.entries, 3, "{r:#?}");
    assert_eq!((r.questions, r.questions_skipped), (3, 1), "{r:#?}");
    assert_eq!(r.found_at_10, 3, "{r:#?}");
    // Only the first session: the pottery question is not scored.
    let r = memd::eval::locomo::run(d.path(), c, 1, 1, &[])
        .await
        .unwrap();
    assert_eq!((r.sessions, r.facts, r.questions), (1, 2, 2), "{r:#?}");
}

/// A judge that gives no usable reply for the ingest leaves the facts
/// pending: the harness says "ingest failed", never "lost", and does not
/// count them again in each update row.
#[tokio::test(flavor = "multi_thread")]
async fn facts_still_pending_are_never_counted_as_lost() {
    let server = scripted(|_, body| {
        if updating(body) {
            return faithful(body);
        }
        Reply::Json(chat("I cannot help with that."))
    })
    .await;
    let d = data();
    let r = one_set(&d, config(&server.url), None).await.unwrap();
    assert_eq!((r.facts, r.ingest_failed), (3, 3), "{r:#?}");
    assert_eq!(r.facts_lost, 0, "{r:#?}");
    assert_eq!(r.updates.lost, 0, "{r:#?}");
}

/// `data()` and a few SICK-format pairs (made up for the test): one of each
/// label `memd eval updates` reads.
fn pairs_data() -> tempfile::TempDir {
    let d = data();
    let rows = [
        "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_AB\tentailment_BA\tSemEval_set",
        "1\tA boy is playing a flute\tA girl is playing a flute\t4.1\tA_neutral_B\tB_neutral_A\tTRAIN",
        "2\tA man is slicing an onion\tAn onion is being sliced by a man\t4.9\tA_entails_B\tB_entails_A\tTRAIN",
        "3\tA dog is running on grass\tNo dog is running on grass\t4.0\tA_contradicts_B\tB_contradicts_A\tTRAIN",
    ];
    std::fs::write(d.path().join("sick_dev.tsv"), rows.join("\n") + "\n").unwrap();
    d
}

/// A judge that takes every second fact for an update of the first is
/// scored right on the updates and the contradictions, and every
/// related-but-different pair it marks so is a false supersession; the
/// built-in judge marks none, and keeps no update as history.
#[tokio::test(flavor = "multi_thread")]
async fn eval_updates_counts_false_supersessions_apart() {
    let server = scripted(|_, body| {
        let p = prompt_of(body);
        let (entries, facts) = (listed(&p, 'E'), listed(&p, 'F'));
        match (entries.first(), facts.first()) {
            (Some((e, old)), Some((f, new))) => ops(json!([{"op": "REPLACE", "target": e,
                "from": [f], "text": format!("{new} (previously: {old})")}])),
            _ => faithful(body),
        }
    })
    .await;
    let d = pairs_data();
    let r = memd::eval::pairs::run(d.path(), config(&server.url), 5, 1)
        .await
        .unwrap();
    let of = |name: &str| r.sources.iter().find(|s| s.name == name).unwrap();
    assert_eq!(of("letta-update").superseded, 1, "{r:#?}");
    assert_eq!(of("sick-contradiction").superseded, 1, "{r:#?}");
    let people = of("letta-two-facts-of-one-person");
    assert_eq!((people.pairs, people.superseded), (3, 3), "{r:#?}");
    assert_eq!(of("sick-neutral-related").superseded, 1, "{r:#?}");
    assert_eq!((r.false_supersessions, r.different_pairs), (4, 4), "{r:#?}");
    assert!(
        r.sources.iter().all(|s| s.lost == 0 && s.failed == 0),
        "{r:#?}"
    );

    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Lexical;
    let r = memd::eval::pairs::run(d.path(), c, 5, 1).await.unwrap();
    assert_eq!(r.false_supersessions, 0, "{r:#?}");
    assert_eq!(of_apart(&r, "letta-update"), 1, "{r:#?}");
}

fn of_apart(r: &memd::eval::pairs::PairsReport, name: &str) -> usize {
    r.sources.iter().find(|s| s.name == name).unwrap().apart
}

/// `memd eval updates --gate`: memd's own rule measured alone, on every
/// pair. It keeps the update that changes one value of the same words (a
/// violinist in Vienna), and refuses two facts sharing no word but names
/// and the scenes about someone unnamed ("a boy", "a girl"), whatever a
/// judge would say.
#[test]
fn eval_updates_gate_counts_what_memds_own_rule_keeps_as_an_update() {
    let d = pairs_data();
    let r = memd::eval::pairs::gate(d.path()).unwrap();
    let of = |name: &str| {
        let s = r.sources.iter().find(|s| s.0 == name).unwrap();
        (s.1, s.2)
    };
    assert_eq!(of("letta-update"), (1, 1), "{r:#?}");
    assert_eq!(of("letta-two-facts-of-one-person"), (3, 0), "{r:#?}");
    assert_eq!(of("sick-neutral-related"), (1, 0), "{r:#?}");
    let out = crate::support::memd(
        d.path(),
        &[
            "eval",
            "updates",
            "--gate",
            "--data",
            d.path().to_str().unwrap(),
        ],
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    assert!(
        said.contains("letta-update") && said.contains("100.0%"),
        "{said}"
    );
}

/// The evaluation on one fact set (the first of the data, at most 5
/// update rows), updates not declared.
fn one_set(
    d: &tempfile::TempDir,
    config: memd::config::Config,
    keep: Option<&std::path::Path>,
) -> impl std::future::Future<Output = anyhow::Result<memd::eval::letta::LettaReport>> {
    let sample = memd::eval::letta::Sample::of(1, 5, 1);
    let (data, keep) = (d.path().to_path_buf(), keep.map(|k| k.to_path_buf()));
    async move { memd::eval::letta::run(&data, config, sample, keep.as_deref()).await }
}
