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

mod cache;
mod lab;
mod onnx;

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

/// A long-lived writer keeps what status counts ([`memd::index::counts`]),
/// counting again only the day files parsed anew while what decides
/// pending stays the same; after every kind of change it says what a
/// status read from the files says: appends to today and to an older day
/// written by hand, a run, a forget, a pin, and the entries and their
/// journal deleted by hand (every decided fact pending again).
#[tokio::test(flavor = "multi_thread")]
async fn a_writers_kept_status_says_what_the_files_say_after_every_change() {
    use crate::trust::{add, consolidate, entries, fresh, ok};
    let t = fresh();
    let dir = t.path();
    let memory = memd::Memory::open(dir).unwrap();
    let index = Index::open(&memory).await.unwrap();
    let fields = [
        "days",
        "facts",
        "facts_forgotten",
        "pending_facts",
        "entries",
        "entries_pinned",
        "entries_edited_by_hand",
        "entries_unsaved_hand_written",
        "tombstones",
        "facts_under_review",
        "last_consolidation",
    ];
    let same = |how: &str| -> serde_json::Value {
        let kept = memd::status::gather(&memory, Some(&index)).unwrap();
        let read = memd::status::gather(&memory, None).unwrap();
        let (kept, read) = (
            serde_json::to_value(kept).unwrap(),
            serde_json::to_value(read).unwrap(),
        );
        for field in fields {
            assert_eq!(kept[field], read[field], "{how}: {field}");
        }
        kept
    };
    let old_day = dir.join("archive/2026-01-01.md");
    std::fs::write(
        &old_day,
        "# 2026-01-01\n\n## 09:00:00\n- Has a cat called Tom\n",
    )
    .unwrap();
    add(dir, "Has a dog called Rex");
    add(dir, "Works at Acme as an engineer");
    assert_eq!(same("three facts on two days")["pending_facts"], 3);
    assert_eq!(same("asked again, nothing changed")["pending_facts"], 3);
    consolidate(dir);
    let after_run = same("after a run");
    assert_eq!(after_run["pending_facts"], 0);
    assert!(after_run["last_consolidation"].is_string());
    let lisbon = add(dir, "Lives in Lisbon");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&old_day)
        .unwrap();
    std::io::Write::write_all(&mut f, b"- Has a parrot called Kiwi\n").unwrap();
    let appended = same("an append today and one by hand to an older day");
    assert_eq!(appended["pending_facts"], 2);
    ok(dir, &["forget", &lisbon]);
    let forgot = same("after a forget");
    assert_eq!(
        (&forgot["facts_forgotten"], &forgot["pending_facts"]),
        (&1.into(), &1.into())
    );
    let (entry, ..) = entries(dir).into_iter().next().unwrap();
    ok(dir, &["edit", &entry, "--pin"]);
    assert_eq!(same("after a pin")["entries_pinned"], 1);
    std::fs::remove_file(memory.layout.entries_file()).unwrap();
    std::fs::remove_file(memory.layout.journal_file()).unwrap();
    let gone = same("after the entries and their journal were deleted by hand");
    assert_eq!(gone["pending_facts"], 4, "{gone}");
}
