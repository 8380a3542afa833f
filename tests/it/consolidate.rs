//! Consolidation against a scripted OpenAI-compatible LLM on 127.0.0.1:
//! what a run makes of facts and entries.

use memd::archive::{self, NewFact};
use memd::config::{Config, EmbedderKind};
use memd::consolidate::{self, Options};
use memd::entries::Document;
use memd::state::State;
use memd::{Layout, journal};
use serde_json::json;

use crate::support::*;

mod updates;

pub fn llm_config(url: &str) -> Config {
    let mut c = Config::default();
    c.llm.base_url = url.to_string();
    c.llm.model = "scripted".into();
    c.llm.max_attempts = 2;
    c.llm.timeout_seconds = 10;
    c.embedder.kind = EmbedderKind::Lexical;
    c.consolidation.min_facts = 1;
    c.consolidation.min_hours = 0.0;
    // The lexical embedder's scores are low for related facts; link by
    // rank alone, as the design describes.
    c.consolidation.min_similarity = 0.0;
    // The scripted judges below speak the ops protocol; the per-fact one
    // (the default) has tests of its own.
    c.consolidation.request = memd::config::Request::Ops;
    c
}

pub fn add(layout: &Layout, day: &str, texts: &[&str]) -> Vec<String> {
    let facts: Vec<NewFact> = texts
        .iter()
        .map(|t| NewFact {
            text: t.to_string(),
            ..Default::default()
        })
        .collect();
    archive::append(layout, day, "10:00:00", &facts)
        .unwrap()
        .into_iter()
        .map(|a| a.id.into())
        .collect()
}

pub const FORCE: Options = Options {
    force: true,
    dry_run: false,
};

pub fn entries(layout: &Layout) -> Vec<memd::entries::Entry> {
    Document::read(&layout.entries_file())
        .unwrap()
        .entries()
        .cloned()
        .collect()
}

pub fn entry_with<'a>(all: &'a [memd::entries::Entry], needle: &str) -> &'a memd::entries::Entry {
    all.iter()
        .find(|e| e.text.contains(needle))
        .unwrap_or_else(|| panic!("no entry contains {needle:?}: {all:#?}"))
}

pub fn sources(e: &memd::entries::Entry) -> Vec<String> {
    let sources = &e.meta.as_ref().unwrap().sources;
    sources.iter().map(|s| s.to_string()).collect()
}

