//! The derived index: embedders, sync by content hash, hybrid search,
//! tombstones, rebuilds. Real LanceDB in temp dirs; HTTP embedders against a
//! scripted server on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use memd::archive::{self, NewFact};
use memd::config::{Config, EmbedderKind};
use memd::embed::{self, Embedder, lexical::Lexical, openai::OpenAi};
use memd::index::{Index, Query};
use memd::tombstones::{self, Tombstone};

use crate::search::rebuilt_from_files;
use crate::support::{Reply, embeddings_reply, example_dir, scripted, stderr};

pub fn openai_config(url: &str, timeout: u64, attempts: u32) -> Config {
    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Openai;
    c.embedder.base_url = url.to_string();
    c.embedder.model = "fake-embed".into();
    c.embedder.timeout_seconds = timeout;
    c.embedder.max_attempts = attempts;
    c.embedder.api_key_env = "MEMD_TEST_NO_SUCH_KEY".into();
    c
}

pub fn lexical() -> Arc<dyn Embedder> {
    Arc::new(Lexical)
}

pub fn fact(text: &str) -> NewFact {
    NewFact {
        text: text.into(),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn openai_embedder_batches_and_retries_a_server_error() {
    let server = scripted(|n, body| {
        if n == 0 {
            Reply::Status(500)
        } else {
            Reply::Json(embeddings_reply(body, 8))
        }
    })
    .await;
    let mut cfg = openai_config(&server.url, 5, 3).embedder;
    cfg.batch_size = 2;
    let e = OpenAi::new(&cfg).unwrap();
    let texts: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v.len(), 3);
    for x in &v {
        assert_eq!(x.len(), 8);
        assert!((embed::cosine(x, x) - 1.0).abs() < 1e-4, "unit length");
    }
    let reqs = server.requests.lock().unwrap().clone();
    // One failed request, then two batches (2 + 1 texts).
    assert_eq!(reqs.len(), 3);
    assert_eq!(reqs[1]["input"].as_array().unwrap().len(), 2);
    assert_eq!(reqs[2]["input"].as_array().unwrap().len(), 1);
    assert_eq!(reqs[1]["model"], "fake-embed");
    assert_eq!(e.dim().await.unwrap(), 8);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_embedding_timeout_is_a_clear_error_and_leaves_the_index_unchanged() {
    let slow = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = slow.clone();
    let server = scripted(move |_, body| {
        if flag.load(std::sync::atomic::Ordering::SeqCst) {
            Reply::Slow(Duration::from_secs(3), embeddings_reply(body, 8))
        } else {
            Reply::Json(embeddings_reply(body, 8))
        }
    })
    .await;
    let (_tmp, layout) = example_dir();
    let config = openai_config(&server.url, 1, 2);
    let index = Index::open(&memd::Memory::new(layout.clone(), config.clone()))
        .await
        .unwrap();
    index.writer.sync().await.unwrap();
    let before = index.reader.ids().await.unwrap();
    assert!(!before.is_empty());

    slow.store(true, std::sync::atomic::Ordering::SeqCst);
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:00",
        &[fact("User adopted a greyhound called Biscuit")],
    )
    .unwrap();
    let err = format!("{:#}", index.writer.sync().await.unwrap_err());
    assert!(
        err.contains("timed out") && err.contains("2 attempts"),
        "{err}"
    );
    assert_eq!(index.reader.ids().await.unwrap(), before);

    // Once the server answers again, the same sync goes through.
    slow.store(false, std::sync::atomic::Ordering::SeqCst);
    let report = index.writer.sync().await.unwrap();
    assert_eq!(report.rows_added, 1);
    assert_eq!(index.reader.ids().await.unwrap().len(), before.len() + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_is_idempotent_and_reindex_clear_gives_the_same_rows() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let first = index.writer.sync().await.unwrap();
    assert!(first.rows_added > 0);
    let again = index.writer.sync().await.unwrap();
    assert_eq!(
        (again.rows_added, again.rows_deleted, again.files_synced),
        (0, 0, 0)
    );

    // Pending facts, entries and core lines are indexed; facts behind the
    // watermark are represented by their entries.
    let ids = index.reader.ids().await.unwrap();
    let kinds = |k: &str| ids.iter().filter(|(_, kind)| kind == k).count();
    assert_eq!(kinds("fact"), 3, "{ids:?}");
    assert_eq!(kinds("entry"), 8, "{ids:?}");
    assert_eq!(kinds("core"), 4, "{ids:?}");
    assert!(!ids.iter().any(|(id, _)| id.starts_with("2026-11-18")));

    // Change files: an append, an edited entry, a removed day file.
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:00",
        &[fact("User adopted a greyhound")],
    )
    .unwrap();
    let text = std::fs::read_to_string(layout.entries_file()).unwrap();
    std::fs::write(
        layout.entries_file(),
        text.replace("flat white.", "flat white, no sugar."),
    )
    .unwrap();
    index.writer.sync().await.unwrap();
    let incremental = index.reader.ids().await.unwrap();
    drop(index);

    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rebuilt.reader.ids().await.unwrap(), incremental);
}

