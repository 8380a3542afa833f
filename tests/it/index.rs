//! The derived index: embedders, sync by content hash, hybrid search,
//! tombstones, rebuilds. Real LanceDB in temp dirs; HTTP embedders against a
//! scripted server on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use memd::archive::{self, NewFact};
use memd::config::{Config, EmbedderKind};
use memd::embed::{self, Embedder, lexical::Lexical, openai::OpenAi};
use memd::index::Index;
use memd::tombstones::{self, Tombstone};

use crate::support::{Reply, embeddings_reply, example_dir, scripted, stderr};

fn openai_config(url: &str, timeout: u64, attempts: u32) -> Config {
    let mut c = Config::default();
    c.embedder.kind = EmbedderKind::Openai;
    c.embedder.base_url = url.to_string();
    c.embedder.model = "fake-embed".into();
    c.embedder.timeout_seconds = timeout;
    c.embedder.max_attempts = attempts;
    c.embedder.api_key_env = "MEMD_TEST_NO_SUCH_KEY".into();
    c
}

fn lexical() -> Arc<dyn Embedder> {
    Arc::new(Lexical)
}

fn fact(text: &str) -> NewFact {
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
    let index = Index::open(&layout, &config).await.unwrap();
    index.sync().await.unwrap();
    let before = index.ids().await.unwrap();
    assert!(!before.is_empty());

    slow.store(true, std::sync::atomic::Ordering::SeqCst);
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:00",
        &[fact("User adopted a greyhound called Biscuit")],
    )
    .unwrap();
    let err = format!("{:#}", index.sync().await.unwrap_err());
    assert!(
        err.contains("timed out") && err.contains("2 attempts"),
        "{err}"
    );
    assert_eq!(index.ids().await.unwrap(), before);

    // Once the server answers again, the same sync goes through.
    slow.store(false, std::sync::atomic::Ordering::SeqCst);
    let report = index.sync().await.unwrap();
    assert_eq!(report.rows_added, 1);
    assert_eq!(index.ids().await.unwrap().len(), before.len() + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sync_is_idempotent_and_reindex_clear_gives_the_same_rows() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let first = index.sync().await.unwrap();
    assert!(first.rows_added > 0);
    let again = index.sync().await.unwrap();
    assert_eq!(
        (again.rows_added, again.rows_deleted, again.files_synced),
        (0, 0, 0)
    );

    // Pending facts, entries and core lines are indexed; facts behind the
    // watermark are represented by their entries.
    let ids = index.ids().await.unwrap();
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
    index.sync().await.unwrap();
    let incremental = index.ids().await.unwrap();
    drop(index);

    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rebuilt.ids().await.unwrap(), incremental);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tombstoned_fact_is_never_returned_even_after_reindex_clear() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let secret = "User's locker code is 4417";
    let a = archive::append(&layout, "2026-11-21", "09:00:00", &[fact(secret)]).unwrap();
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    index.sync().await.unwrap();
    let hits = index.search_unlogged("locker code", 3).await.unwrap();
    assert_eq!(hits[0].id, a[0].id);

    tombstones::append(
        &layout.tombstones_file(),
        &[Tombstone::new(
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
    index.sync().await.unwrap();
    let hits = index.search_unlogged("locker code 4417", 10).await.unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("4417")), "{hits:?}");
    drop(index);
    let index = rebuilt_from_files(&layout, &config, lexical()).await;
    let hits = index.search_unlogged("locker code 4417", 10).await.unwrap();
    assert!(hits.iter().all(|h| !h.text.contains("4417")), "{hits:?}");
    assert!(
        !index
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
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    index.sync().await.unwrap();
    let ids = index.ids().await.unwrap();
    drop(index);

    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 2);
    let index = Index::open(&layout, &config).await.unwrap();
    // The old 512-d table is gone: the new one starts empty and fills with
    // 8-d vectors, never a mix.
    assert!(index.ids().await.unwrap().is_empty());
    index.sync().await.unwrap();
    assert_eq!(index.ids().await.unwrap(), ids);
    assert!(!index.search_unlogged("coffee", 3).await.unwrap().is_empty());
    let meta = std::fs::read_to_string(layout.index_dir().join("meta.json")).unwrap();
    assert!(meta.contains("\"dim\": 8"), "{meta}");
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
    let e = embed::minilm::MiniLm::load(&dir)
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
    let err = embed::minilm::MiniLm::load(tmp.path())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("fetch-model.sh") && err.contains("lexical"),
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
    let row = |rule: memd::same::Rule| r.rows.iter().find(|row| row.rule == rule).unwrap();
    let shipped = row(memd::same::Rule::SHIPPED);
    assert_eq!(shipped.merged[at("sick-mutual-entailment")], 1);
    assert_eq!(shipped.false_merges, 0);
    let swap = row(memd::same::Rule {
        words: memd::same::Words::OneSwap,
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
    // The same thing in other words: shown, and named as a merge.
    let same = add("User loves coffee, especially flat whites");
    assert_eq!(same.len(), 1, "{same:?}");
    assert_eq!(same[0]["id"], "e-91c4d2e7", "{same:?}");
    assert_eq!(same[0]["same"], true);
    // Close, but not the same: shown, not a merge.
    let close = add("The user's manager John left the company");
    assert_eq!(close[0]["id"], "e-5a3390cf", "{close:?}");
    assert_eq!(close[0]["same"], false);
    // Nothing like it: nothing shown (today's top 3 would be noise).
    assert!(add("Bought a red bicycle").is_empty());
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
    let index = Index::open_with(&layout, &Config::default(), lexical())
        .await
        .unwrap();
    index.sync().await.unwrap();
    // One sync per append: one small fragment each.
    let texts = [
        "User adopted a greyhound",
        "User sold the canoe",
        "User visits Porto",
    ];
    for (i, t) in texts.iter().enumerate() {
        archive::append(&layout, "2026-11-21", &format!("09:00:0{i}"), &[fact(t)]).unwrap();
        index.sync().await.unwrap();
    }
    assert!(
        !index.compact_if_needed().await.unwrap(),
        "rows were just added: a few small fragments wait for a quiet moment"
    );
    tokio::time::sleep(memd::index::COMPACT_IDLE + Duration::from_millis(200)).await;
    assert!(index.compact_if_needed().await.unwrap(), "quiet: compacts");
    assert!(
        !index.compact_if_needed().await.unwrap(),
        "nothing left to compact"
    );
    let hits = index.search_unlogged("greyhound", 3).await.unwrap();
    assert!(
        hits.iter().any(|h| h.text.contains("greyhound")),
        "{hits:?}"
    );
}

/// `reindex --clear`: the index deleted, then built from the files.
async fn rebuilt_from_files(
    layout: &memd::Layout,
    config: &Config,
    embedder: Arc<dyn Embedder>,
) -> Index {
    Index::clear(layout).await.unwrap();
    let index = Index::open_with(layout, config, embedder).await.unwrap();
    index.sync().await.unwrap();
    index
}

/// Delete by hand the lines of `path` that contain `needle`.
fn remove_lines_containing(path: &std::path::Path, needle: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(path, kept).unwrap();
}

/// Facts of one person, with words the queries share in different measure.
const BUILD_PATH_FACTS: [&str; 16] = [
    "User loves coffee, especially flat white",
    "User broke the pour-over set last week",
    "User's manager is Dana Whitfield",
    "User drinks green tea in the afternoon",
    "User is allergic to peanuts",
    "User runs 10 km every Saturday morning",
    "User's sister lives in Lisbon",
    "User prefers window seats on flights",
    "User bought a new espresso grinder",
    "User's cat Miso likes warm milk",
    "User works on the payments team",
    "User is learning Portuguese for a trip to Lisbon",
    "User stopped drinking coffee after 4 pm",
    "User's favourite coffee shop is Kaffeine",
    "User's birthday is on 3 March",
    "User cycles to work when it is dry",
];

const BUILD_PATH_QUERIES: [&str; 6] = [
    "what coffee does the user like",
    "where does the user's sister live",
    "user allergies",
    "coffee",
    "what does the user do on weekends",
    "Lisbon trip",
];

/// Ids in rank order, with scores rounded to what a tie-break can see.
async fn rankings(index: &Index) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for q in BUILD_PATH_QUERIES {
        let hits = index.search_unlogged(q, 8).await.unwrap();
        out.push(
            hits.into_iter()
                .map(|h| (h.text, format!("{:.6}", h.score)))
                .collect(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn search_results_are_the_same_however_the_index_was_built() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index = Index::open(&layout, &config).await.unwrap();
    index.sync().await.unwrap();
    // (a) One sync per fact, as single `memd add`s do, compacting now and
    // then, and one fact removed by hand on the way.
    for (i, t) in BUILD_PATH_FACTS.iter().enumerate() {
        let time = format!("09:{:02}:00", i);
        archive::append(&layout, "2026-11-21", &time, &[fact(t)]).unwrap();
        index.sync().await.unwrap();
        if i % 5 == 4 {
            index.compact().await.unwrap();
        }
        if i == 9 {
            let day = layout.archive_file("2026-11-21");
            remove_lines_containing(&day, "espresso");
            index.sync().await.unwrap();
        }
    }
    let incremental = rankings(&index).await;
    drop(index);

    // (b) The same files, indexed at once.
    let rebuilt = rebuilt_from_files(
        &layout,
        &config,
        embed::from_config(&config.embedder).unwrap(),
    )
    .await;
    let whole = rankings(&rebuilt).await;
    for (q, (a, b)) in BUILD_PATH_QUERIES
        .iter()
        .zip(incremental.iter().zip(&whole))
    {
        assert_eq!(
            a, b,
            "query {q:?}: incremental (left) vs reindex --clear (right)"
        );
    }
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

#[tokio::test(flavor = "multi_thread")]
async fn the_onnx_runtime_gives_candles_vectors_in_the_same_order() {
    use memd::config::Runtime;
    let dir = embed::minilm::model_dir(&Config::default().embedder);
    assert_eq!(
        embed::resolve_runtime(Runtime::Auto, &dir),
        Runtime::Onnx,
        "the test suite installs ONNX Runtime beside the model: ./scripts/fetch-model.sh"
    );
    let onnx = embed::minilm_on(Runtime::Onnx, &dir).unwrap();
    let candle = embed::minilm_on(Runtime::Candle, &dir).unwrap();
    assert_eq!(onnx.id(), candle.id(), "one model, one index and cache");
    let texts = runtime_texts();
    let (a, b) = (
        onnx.embed(&texts).await.unwrap(),
        candle.embed(&texts).await.unwrap(),
    );
    for (i, t) in texts.iter().enumerate() {
        assert_eq!(a[i].len(), 384);
        let c = embed::cosine(&a[i], &b[i]);
        assert!(c >= 0.999, "{t:?}: onnx vs candle cosine {c}");
        // Batched with texts of other lengths or alone: the same vector.
        let alone = onnx.embed(std::slice::from_ref(t)).await.unwrap();
        let c = embed::cosine(&a[i], &alone[0]);
        assert!(c >= 0.9999, "{t:?}: in a batch vs alone cosine {c}");
    }
}

#[test]
fn the_auto_runtime_uses_candle_when_onnx_runtime_is_not_installed() {
    use memd::config::Runtime;
    let real = embed::minilm::model_dir(&Config::default().embedder);
    let tmp = tempfile::tempdir().unwrap();
    for f in ["model.safetensors", "config.json", "tokenizer.json"] {
        std::os::unix::fs::symlink(real.join(f), tmp.path().join(f)).unwrap();
    }
    assert_eq!(
        embed::resolve_runtime(Runtime::Auto, tmp.path()),
        Runtime::Candle
    );
    assert!(embed::minilm_on(Runtime::Auto, tmp.path()).is_ok());
    let err = embed::minilm_on(Runtime::Onnx, tmp.path())
        .err()
        .expect("asked for onnx without it")
        .to_string();
    assert!(
        err.contains("model.onnx") && err.contains("fetch-model.sh") && err.contains("candle"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_results_stay_the_same_over_two_thousand_rows_grown_one_fact_at_a_time() {
    // Full-text scores kept in step by single-fact syncs (past 2,000 rows,
    // where LanceDB's own index once took over from a flat scan), with a
    // deletion on the way, compared with a rebuild from the files.
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let bulk: Vec<NewFact> = (0..1_990)
        .map(|i| fact(&format!("User logged errand number {i} about the garden")))
        .collect();
    archive::append(&layout, "2026-11-21", "08:00:00", &bulk).unwrap();
    index.sync().await.unwrap();
    for (i, t) in BUILD_PATH_FACTS.iter().enumerate() {
        let time = format!("09:{:02}:00", i);
        archive::append(&layout, "2026-11-22", &time, &[fact(t)]).unwrap();
        index.sync().await.unwrap();
        index.search_unlogged("coffee", 3).await.unwrap();
    }
    let day = layout.archive_file("2026-11-22");
    remove_lines_containing(&day, "espresso");
    index.sync().await.unwrap();
    let incremental = rankings(&index).await;
    drop(index);

    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rankings(&rebuilt).await, incremental);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_that_remembers_its_rows_still_sees_another_writers_changes() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let a = Index::open_with(&layout, &config, lexical()).await.unwrap();
    a.sync().await.unwrap();
    for (i, t) in ["User sold the canoe", "User visits Porto"]
        .iter()
        .enumerate()
    {
        archive::append(&layout, "2026-11-21", &format!("09:00:0{i}"), &[fact(t)]).unwrap();
        a.sync().await.unwrap();
    }
    // Another handle (another process, for the table) changes the same
    // day file: a fact added and one removed by hand.
    let b = Index::open_with(&layout, &config, lexical()).await.unwrap();
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:05",
        &[fact("User adopted a greyhound")],
    )
    .unwrap();
    let day = layout.archive_file("2026-11-21");
    remove_lines_containing(&day, "canoe");
    b.sync().await.unwrap();
    b.compact().await.unwrap();
    // Back to the first handle, which remembered the rows it wrote.
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:09",
        &[fact("User bought a kayak")],
    )
    .unwrap();
    a.sync().await.unwrap();
    let ids = a.ids().await.unwrap();
    drop((a, b));
    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rebuilt.ids().await.unwrap(), ids);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_single_fact_syncs_merges_its_small_fragments_as_it_goes() {
    let (_tmp, layout) = example_dir();
    let index = Index::open_with(&layout, &Config::default(), lexical())
        .await
        .unwrap();
    index.sync().await.unwrap();
    let before = index.ids().await.unwrap().len();
    // One sync per append, as a daemon whose client searches after every
    // post: one small fragment each, which every search visits.
    for i in 0..3 * memd::index::TAIL_FRAGMENTS {
        let text = format!("User tried tea number {i} this week");
        let time = format!("10:{:02}:00", i);
        archive::append(&layout, "2026-11-21", &time, &[fact(&text)]).unwrap();
        index.sync().await.unwrap();
        let fragments = index.fragments().await.unwrap();
        assert!(
            fragments <= memd::index::TAIL_FRAGMENTS,
            "after {} single-fact syncs: {fragments} fragments",
            i + 1
        );
    }
    assert_eq!(
        index.ids().await.unwrap().len(),
        before + 3 * memd::index::TAIL_FRAGMENTS,
        "merging fragments keeps every row, once"
    );
    let hits = index.search_unlogged("tea number 5", 3).await.unwrap();
    assert!(
        hits.iter().any(|h| h.text.contains("number 5 ")),
        "{hits:?}"
    );
}

/// BM25 as LanceDB defines it (k1 1.2, b 0.75), computed from scratch over
/// `texts` with LanceDB's own tokenizer: every matching text's score, by
/// text.
fn bm25_by_hand(texts: &[String], query: &str) -> std::collections::HashMap<String, f32> {
    use lance_tokenizer::TokenStream;
    let mut tokenizer = lancedb::index::scalar::FtsIndexBuilder::default()
        .build()
        .unwrap();
    let mut words = |t: &str, search: bool| -> Vec<String> {
        let mut s = match search {
            true => tokenizer.token_stream_for_search(t),
            false => tokenizer.token_stream_for_doc(t),
        };
        let mut out = Vec::new();
        while s.advance() {
            out.push(s.token().text.clone());
        }
        out
    };
    let docs: Vec<Vec<String>> = texts.iter().map(|t| words(t, false)).collect();
    let query = words(query, true);
    let counted = docs.iter().filter(|d| !d.is_empty()).count() as f64;
    let mean = docs.iter().map(Vec::len).sum::<usize>() as f64 / counted;
    let mut out = std::collections::HashMap::new();
    for (text, doc) in texts.iter().zip(&docs) {
        let mut score = 0.0f64;
        for w in query.iter().collect::<std::collections::BTreeSet<_>>() {
            let df = docs.iter().filter(|d| d.contains(w)).count() as f64;
            let tf = doc.iter().filter(|x| *x == w).count() as f64;
            if tf > 0.0 {
                let idf = ((counted - df + 0.5) / (df + 0.5) + 1.0).ln();
                let norm = 1.2 * (1.0 - 0.75 + 0.75 * doc.len() as f64 / mean);
                score += idf * 2.2 * tf / (tf + norm);
            }
        }
        if score > 0.0 {
            out.insert(text.clone(), score as f32);
        }
    }
    out
}

/// Facts sharing `user` and a few other words in different measure, some
/// with a word twice, of different lengths.
fn word_facts() -> Vec<String> {
    let things = ["coffee", "tea", "garden", "piano", "bicycle", "Lisbon"];
    (0..48)
        .map(|i| {
            let (a, b) = (things[i % 6], things[(i / 6) % 6]);
            let tail = " and again ".repeat(i % 3) + &a.repeat((i % 4 == 0) as usize);
            format!("User {i} talked about {a} with {b} {tail}")
                .trim_end()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn full_text_scores_are_bm25_over_the_live_rows_through_adds_deletes_and_compactions() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let facts = word_facts();
    let day = |i: usize| format!("2026-11-{:02}", 10 + i % 3);
    for (i, t) in facts.iter().enumerate() {
        let time = format!("09:{:02}:{:02}", i / 60, i % 60);
        archive::append(&layout, &day(i), &time, &[fact(t)]).unwrap();
        if i % 5 == 0 {
            index.sync().await.unwrap();
            index.full_text_hits("coffee", 3).await.unwrap();
        }
        if i == 30 {
            index.compact().await.unwrap();
        }
    }
    index.sync().await.unwrap();
    // Rows deleted by hand (a word's rows thinned out), then more added.
    let gone = [7, 13, 24, 30];
    for n in gone {
        remove_lines_containing(&layout.archive_file(&day(n)), &format!("User {n} "));
    }
    index.sync().await.unwrap();
    let extra = "User rode the bicycle to the garden twice";
    archive::append(&layout, "2026-11-13", "10:00:00", &[fact(extra)]).unwrap();
    index.sync().await.unwrap();
    let live: Vec<String> = facts
        .iter()
        .filter(|t| !gone.iter().any(|n| t.starts_with(&format!("User {n} "))))
        .cloned()
        .chain([extra.to_string()])
        .collect();
    for q in [
        "coffee",
        "tea with the piano",
        "what did the user say about Lisbon and bicycles",
    ] {
        let want = bm25_by_hand(&live, q);
        let hits = index.full_text_hits(q, 1_000).await.unwrap();
        let got: std::collections::HashMap<String, f32> =
            hits.iter().map(|h| (h.text.clone(), h.score)).collect();
        assert_eq!(got.len(), want.len(), "query {q:?}: rows matched");
        for (text, score) in &want {
            let g = got
                .get(text)
                .unwrap_or_else(|| panic!("{q:?}: {text:?} missing"));
            assert!((g - score).abs() < 1e-4, "{q:?}: {text:?} {g} vs {score}");
        }
        // Best first, equal scores by id.
        for pair in hits.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                a.score > b.score || (a.score == b.score && a.id < b.id),
                "{q:?}"
            );
        }
        // The first few alone (words in every row skipped where they
        // cannot change the result): the same rows with the same scores.
        // Rows tied with the first one left out are left out too.
        let few = index.full_text_hits(q, 3).await.unwrap();
        let out = hits.get(3).map_or(f32::MIN, |h| h.score);
        let head: Vec<(String, f32)> = hits
            .iter()
            .take(3)
            .filter(|h| h.score > out)
            .map(|h| (h.id.clone(), h.score))
            .collect();
        let few: Vec<(String, f32)> = few.into_iter().map(|h| (h.id, h.score)).collect();
        assert_eq!(few, head, "{q:?}");
    }
    // A handle opened afresh loads the same words from the table.
    let fresh = Index::open_with(&layout, &config, lexical()).await.unwrap();
    for q in ["coffee", "tea with the piano"] {
        let a = index.full_text_hits(q, 1_000).await.unwrap();
        let b = fresh.full_text_hits(q, 1_000).await.unwrap();
        let key = |h: &memd::index::search::Hit| (h.id.clone(), h.score);
        assert_eq!(
            a.iter().map(key).collect::<Vec<_>>(),
            b.iter().map(key).collect::<Vec<_>>()
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_finds_by_their_words_the_rows_another_process_wrote() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let a = Index::open_with(&layout, &config, lexical()).await.unwrap();
    archive::append(
        &layout,
        "2026-11-20",
        "09:00:00",
        &[fact("User sold the canoe")],
    )
    .unwrap();
    a.sync().await.unwrap();
    assert_eq!(a.full_text_hits("theremin", 5).await.unwrap().len(), 0);
    // Another handle (another process, for the table) adds a row.
    let b = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let t = "User plays the theremin";
    archive::append(&layout, "2026-11-20", "09:00:01", &[fact(t)]).unwrap();
    b.sync().await.unwrap();
    // The first handle's next sync finds the files as the table has them,
    // and moves to the table's latest version.
    a.sync().await.unwrap();
    let hits = a.full_text_hits("theremin", 5).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
        [t]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_tied_at_the_cut_of_the_full_text_list_are_all_left_out() {
    // 50 rows share the query's common words with the same length; one
    // also has its rare word. Lifting 19 of the 49 (by id) beside it would
    // give each as much from the fusion as the one real match.
    let (_tmp, layout) = crate::support::memory_dir();
    let index = Index::open_with(&layout, &Config::default(), lexical())
        .await
        .unwrap();
    let facts: Vec<NewFact> = (0..50)
        .map(|i| fact(&format!("User noted item {i}")))
        .collect();
    archive::append(&layout, "2026-11-20", "09:00:00", &facts).unwrap();
    index.sync().await.unwrap();
    let hits = index.full_text_hits("noted item 7", 20).await.unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts, ["User noted item 7"]);
    // With room for every row, all are there, the tied ones sharing a
    // score.
    let all = index.full_text_hits("noted item 7", 50).await.unwrap();
    assert_eq!(all.len(), 50);
    assert!(all[1..].iter().all(|h| h.score == all[1].score));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_memds_full_text_index_is_dropped_by_the_next_sync_and_words_still_match() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let canoe = fact("User sold the canoe");
    archive::append(&layout, "2026-11-20", "09:00:00", &[canoe]).unwrap();
    index.sync().await.unwrap();
    drop(index);
    // What an older memd left: LanceDB's full-text index on `text`, and
    // the mark that it was behind the rows.
    let table = crate::support::lance_table(&layout).await;
    let fts = lancedb::index::Index::FTS(Default::default());
    table.create_index(&["text"], fts).execute().await.unwrap();
    let mark = layout.index_dir().join("text-index-behind");
    std::fs::write(&mark, "").unwrap();

    let index = Index::open_with(&layout, &config, lexical()).await.unwrap();
    let t = "User plays the theremin";
    archive::append(&layout, "2026-11-20", "09:00:01", &[fact(t)]).unwrap();
    index.sync().await.unwrap();
    table.checkout_latest().await.unwrap();
    let indices = table.list_indices().await.unwrap();
    assert!(
        indices
            .iter()
            .all(|i| !i.columns.iter().any(|c| c == "text")),
        "{indices:?}"
    );
    assert!(!mark.exists());
    for (q, want) in [("theremin", t), ("canoe", "User sold the canoe")] {
        let hits = index.full_text_hits(q, 5).await.unwrap();
        assert_eq!(
            hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
            [want]
        );
    }
}