pub fn is_done(layout: &Layout, id: &str) -> bool {
    let state = State::load(&layout.state_file()).unwrap();
    let (facts, _) = archive::read_all(layout).unwrap();
    state.is_done(facts.iter().find(|f| f.id == id).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn three_phrasings_become_one_entry_with_three_sources() {
    let (_t, layout) = memory_dir();
    let ids = add(
        &layout,
        "2026-11-20",
        &[
            "The user's favourite colour is teal",
            "Teal is the colour the user likes best",
            "User said their favourite colour is teal",
        ],
    );
    let server = scripted(|_, body| {
        let p = prompt_of(body);
        if is_promotion(body) {
            return faithful(body);
        }
        let facts: Vec<String> = listed(&p, 'F').into_iter().map(|(a, _)| a).collect();
        Reply::Json(chat(
            json!({"ops": [{"op": "ADD", "text": "Favourite colour is teal.", "from": facts}]})
                .to_string(),
        ))
    })
    .await;
    let report = consolidate::run(
        &crate::support::memory(&layout, &llm_config(&server.url)),
        FORCE,
    )
    .await
    .unwrap();
    assert_eq!(
        report.clusters, 1,
        "the three phrasings are one cluster: {report:#?}"
    );
    assert_eq!(report.llm_calls, 1);
    let all = entries(&layout);
    assert_eq!(all.len(), 1);
    assert_eq!(sources(&all[0]), ids);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_correction_leaves_no_stale_value() {
    let (_t, layout) = memory_dir();
    add(&layout, "2026-11-18", &["The user's manager is called Jon"]);
    let server = scripted(|n, body| {
        let p = prompt_of(body);
        if is_promotion(body) {
            let e = alias_of(&p, 'E', "manager").unwrap();
            return Reply::Json(chat(
                json!({"lines": [{"id": e, "line": "Manager: John"}]}).to_string(),
            ));
        }
        if n == 0 {
            return Reply::Json(add_every_fact(body));
        }
        let e = alias_of(&p, 'E', "manager").unwrap();
        let f = alias_of(&p, 'F', "John").unwrap();
        Reply::Json(chat(
            json!({"ops": [{"op": "REPLACE", "target": e, "from": [f], "text": "The user's manager is called John."}]})
                .to_string(),
        ))
    })
    .await;
    let config = llm_config(&server.url);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    add(
        &layout,
        "2026-11-20",
        &["Correction: the manager's name is John, not Jon"],
    );
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let all = entries(&layout);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].text, "The user's manager is called John.");
    let file = std::fs::read_to_string(layout.entries_file()).unwrap();
    let core = std::fs::read_to_string(layout.memory_md()).unwrap();
    for text in [&file, &core] {
        assert!(
            !text
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w == "Jon"),
            "stale value left: {text}"
        );
    }
    assert!(core.contains("- Manager: John · 20"), "{core}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fact_touching_two_topics_stays_one_entry() {
    let (_t, layout) = memory_dir();
    add(
        &layout,
        "2026-11-18",
        &["Works at Microsoft", "Has a dog named Rex"],
    );
    let server = scripted(|_, body| faithful(body)).await;
    let config = llm_config(&server.url);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let both = add(
        &layout,
        "2026-11-20",
        &["Takes Rex to the Microsoft office on Fridays"],
    );
    let report = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(report.clusters, 1, "{report:#?}");
    let all = entries(&layout);
    assert_eq!(all.len(), 3);
    let carrying: Vec<_> = all
        .iter()
        .filter(|e| sources(e).contains(&both[0]))
        .collect();
    assert_eq!(carrying.len(), 1, "the fact is in exactly one entry");
    assert_eq!(
        carrying[0].text,
        "Takes Rex to the Microsoft office on Fridays"
    );
    // Both topics' entries were shown with it (one cluster), and kept as they were.
    let prompt = prompt_of(
        &server
            .requests
            .lock()
            .unwrap()
            .iter()
            .rev()
            .nth(1)
            .unwrap()
            .clone(),
    );
    assert!(
        alias_of(&prompt, 'E', "Microsoft").is_some() && alias_of(&prompt, 'E', "Rex").is_some(),
        "{prompt}"
    );
    entry_with(&all, "Works at Microsoft");
    entry_with(&all, "Has a dog named Rex");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_always_invalid_cluster_is_held_back_then_added_verbatim() {
    let (_t, layout) = memory_dir();
    let coffee = add(&layout, "2026-11-20", &["Drinks espresso every morning"]);
    let rust = add(
        &layout,
        "2026-11-20",
        &["Is learning the Rust borrow checker"],
    );
    let server = scripted(|_, body| {
        let p = prompt_of(body);
        if is_promotion(body) {
            return faithful(body);
        }
        if p.contains("borrow checker") {
            // Fenced and chatty, and it forgets the fact: invalid every time.
            Reply::Json(chat("Sure! Here you go:\n```json\n{\"ops\": []}\n```"))
        } else {
            Reply::Json(add_every_fact(body))
        }
    })
    .await;
    let mut config = llm_config(&server.url); // max_retries = 2
    config.consolidation.min_similarity = 0.2; // two clusters: unrelated facts
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(r.clusters, 2, "{r:#?}");
    assert_eq!(r.failed_clusters, 1);
    assert!(is_done(&layout, &coffee[0]), "the valid cluster applied");
    assert!(
        !is_done(&layout, &rust[0]),
        "the invalid cluster's fact stays pending"
    );
    assert_eq!(entries(&layout).len(), 1);
    {
        // The retry named what was wrong.
        let reqs = server.requests.lock().unwrap();
        let retry = reqs
            .iter()
            .find(|b| b["messages"].as_array().unwrap().len() == 3)
            .expect("a retry with the error");
        let said = retry["messages"][2]["content"].as_str().unwrap();
        assert!(said.contains("missing: F1"), "{said}");
    }
    // Still invalid on the next run: past max_retries, the fact is added
    // verbatim and marked unreviewed, not lost.
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(r.fallback_facts, 1, "{r:#?}");
    let all = entries(&layout);
    let e = entry_with(&all, "borrow checker");
    assert_eq!(e.text, "Is learning the Rust borrow checker");
    assert!(e.meta.as_ref().unwrap().unreviewed);
    assert!(is_done(&layout, &rust[0]));
    let status = memd(&layout.root, &["status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["entries_unreviewed"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hand_edit_during_the_llm_call_is_kept() {
    let (_t, layout) = memory_dir();
    add(&layout, "2026-11-18", &["Lives in Berlin"]);
    let path = layout.entries_file();
    let server = scripted(move |n, body| {
        let p = prompt_of(body);
        if is_promotion(body) {
            return faithful(body);
        }
        if n == 0 {
            return Reply::Json(add_every_fact(body));
        }
        // While the model "thinks", the user fixes the entry by hand.
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("Lives in Berlin", "Lives in Berlin-Kreuzberg (edited by hand)")).unwrap();
        let e = alias_of(&p, 'E', "Berlin").unwrap();
        let f = alias_of(&p, 'F', "Hamburg").unwrap();
        Reply::Json(chat(
            json!({"ops": [{"op": "REPLACE", "target": e, "from": [f], "text": "Lives in Hamburg; previously Berlin."}]}).to_string(),
        ))
    })
    .await;
    let config = llm_config(&server.url);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    let moved = add(&layout, "2026-11-20", &["Moved from Berlin to Hamburg"]);
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!(r.skipped_hand_edited, 1, "{r:#?}");
    assert_eq!(r.applied.replace, 0);
    let all = entries(&layout);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].text, "Lives in Berlin-Kreuzberg (edited by hand)");
    assert!(
        !is_done(&layout, &moved[0]),
        "the fact stays pending for the next run"
    );
    let journal = journal::read(&layout.journal_file()).unwrap();
    assert!(journal.iter().all(|r| r.op != journal::Op::Replace));
}

/// A memory directory whose `memd.toml` selects the lexical embedder and,
/// if given, the scripted LLM (for the CLI, which reads the file).
pub fn cli_dir(llm_url: Option<&str>) -> (tempfile::TempDir, Layout) {
    let (t, layout) = memory_dir();
    let mut toml = String::from(
        "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\nmin_similarity = 0.0\n",
    );
    if let Some(url) = llm_url {
        toml.push_str(&format!(
            "[llm]\nbase_url = \"{url}\"\nmodel = \"scripted\"\nmax_attempts = 1\ntimeout_seconds = 10\n"
        ));
    }
    std::fs::write(layout.config_file(), toml).unwrap();
    (t, layout)
}

pub fn index_ids(layout: &Layout) -> Vec<(String, String)> {
    let config = Config::load(&layout.root).unwrap();
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let index = memd::index::Index::open(&memd::Memory::new(layout.clone(), config.clone()))
            .await
            .unwrap();
        index.writer.sync().await.unwrap();
        index.reader.ids().await.unwrap()
    })
}