/// A sync after an append looks only at the facts after those its last
/// sync of the day file left, and only while those are still in
/// the table as the files call for: with a row deleted from the table
/// behind memd's back, an earlier fact forgotten, and the table compacted
/// in between, each next append's sync leaves the table holding exactly
/// the files' rows (`memd check`).
#[tokio::test(flavor = "multi_thread")]
async fn a_sync_after_an_append_leaves_the_files_rows_whatever_changed_since_the_last() {
    let (_tmp, layout) = example_dir();
    let dir = layout.root.clone();
    let memory = memd::Memory::new(layout.clone(), Config::default()).with_embedder(lexical());
    let index = Index::open(&memory).await.unwrap();
    let day = "2026-11-21";
    let add = |text: &str| {
        let added = archive::append(&layout, day, "09:00:00", &[fact(text)]).unwrap();
        added[0].id.clone()
    };
    let ids = || async {
        let ids = index.reader.ids().await.unwrap();
        ids.into_iter().map(|(id, _)| id).collect::<Vec<_>>()
    };
    let has = |ids: Vec<String>, id: &memd::ids::FactId| ids.contains(&id.to_string());
    let holds = |what: &str| {
        let (passed, _, v) = crate::trust::check(&dir);
        assert!(passed, "{what}: {v}");
    };
    let greyhound = add("User adopted a greyhound");
    index.writer.sync().await.unwrap();
    let kestrel = add("User saw a kestrel over the field");
    index.writer.sync().await.unwrap();
    holds("an append");
    assert!(has(ids().await, &kestrel));

    let table = crate::support::lance_table(&layout).await;
    table.delete(&format!("id = '{greyhound}'")).await.unwrap();
    add("User bought a blue bicycle");
    index.writer.sync().await.unwrap();
    holds("a row deleted behind memd's back, then an append");
    assert!(has(ids().await, &greyhound), "put back");

    let stone = Tombstone::new(
        &memd::clock::Clock::System,
        None,
        "User saw a kestrel over the field",
        vec![kestrel.clone()],
        "forget",
    );
    tombstones::append(&layout.tombstones_file(), &[stone]).unwrap();
    add("User learnt to juggle three balls");
    index.writer.sync().await.unwrap();
    holds("an earlier fact forgotten, then an append");
    assert!(!has(ids().await, &kestrel), "forgotten");

    let path = layout.archive_file(day);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("  and rides it to the market\n");
    std::fs::write(&path, text).unwrap();
    index.writer.sync().await.unwrap();
    holds("the last fact continued on a new line");

    index.writer.compact().await.unwrap();
    let last = add("User plants tulips every autumn");
    index.writer.sync().await.unwrap();
    holds("a compaction, then an append");
    assert!(has(ids().await, &last));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tombstoned_fact_is_never_returned_even_after_reindex_clear() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let secret = "User's locker code is 4417";
    let a = archive::append(&layout, "2026-11-21", "09:00:00", &[fact(secret)]).unwrap();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    index.writer.sync().await.unwrap();
    let hits = index
        .reader
        .search(&Query::new("locker code", 3))
        .await
        .unwrap();
    assert_eq!(hits[0].id, a[0].id);

    tombstones::append(
        &layout.tombstones_file(),
        &[Tombstone::new(
            &memd::clock::Clock::System,
            None,
            secret,
            vec![a[0].id.clone()],
            "forget",
        )],
    )
    .unwrap();
    // A later restatement must not come back either.
    archive::append(
        &layout,
        "2026-11-22",
        "09:00:00",
        &[fact("user's locker code is 4417.")],
    )
    .unwrap();
    index.writer.sync().await.unwrap();
    let hits = index
        .reader
        .search(&Query::new("locker code 4417", 10))
        .await
        .unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("4417")), "{hits:?}");
    drop(index);
    let index = rebuilt_from_files(&layout, &config, lexical()).await;
    let hits = index
        .reader
        .search(&Query::new("locker code 4417", 10))
        .await
        .unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("4417")), "{hits:?}");
    assert!(
        !index
            .reader
            .ids()
            .await
            .unwrap()
            .iter()
            .any(|(id, _)| id == &a[0].id)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_different_embedder_dimension_rebuilds_the_index() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    index.writer.sync().await.unwrap();
    let ids = index.reader.ids().await.unwrap();
    drop(index);

    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 2);
    let index = Index::open(&memd::Memory::new(layout.clone(), config.clone()))
        .await
        .unwrap();
    // The old 512-d table is gone: the new one starts empty and fills with
    // 8-d vectors, never a mix.
    assert!(index.reader.ids().await.unwrap().is_empty());
    index.writer.sync().await.unwrap();
    assert_eq!(index.reader.ids().await.unwrap(), ids);
    assert!(
        !index
            .reader
            .search(&Query::new("coffee", 3))
            .await
            .unwrap()
            .is_empty()
    );
    let meta = std::fs::read_to_string(layout.index_dir().join("meta.json")).unwrap();
    assert!(meta.contains("\"dim\": 8"), "{meta}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_index_whose_table_was_deleted_by_hand_is_built_anew_and_hides_no_fact() {
    let (_tmp, layout) = example_dir();
    let memory = || memd::Memory::new(layout.clone(), Config::default()).with_embedder(lexical());
    let index = Index::open(&memory()).await.unwrap();
    index.writer.sync().await.unwrap();
    let ids = index.reader.ids().await.unwrap();
    assert!(!ids.is_empty());
    drop(index);

    // The table goes (by hand, or a store that lost it); the index's own
    // files (which embedder, each file's fingerprint) stay and say every
    // row is there.
    std::fs::remove_dir_all(layout.index_dir().join("lance")).unwrap();
    let index = Index::open(&memory()).await.unwrap();
    index.writer.sync().await.unwrap();
    assert_eq!(index.reader.ids().await.unwrap(), ids);
    // Built once: a handle opened next takes the index as it is (it
    // once found the index's files gone with the old table, and built it
    // again under the first handle's feet).
    let next = Index::open(&memory()).await.unwrap();
    assert_eq!(next.reader.ids().await.unwrap(), ids);
    assert_eq!(index.reader.ids().await.unwrap(), ids);
    let report = memd::check::run(&memory().layout).await.unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn search_logs_hits_and_a_hand_edit_becomes_searchable() {
    let (_tmp, layout) = example_dir();
    let dir = layout.root.clone();
    let run = |args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_memd"));
        cmd.arg("--dir")
            .arg(&dir)
            .args(args)
            .env("MEMD_EMBEDDER_KIND", "lexical");
        cmd.output().unwrap()
    };
    let out = run(&["reindex"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = std::fs::read_to_string(layout.entries_file()).unwrap();
    std::fs::write(
        layout.entries_file(),
        format!("{text}\nThe user keeps a sourdough starter called Gerald.\n"),
    )
    .unwrap();
    // Poll with a generous timeout; never a timing assertion.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let found = loop {
        let out = run(&["search", "sourdough starter Gerald", "-k", "3", "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let hits: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if hits[0]["text"]
            .as_str()
            .is_some_and(|t| t.contains("Gerald"))
        {
            break hits;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "hand edit never became searchable"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(found[0]["kind"], "entry");
    assert_eq!(found[0]["source"], "consolidated/memory.md");
    let log = std::fs::read_to_string(layout.recall_log()).unwrap();
    assert!(log.contains("sourdough starter Gerald"));
}

#[tokio::test(flavor = "multi_thread")]
async fn minilm_ranks_by_meaning() {
    let cfg = Config::default().embedder;
    let dir = embed::minilm::model_dir(&cfg);
    let e = embed::onnx::OnnxMiniLm::load(&dir)
        .expect("the test suite fetches the model: ./scripts/fetch-model.sh");
    let texts: Vec<String> = [
        "what coffee does the user like",
        "User loves coffee, especially flat white",
        "User broke the pour-over set",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let v = e.embed(&texts).await.unwrap();
    assert_eq!(v[0].len(), 384);
    let (good, bad) = (embed::cosine(&v[0], &v[1]), embed::cosine(&v[0], &v[2]));
    assert!(good > bad, "flat white {good} should beat pour-over {bad}");
}

#[test]
fn a_missing_model_says_how_to_get_it() {
    let tmp = tempfile::tempdir().unwrap();
    let err = embed::onnx::OnnxMiniLm::load(tmp.path())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("memd setup") && err.contains("lexical"),
        "{err}"
    );
}

/// Tiny data files in the formats of ../shared/evaldata: SICK rows, the
/// Letta JSON lines and MRPC training rows (headers added here; MRPC with
/// its BOM).
#[cfg(feature = "lab")]
fn eval_data(sick: &str, letta: &str, mrpc: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sick_head = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_AB\tentailment_BA\tSemEval_set\n";
    std::fs::write(d.join("sick_dev.tsv"), format!("{sick_head}{sick}")).unwrap();
    std::fs::write(d.join("letta_updates_dev.jsonl"), letta).unwrap();
    let mrpc_head = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n";
    let train = format!("\u{feff}{mrpc_head}{mrpc}");
    std::fs::write(d.join("msr-para-train.tsv"), train).unwrap();
    std::fs::write(d.join("msr-para-val.tsv"), mrpc_head).unwrap();
    tmp
}

#[cfg(feature = "lab")]
#[tokio::test(flavor = "multi_thread")]
async fn eval_neighbours_measures_recall_on_labelled_pairs() {
    let sick = "1\tA man is playing a guitar\tA man is playing the guitar\t5\tA_entails_B\tB_entails_A\tTRAIN\n\
                2\tA dog runs in the park\tA cat sleeps on a sofa\t1\tA_neutral_B\tB_neutral_A\tTRAIN\n";
    let letta = r#"{"set":0,"facts":["Ann works as a nurse in Oslo","Bob plays chess on Sundays"],"new_fact":"Ann now works as a doctor in Oslo","supersedes":[0],"question":"q","answer_after":"doctor","answer_before":"nurse"}"#;
    let mrpc = "1\t1\t2\tStocks rallied sharply in March\tStocks rallied sharply during March\n\
                0\t3\t4\tThe senate passed the bill\tRain is expected tomorrow\n";
    let tmp = eval_data(sick, letta, mrpc);
    let d = tmp.path();

    let reports = memd::eval::neighbours(d, lexical(), &d.join("cache"))
        .await
        .unwrap();
    let by: std::collections::HashMap<_, _> =
        reports.iter().map(|r| (r.source.as_str(), r)).collect();
    let sick = by["sick-mutual-entailment"];
    assert_eq!((sick.pool, sick.queries), (4, 2));
    assert_eq!(sick.recall[0], (1, 1.0));
    let letta = by["letta-new-fact-to-superseded"];
    // The new fact is a query, not part of the pool it searches.
    assert_eq!((letta.pool, letta.queries), (2, 1));
    assert_eq!(letta.recall[0], (1, 1.0));
    let mrpc = by["mrpc-paraphrase"];
    assert_eq!((mrpc.pool, mrpc.queries), (4, 2));
    assert_eq!(mrpc.recall[0], (1, 1.0));
}

/// `memd eval dedup` counts merges per source: the shipped rule merges the
/// pair that says the same thing and not the contradiction, which a
/// one-word swap does merge (so the figures can show a false merge).
#[cfg(feature = "lab")]
#[tokio::test(flavor = "multi_thread")]
async fn eval_dedup_counts_merges_and_false_merges_per_rule() {
    let sick = "1\tA man is playing a guitar\tThe man is playing the guitar\t5\tA_entails_B\tB_entails_A\tTRAIN\n\
                2\tA man is playing a guitar\tA woman is playing a guitar\t3\tA_contradicts_B\tB_contradicts_A\tTRAIN\n";
    let letta = r#"{"set":0,"facts":["Ann works as a nurse in Oslo","Bob plays chess on Sundays"],"new_fact":"Ann works as a doctor in Oslo","supersedes":[0]}"#;
    let tmp = eval_data(sick, letta, "");
    let d = tmp.path();
    let r = memd::eval::dedup::run(d, lexical(), &d.join("cache"))
        .await
        .unwrap();
    let names: Vec<&str> = r.sources.iter().map(|s| s.name.as_str()).collect();
    let at = |name: &str| names.iter().position(|n| *n == name).unwrap();
    let row = |rule: memd::duplicate::Rule| r.rows.iter().find(|row| row.rule == rule).unwrap();
    let shipped = row(memd::duplicate::Rule::SHIPPED);
    assert_eq!(shipped.merged[at("sick-mutual-entailment")], 1);
    assert_eq!(shipped.false_merges, 0);
    let swap = row(memd::duplicate::Rule {
        words: memd::duplicate::Words::OneSwap,
        stem: true,
        min_cosine: 0.0,
    });
    assert_eq!(swap.merged[at("sick-contradiction")], 1);
    // "nurse" → "doctor": an update, not the same fact.
    assert_eq!(swap.merged[at("letta-update-vs-superseded")], 1);
    assert_eq!(swap.false_merges, 2);
}

#[test]
fn add_shows_only_entries_that_may_say_the_same_and_names_a_merge() {
    let (_tmp, layout) = example_dir();
    let run = |env: &[(&str, &str)], args: &[&str]| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_memd"));
        cmd.arg("--dir")
            .arg(&layout.root)
            .args(args)
            .envs(env.iter().copied());
        cmd.output().unwrap()
    };
    let add = |fact: &str| {
        let out = run(&[], &["add", fact, "--json"]);
        assert!(out.status.success(), "{}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["written"], true);
        v["similar"].as_array().unwrap().clone()
    };
    similar_entries_as_in_the_example(add);
    // A broken embedder setup is a warning: the fact is still written.
    let out = run(
        &[
            ("MEMD_EMBEDDER_KIND", "minilm"),
            ("MEMD_MODEL_DIR", "/nonexistent"),
        ],
        &["add", "User bought a bicycle"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("similar entries not shown"),
        "{}",
        stderr(&out)
    );
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    assert!(facts.iter().any(|f| f.text == "User bought a bicycle"));
}

/// A daemon finds the similar entries among the vectors it keeps in
/// memory (a command asks LanceDB, above): the same entries, and only
/// entries, never the fact just written.
#[test]
fn a_daemon_shows_the_similar_entries_a_command_shows() {
    use crate::serving::{Http, start};
    let (_tmp, layout) = example_dir();
    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    // A search first: the daemon's words and vectors are loaded.
    assert_eq!(c.get("/v1/search?q=coffee&k=3").0, 200);
    let add = |fact: &str| {
        let body = serde_json::json!({"text": fact, "similar": true});
        let (code, r) = c.post("/v1/facts", body.to_string());
        assert_eq!(code, 200, "{r}");
        r["facts"][0]["similar"].as_array().unwrap().clone()
    };
    similar_entries_as_in_the_example(add);
}

/// The similar entries `add` shows for three facts added to the example
/// memory: the same thing in other words, shown and named as a merge;
/// close but not the same, shown and not a merge; nothing like it,
/// nothing shown (today's top 3 would be noise). Entries only, never the
/// fact just written.
fn similar_entries_as_in_the_example(add: impl Fn(&str) -> Vec<serde_json::Value>) {
    let same = add("User loves coffee, especially flat whites");
    assert_eq!(same.len(), 1, "{same:?}");
    assert_eq!(same[0]["id"], "e-91c4d2e7", "{same:?}");
    assert_eq!(same[0]["same"], true);
    let close = add("The user's manager John left the company");
    assert_eq!(close[0]["id"], "e-5a3390cf", "{close:?}");
    assert_eq!(close[0]["same"], false);
    let entries = |s: &serde_json::Value| s["id"].as_str().unwrap().starts_with("e-");
    assert!(close.iter().all(entries), "{close:?}");
    assert!(add("Bought a red bicycle").is_empty());
}

#[test]
fn the_watcher_syncs_a_hand_edit_and_reports_health() {
    let (_tmp, layout) = example_dir();
    let status = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_memd"))
            .arg("--dir")
            .arg(&layout.root)
            .args(["status", "--json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(status()["index"]["consolidated/memory.md"], "not indexed");
    // A long reconcile interval: only a file event can explain a sync.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_memd"))
        .arg("--dir")
        .arg(&layout.root)
        .args(["watch", "--reconcile-seconds", "300"])
        .env("MEMD_EMBEDDER_KIND", "lexical")
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let poll = |what: &str, ok: &dyn Fn(&serde_json::Value) -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let s = status();
            if ok(&s) {
                return s;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {s}");
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    poll("initial sync", &|s| {
        s["index"]["consolidated/memory.md"] == "fresh" && s["watcher"]["alive"] == true
    });
    let text = std::fs::read_to_string(layout.entries_file()).unwrap();
    std::fs::write(
        layout.entries_file(),
        format!("{text}\nThe user keeps bees on the roof.\n"),
    )
    .unwrap();
    let s = poll("hand edit synced", &|s| {
        s["index"]["consolidated/memory.md"] == "fresh"
            && s["watcher"]["events"].as_u64().unwrap_or(0) >= 1
    });
    assert!(s["watcher"]["last_error"].is_null(), "{s}");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_quiet_index_compacts_a_few_small_fragments_a_busy_one_waits() {
    let (_tmp, layout) = example_dir();
    let index = Index::open(
        &memd::Memory::new(layout.clone(), Config::default().clone()).with_embedder(lexical()),
    )
    .await
    .unwrap();
    index.writer.sync().await.unwrap();
    // One sync per append: one small fragment each.
    let texts = [
        "User adopted a greyhound",
        "User sold the canoe",
        "User visits Porto",
    ];
    for (i, t) in texts.iter().enumerate() {
        archive::append(&layout, "2026-11-21", &format!("09:00:0{i}"), &[fact(t)]).unwrap();
        index.writer.sync().await.unwrap();
    }
    assert!(
        !index.writer.compact_if_needed().await.unwrap(),
        "rows were just added: a few small fragments wait for a quiet moment"
    );
    tokio::time::sleep(memd::index::COMPACT_IDLE + Duration::from_millis(200)).await;
    assert!(
        index.writer.compact_if_needed().await.unwrap(),
        "quiet: compacts"
    );
    assert!(
        !index.writer.compact_if_needed().await.unwrap(),
        "nothing left to compact"
    );
    let hits = index
        .reader
        .search(&Query::new("greyhound", 3))
        .await
        .unwrap();
    assert!(
        hits.iter().any(|h| h.text.contains("greyhound")),
        "{hits:?}"
    );
}

/// Texts of every length the model sees, out of length order: the
/// embedders sort a batch by length and must put the vectors back.
fn runtime_texts() -> Vec<String> {
    let long = "The user keeps a detailed diary of every hike, with distances, weather, \
                companions and what they ate. "
        .repeat(12);
    [
        "User loves coffee, especially flat white",
        "",
        long.as_str(),
        "Dana",
        "The user's daughter Maya starts school in September and is nervous about it",
        "User is allergic to peanuts",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// all-MiniLM-L6-v2's vectors for [`runtime_texts`], as candle's BERT
/// (an implementation independent of the ONNX graph memd writes) gave them
/// at 1e-6, recorded in `fixtures/minilm-reference.json` before candle was
/// removed from memd.
fn reference_vectors() -> Vec<(String, Vec<f32>)> {
    let rows: Vec<serde_json::Value> =
        serde_json::from_str(include_str!("fixtures/minilm-reference.json")).unwrap();
    rows.iter()
        .map(|r| {
            let v = r["vector"].as_array().unwrap();
            let v = v.iter().map(|x| x.as_f64().unwrap() as f32).collect();
            (r["text"].as_str().unwrap().to_string(), v)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_onnx_runtime_gives_the_reference_vectors_in_the_same_order() {
    let dir = embed::minilm::model_dir(&Config::default().embedder);
    assert!(
        embed::onnx::available(&dir),
        "the test suite installs ONNX Runtime beside the model: ./scripts/fetch-model.sh"
    );
    let onnx = embed::from_config(&Config::default().embedder).unwrap();
    assert_eq!(
        onnx.id(),
        "minilm-l6-v2",
        "the id indexes and caches were made under"
    );
    let texts = runtime_texts();
    let reference = reference_vectors();
    assert_eq!(
        reference.iter().map(|(t, _)| t).collect::<Vec<_>>(),
        texts.iter().collect::<Vec<_>>()
    );
    let a = onnx.embed(&texts).await.unwrap();
    for (i, (t, want)) in reference.iter().enumerate() {
        assert_eq!(a[i].len(), 384);
        let c = embed::cosine(&a[i], want);
        assert!(c >= 0.999, "{t:?}: onnx vs reference cosine {c}");
        // Batched with texts of other lengths or alone: the same vector.
        let alone = onnx.embed(std::slice::from_ref(t)).await.unwrap();
        let c = embed::cosine(&a[i], &alone[0]);
        assert!(c >= 0.9999, "{t:?}: in a batch vs alone cosine {c}");
    }
}

/// A model directory of links to the real model's files, with a folder of
/// its own for ONNX Runtime (where the quick session's graph is saved).
fn linked_model_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let files = [
        "model.onnx",
        "config.json",
        "tokenizer.json",
        "onnxruntime/libonnxruntime.so",
    ];
    crate::support::link_model_files(&dir, &files);
    (tmp, dir)
}

/// The saved graphs in a model directory.
fn saved_graphs(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir.join("onnxruntime"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "ort"))
        .collect()
}

/// A one-shot process embeds a few texts on the quick session (the graph
/// saved once, mapped, its weights unpacked); a large call makes the full
/// session. Both give the same vectors, and a damaged saved graph is
/// neither used nor fatal: the full session answers and the next process
/// saves the graph again.
#[tokio::test(flavor = "multi_thread")]
async fn the_quick_onnx_session_gives_the_full_sessions_vectors() {
    use memd::embed::onnx::OnnxMiniLm;
    let (_tmp, dir) = linked_model_dir();
    let texts = runtime_texts();
    let first = OnnxMiniLm::load(&dir).unwrap();
    let quick = first.embed(&texts).await.unwrap();
    assert!(first.is_quick(), "a few texts run on the quick session");
    assert_eq!(saved_graphs(&dir).len(), 1, "the graph is saved once");

    let many: Vec<String> = (0..100)
        .map(|i| format!("The user fact number {i}"))
        .collect();
    first.embed(&many).await.unwrap();
    assert!(!first.is_quick(), "a large call makes the full session");
    let full = first.embed(&texts).await.unwrap();
    for (i, t) in texts.iter().enumerate() {
        let c = embed::cosine(&quick[i], &full[i]);
        assert!(c >= 0.99999, "{t:?}: quick vs full cosine {c}");
    }

    let saved = saved_graphs(&dir).remove(0);
    let damaged = dir.join("onnxruntime").join("damaged");
    std::fs::write(&damaged, b"not a graph").unwrap();
    std::fs::rename(&damaged, &saved).unwrap();
    let second = OnnxMiniLm::load(&dir).unwrap();
    let again = second.embed(&texts).await.unwrap();
    assert!(!second.is_quick(), "a damaged graph is not used");
    assert!(embed::cosine(&again[0], &full[0]) >= 0.99999);
    let third = OnnxMiniLm::load(&dir).unwrap();
    third.embed(&texts[..1]).await.unwrap();
    assert!(third.is_quick(), "the graph was saved again");
    let graphs = saved_graphs(&dir);
    assert_eq!(graphs.len(), 1, "{graphs:?}");
    assert!(std::fs::metadata(&graphs[0]).unwrap().len() > 1_000_000);
}

/// With the weights but without ONNX Runtime (candle ran them until it
/// was removed), every runtime setting, `candle` from an old configuration
/// included, says what is missing and how to fetch it.
#[test]
fn without_onnx_runtime_the_minilm_embedder_says_what_to_fetch_whatever_the_runtime_setting() {
    use memd::config::Runtime;
    let tmp = tempfile::tempdir().unwrap();
    let files = ["model.safetensors", "config.json", "tokenizer.json"];
    crate::support::link_model_files(tmp.path(), &files);
    let old: memd::config::Embedder = toml::from_str("runtime = \"candle\"").unwrap();
    for runtime in [Runtime::Auto, Runtime::Onnx, old.runtime] {
        let cfg = memd::config::Embedder {
            runtime,
            model_dir: tmp.path().display().to_string(),
            ..Default::default()
        };
        let err = embed::from_config(&cfg)
            .err()
            .expect("no ONNX Runtime")
            .to_string();
        assert!(
            err.contains("model.onnx")
                && err.contains("libonnxruntime.so")
                && err.contains("memd setup"),
            "{err}"
        );
    }
}

/// `memd ARGS DIR` (a bench that prints a JSON line per figure set): its
/// lines, and its whole output.
fn bench_lines(args: &[&str], dir: &std::path::Path) -> (Vec<serde_json::Value>, String) {
    let out = std::process::Command::new(crate::support::memd_bin())
        .args(args)
        .arg(dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (lines, stdout)
}

/// `memd bench days` runs a daemon per day count, all at once, and
/// reports each count's figures with its ratio to the first; every post
/// it times was found by the search after it (the bench fails otherwise),
/// and status, check, a gated consolidation and the similar-entries
/// lookup are timed at each count too (each must have succeeded).
#[test]
fn bench_days_compares_day_counts_in_one_run() {
    let t = tempfile::tempdir().unwrap();
    let args = [
        "bench",
        "days",
        "--days",
        "2,6",
        "--facts",
        "30",
        "--searches",
        "4",
        "--appends",
        "3",
        "--others",
        "2",
        "--embedder",
        "lexical",
        "--in",
    ];
    let (lines, stdout) = bench_lines(&args, t.path());
    let days: Vec<u64> = lines
        .iter()
        .map(|l| l["day_files"].as_u64().unwrap())
        .collect();
    assert_eq!(days, [2, 6], "{stdout}");
    assert_eq!(lines[0]["search_vs_first"], 1.0);
    for l in &lines {
        assert!(
            l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
            "{l}"
        );
        for other in ["status", "check", "consolidate_gated", "similar"] {
            assert!(l["others"][other]["p50_ms"].as_f64().unwrap() > 0.0, "{l}");
        }
    }
    assert_eq!(lines[0]["others"]["check"]["vs_first"], 1.0, "{stdout}");
}

/// `memd bench search-path ARGS` with 5 searches and 2 appends at each
/// size, on the lexical embedder: its lines, and its whole output.
fn search_path_lines(args: &[&str]) -> (Vec<serde_json::Value>, String) {
    let t = tempfile::tempdir().unwrap();
    let load = ["--searches", "5", "--appends", "2", "--embedder", "lexical"];
    let mut all = vec!["bench", "search-path"];
    all.extend(args.iter().chain(&load));
    all.push("--in");
    bench_lines(&all, t.path())
}

/// How many times `steps` (a report's list) ran the step `name`.
fn runs(steps: &serde_json::Value, name: &str) -> Option<u64> {
    let steps = steps.as_array().unwrap();
    let step = steps.iter().find(|s| s["step"] == name);
    step.and_then(|s| s["runs"].as_u64())
}

/// `memd bench search-path --via mcp` sends the same requests to `memd
/// mcp`'s handler in its own process: each search is one MCP call, and,
/// as in `memd mcp` (not the table's sole writer), each search's sync
/// takes the index lock and looks for a newer table version; each
/// remember's sync embeds its row (and holds it back from the table for a
/// later commit of many, as `memd mcp` does).
#[test]
fn bench_search_path_via_mcp_times_the_mcp_servers_steps() {
    let (lines, stdout) = search_path_lines(&["--via", "mcp", "--sizes", "20"]);
    assert_eq!(lines.len(), 1, "{stdout}");
    let l = &lines[0];
    let search = &l["search_steps"];
    for step in [
        "MCP call",
        "sync: lock",
        "sync: latest version",
        "query embedding",
    ] {
        assert_eq!(runs(search, step), Some(5), "{step}: {l}");
    }
    for step in ["HTTP handler", "HTTP hop (client wait less handler)"] {
        assert_eq!(runs(search, step), None, "{step}: {l}");
    }
    assert_eq!(runs(&l["append_steps"], "sync: embedding"), Some(2), "{l}");
    assert!(runs(&l["append_steps"], "MCP call") >= Some(4), "{l}");
    assert!(
        l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
        "{l}"
    );
}

/// `memd bench search-path` serves a memory from its own process and
/// breaks each search, and each append → searchable, into the steps the
/// daemon ran, at each size: every search ran each step of the search
/// path once, and the appends' syncs embedded and added rows; the median
/// append → searchable is shown as a timeline.
#[test]
fn bench_search_path_times_each_step_of_a_search_at_each_size() {
    let (lines, stdout) = search_path_lines(&["--sizes", "20,50"]);
    let sizes: Vec<u64> = lines.iter().map(|l| l["facts"].as_u64().unwrap()).collect();
    assert_eq!(sizes, [20, 50], "{stdout}");
    for l in &lines {
        let search = &l["search_steps"];
        for step in [
            "HTTP handler",
            "sync",
            "query embedding",
            "vector search",
            "full text (BM25)",
            "fusion",
            "collapse and finish",
            "recall log",
            "reply serialised",
            "HTTP hop (client wait less handler)",
        ] {
            assert_eq!(runs(search, step), Some(5), "{step}: {l}");
        }
        assert_eq!(runs(&l["append_steps"], "sync: embedding"), Some(2), "{l}");
        assert!(
            l["append_to_searchable_p50_ms"].as_f64().unwrap() > 0.0,
            "{l}"
        );
        // The median append → searchable, as a timeline: the post's
        // handler and its append, the sync's table add and the search's
        // vector search, each in time order, ending when the client has
        // the reply that found the fact.
        let timeline = l["append_timeline"].as_array().unwrap();
        let at = |m: &serde_json::Value, k: &str| m[k].as_f64().unwrap();
        let (last, moments) = timeline.split_last().unwrap();
        assert_eq!(last["step"], "found (the client has the reply)", "{l}");
        let found = at(last, "from_ms");
        for step in ["HTTP handler", "append", "sync: table add", "vector search"] {
            assert!(moments.iter().any(|m| m["step"] == step), "{step}: {l}");
        }
        for (a, b) in moments.iter().zip(&moments[1..]) {
            assert!(at(a, "from_ms") <= at(b, "from_ms"), "{l}");
        }
        for m in moments {
            assert!(at(m, "from_ms") <= at(m, "to_ms"), "{l}");
            assert!(at(m, "from_ms") <= found, "{l}");
        }
    }
}

/// How many texts the scripted embedding server was asked to embed.
fn texts_embedded(server: &crate::support::Scripted) -> usize {
    let requests = server.requests.lock().unwrap();
    requests
        .iter()
        .map(|r| r["input"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Append `n` records of other texts (8 dimensions) to the cache file in
/// `dir`, in its format, so that it is large.
fn pad_cache_file(dir: &std::path::Path, n: usize) {
    use std::io::Write;
    let file = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".bin"))
        .unwrap();
    let mut buf = Vec::with_capacity(n * 52);
    for i in 0..n as u64 {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&i.to_le_bytes());
        key[8] = 0xAB;
        buf.extend_from_slice(&key);
        buf.extend_from_slice(&8u32.to_le_bytes());
        for x in 0..8 {
            buf.extend_from_slice(&(x as f32).to_le_bytes());
        }
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(&buf).unwrap();
}

fn texts(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix} {i}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_embedding_cache_is_read_only_by_a_call_with_many_texts_to_embed() {
    use memd::embed::cache::Cached;
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let inner = || -> Arc<dyn Embedder> { Arc::new(OpenAi::new(&config).unwrap()) };
    let tmp = tempfile::tempdir().unwrap();
    let known = texts("a text embedded before", 10);
    let first = Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&known)
        .await
        .unwrap();
    assert_eq!(texts_embedded(&server), 10);

    // A small file is read at the first call: nothing embedded again.
    let again = Cached::open(inner(), tmp.path()).unwrap();
    assert_eq!(again.embed(&known[..1]).await.unwrap()[0], first[0]);
    assert_eq!(texts_embedded(&server), 10);

    // A large one (a search's query, in a one-shot process): the query is
    // embedded instead of reading it, with the same vector.
    pad_cache_file(tmp.path(), 90_000);
    let one_shot = Cached::open(inner(), tmp.path()).unwrap();
    assert_eq!(one_shot.embed(&known[..1]).await.unwrap()[0], first[0]);
    assert_eq!(texts_embedded(&server), 11);
    // ... and kept in memory for the rest of the process.
    one_shot.embed(&known[..1]).await.unwrap();
    assert_eq!(texts_embedded(&server), 11);

    // A call with many texts to embed reads the file: only the new ones
    // are embedded.
    let mut many = known.clone();
    many.extend(texts("a new text", 60));
    let rebuilt = Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&many)
        .await
        .unwrap();
    assert_eq!(texts_embedded(&server), 11 + 60);
    assert_eq!(rebuilt[..10], first[..]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_erasure_in_a_process_that_never_read_the_embedding_cache_keeps_the_other_texts_embeddings()
 {
    use memd::embed::cache::Cached;
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let inner = || -> Arc<dyn Embedder> { Arc::new(OpenAi::new(&config).unwrap()) };
    let tmp = tempfile::tempdir().unwrap();
    let kept = texts("a text kept", 3);
    let mut all = kept.clone();
    all.push("the erased text".into());
    Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&all)
        .await
        .unwrap();
    pad_cache_file(tmp.path(), 90_000);
    assert_eq!(texts_embedded(&server), 4);

    Cached::open(inner(), tmp.path())
        .unwrap()
        .retain(&kept)
        .await
        .unwrap();
    // The file now holds the kept texts alone (small: read at once).
    let after = Cached::open(inner(), tmp.path()).unwrap();
    after.embed(&kept).await.unwrap();
    assert_eq!(
        texts_embedded(&server),
        4,
        "the kept texts' embeddings stay"
    );
    after.embed(&all[3..]).await.unwrap();
    assert_eq!(texts_embedded(&server), 5, "the erased text's is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_asked_for_while_it_is_being_embedded_is_embedded_once() {
    use memd::embed::cache::Cached;
    // Slow enough that the second call starts while the first waits.
    let server =
        scripted(|_, body| Reply::Slow(Duration::from_millis(300), embeddings_reply(body, 8)))
            .await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let tmp = tempfile::tempdir().unwrap();
    let cache =
        Arc::new(Cached::open(Arc::new(OpenAi::new(&config).unwrap()), tmp.path()).unwrap());
    let fact = vec!["The user moved to Lisbon".to_string()];
    let (a, b) = (cache.clone(), cache.clone());
    let (f1, f2) = (fact.clone(), fact.clone());
    let first = tokio::spawn(async move { a.embed(&f1).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { b.embed(&f2).await.unwrap() });
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(first, second);
    assert_eq!(texts_embedded(&server), 1);

    // A call that failed lets the ones waiting for it embed the text.
    let failing = scripted(|n, body| match n {
        0 => Reply::Slow(
            Duration::from_millis(300),
            serde_json::json!({"no": "data"}),
        ),
        _ => Reply::Json(embeddings_reply(body, 8)),
    })
    .await;
    let config = openai_config(&failing.url, 5, 1).embedder;
    let tmp = tempfile::tempdir().unwrap();
    let cache =
        Arc::new(Cached::open(Arc::new(OpenAi::new(&config).unwrap()), tmp.path()).unwrap());
    let (a, b) = (cache.clone(), cache.clone());
    let (f1, f2) = (fact.clone(), fact.clone());
    let first = tokio::spawn(async move { a.embed(&f1).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { b.embed(&f2).await });
    assert!(first.await.unwrap().is_err());
    assert_eq!(second.await.unwrap().unwrap().len(), 1);
    assert_eq!(texts_embedded(&failing), 2);
}

/// memd runs offline (README): ONNX Runtime's own telemetry, on in
/// Microsoft's builds of the library, wrote a device id and an event queue
/// under `~/.cache/Microsoft/DeveloperTools/.onnxruntime` and looked up
/// `mobile.events.data.microsoft.com` to send them. It stays off in every
/// memd process. (Outside `CI`, where the library turns it off itself.)
#[test]
fn memd_with_onnx_runtime_writes_no_telemetry_and_no_device_id() {
    let (_mem, layout) = crate::support::memory_dir();
    let (_model, model_dir) = linked_model_dir();
    let config = format!(
        "[embedder]\nkind = \"minilm\"\nruntime = \"onnx\"\nmodel_dir = {:?}\n",
        model_dir.display().to_string()
    );
    std::fs::write(layout.root.join("memd.toml"), config).unwrap();
    let home = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(crate::support::memd_bin())
            .arg("--dir")
            .arg(&layout.root)
            .args(args)
            .env_remove("CI")
            .env_remove("ORT_DISABLE_TELEMETRY")
            .env_remove("MEMD_DIR")
            .env("HOME", home.path())
            .env("XDG_CACHE_HOME", home.path().join(".cache"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    run(&["add", "The user drinks oolong tea every afternoon"]);
    let found = run(&[
        "search",
        "which tea does the user drink",
        "--min-score",
        "0",
    ]);
    assert!(found.contains("oolong"), "{found}");
    let telemetry = home.path().join(".cache/Microsoft");
    assert!(
        !telemetry.exists(),
        "ONNX Runtime wrote {}",
        telemetry.display()
    );
}
