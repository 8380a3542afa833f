//! The consolidation evaluation harness, checked with scripted judges whose
//! scores are known in advance.

use memd::config::{Config, EmbedderKind};
use serde_json::json;

use crate::support::*;

/// A one-set data file in the Letta format (made up for the test).
fn data() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let row = json!({
        "set": 7,
        "facts": ["Ann Lee plays the violin in Vienna.", "Bob Ray is a chef in Lyon.", "Cy Fox swims every morning in Oslo."],
        "new_fact": "Dan Park now plays the violin in Vienna instead of Ann Lee.",
        "supersedes": [0],
        "question": "Who plays the violin in Vienna?",
        "answer_before": "Ann Lee",
        "answer_after": "Dan Park"
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

#[tokio::test(flavor = "multi_thread")]
async fn a_perfect_judge_scores_perfectly() {
    let server = scripted(|_, body| {
        if !updating(body) {
            return faithful(body);
        }
        let p = prompt_of(body);
        let e = alias_of(&p, 'E', "violin").unwrap();
        let f = alias_of(&p, 'F', "Dan Park").unwrap();
        ops(json!([{"op": "REPLACE", "target": e, "from": [f],
            "text": "Dan Park plays the violin in Vienna; previously Ann Lee did."}]))
    })
    .await;
    let d = data();
    let r = memd::eval::letta::run(d.path(), config(&server.url), 1, 5, 1)
        .await
        .unwrap();
    assert_eq!(
        (r.facts, r.entries_after_ingest, r.false_merges),
        (3, 3, 0),
        "{r:#?}"
    );
    assert_eq!((r.update_rows, r.updates.history), (1, 1), "{r:#?}");
    assert_eq!((r.facts_lost, r.others_touched), (0, 0), "{r:#?}");
    assert_eq!(r.llm_calls, 2);
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
    let r = memd::eval::letta::run(d.path(), config(&server.url), 1, 5, 1)
        .await
        .unwrap();
    assert_eq!(r.entries_after_ingest, 1, "{r:#?}");
    assert_eq!(r.false_merges, 2, "{r:#?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_judge_that_drops_a_fact_is_caught() {
    let server = scripted(|_, body| {
        if !updating(body) {
            return faithful(body);
        }
        // Rewrites the chef entry around the new fact, keeping just enough
        // of it (the name) to pass validation: that Bob is a chef is gone.
        let p = prompt_of(body);
        let e = alias_of(&p, 'E', "chef").unwrap();
        let f = alias_of(&p, 'F', "Dan Park").unwrap();
        ops(json!([{"op": "REPLACE", "target": e, "from": [f],
            "text": "Bob Ray and Dan Park play the violin in Vienna instead of Ann Lee."}]))
    })
    .await;
    let d = data();
    let r = memd::eval::letta::run(d.path(), config(&server.url), 1, 5, 1)
        .await
        .unwrap();
    assert_eq!(r.false_merges, 0, "{r:#?}");
    assert_eq!(r.facts_lost, 1, "{r:#?}");
    assert_eq!(r.others_touched, 1, "{r:#?}");
    assert_eq!(r.updates.beside, 1, "{r:#?}");
}

#[test]
fn the_built_in_judge_never_merges_or_loses_but_keeps_no_history() {
    let d = data();
    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Lexical;
    let r = tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(memd::eval::letta::run(d.path(), c, 1, 5, 1))
        .unwrap();
    assert_eq!(
        (r.false_merges, r.facts_lost, r.llm_calls),
        (0, 0, 0),
        "{r:#?}"
    );
    assert_eq!((r.updates.beside, r.updates.history), (1, 0), "{r:#?}");
}