/// A per-fact reply that says every listed fact is NEW.
pub fn all_new(prompt: &str) -> Reply {
    let new: Vec<_> = listed(prompt, 'F')
        .into_iter()
        .map(|(a, _)| json!({"fact": a, "decision": "NEW", "entry": "none"}))
        .collect();
    Reply::Json(chat(json!({ "decisions": new }).to_string()))
}

/// A per-fact judge: every fact NEW, except the one whose text contains
/// `fact`, which it says UPDATEs the entry containing `first`, and, asked
/// again, the entry containing `then`.
pub async fn updating_judge(
    fact: &'static str,
    first: &'static str,
    then: &'static str,
) -> Scripted {
    scripted(move |_, body| {
        if is_promotion(body) {
            return Reply::Json(promote_every_entry(body));
        }
        let prompt = prompt_of(body);
        let Some(f) = alias_of(&prompt, 'F', fact) else {
            return all_new(&prompt);
        };
        let retried = body["messages"].as_array().unwrap().len() > 1;
        let entry = alias_of(&prompt, 'E', if retried { then } else { first }).unwrap();
        let d = json!({"decisions": [{"fact": f, "decision": "UPDATE", "entry": entry}]});
        Reply::Json(chat(d.to_string()))
    })
    .await
}

/// With [`updating_judge`] `(fact, first, then)`: `base` consolidated,
/// then `fact` added; the first UPDATE is refused (one invalid reply), the
/// second applied (one REPLACE). The entries after.
pub async fn refused_update(
    (needle, first, then): (&'static str, &'static str, &'static str),
    base: &[&str],
    fact: &str,
) -> Vec<memd::entries::Entry> {
    let server = updating_judge(needle, first, then).await;
    let (_t, layout) = memory_dir();
    let mut config = llm_config(&server.url);
    config.consolidation.request = memd::config::Request::PerFact;
    add(&layout, "2026-11-18", base);
    consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    add(&layout, "2026-11-19", &[fact]);
    let r = consolidate::run(&crate::support::memory(&layout, &config), FORCE)
        .await
        .unwrap();
    assert_eq!((r.invalid_replies, r.applied.replace), (1, 1), "{r:?}");
    entries(&layout)
}

/// Every archive fact is in exactly one entry's sources, and behind the
/// watermark.
pub fn assert_every_fact_kept_once(layout: &Layout) {
    let (facts, _) = archive::read_all(layout).unwrap();
    let all = entries(layout);
    let state = State::load(&layout.state_file()).unwrap();
    for f in &facts {
        let n = all
            .iter()
            .filter(|e| sources(e).contains(&f.id.to_string()))
            .count();
        assert_eq!(
            n, 1,
            "fact {} ({}) is in {n} entries: {all:#?}",
            f.id, f.text
        );
        assert!(state.is_done(f), "fact {} not behind the watermark", f.id);
    }
}

pub fn temp_files(layout: &Layout) -> Vec<String> {
    let mut out = Vec::new();
    for dir in [layout.root.clone(), layout.consolidated_dir()] {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".tmp") {
                out.push(name);
            }
        }
    }
    out
}

/// An entry as the judge sees it, with no dates or flags.
pub fn entry(id: &str, text: &str) -> memd::consolidate::ops::Snapshot {
    memd::consolidate::ops::Snapshot {
        id: id.parse().unwrap(),
        text: text.into(),
        pinned: false,
        unreviewed: false,
        first_seen: String::new(),
        updated: String::new(),
    }
}
