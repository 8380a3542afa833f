//! `memd serve` for one memory directory, driven from outside as a client
//! would.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::consolidate::add;
use crate::serving::*;
use crate::support::*;

/// `server::serve` returns once nothing holds the memory it served: its
/// lock is free and the caller may serve the directory again at once, in
/// the same runtime (as `memd bench search-path` does at each size),
/// though a client kept its connection alive.
#[test]
fn a_daemon_that_returned_has_let_go_of_its_memory() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    crate::trust::add(&layout.root, "User likes green tea");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let http = reqwest::Client::new();
        for round in 0..100 {
            let memory = memd::Memory::open(&layout.root).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let shutdown = async {
                let _ = stopped.await;
            };
            let served = memd::server::Served::One(memory);
            let opts = Default::default();
            let mut daemon = tokio::spawn(memd::server::serve(served, listener, opts, shutdown));
            let search = http
                .get(format!("{base}/v1/search"))
                .query(&[("q", "green tea")]);
            let found = loop {
                if daemon.is_finished() {
                    let ended = (&mut daemon).await;
                    panic!("round {round}: the daemon ended before it answered: {ended:?}");
                }
                match search.try_clone().unwrap().send().await {
                    Ok(r) => break r.text().await.unwrap(),
                    Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
                }
            };
            assert!(found.contains("green tea"), "{found}");
            stop.send(()).unwrap();
            daemon.await.unwrap().unwrap();
            assert!(
                memd::server::running(&layout).is_none(),
                "round {round}: the lock is still held"
            );
        }
    });
}

/// A daemon starts though another process asks, at that instant, whether
/// one runs: `memd status`, or a command choosing where to send its
/// request, probes the daemon's lock with a shared lock for a moment.
/// Such a probe made the start fail as if the directory were served, and
/// [`a_daemon_that_returned_has_let_go_of_its_memory`] hung in CI waiting
/// for a daemon that had refused to start.
#[test]
fn a_daemon_starts_while_other_processes_look_whether_one_runs() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    crate::trust::add(&layout.root, "User likes green tea");
    let looking = Arc::new(AtomicBool::new(true));
    let prober = {
        let (layout, looking) = (layout.clone(), looking.clone());
        std::thread::spawn(move || {
            // As often as it can: each probe holds the lock for an instant.
            while looking.load(Ordering::Relaxed) {
                let _ = memd::server::running(&layout);
            }
        })
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for round in 0..40 {
            let memory = memd::Memory::open(&layout.root).unwrap();
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
            let shutdown = async {
                let _ = stopped.await;
            };
            let served = memd::server::Served::One(memory);
            let daemon = memd::server::serve(served, listener, Default::default(), shutdown);
            let daemon = tokio::spawn(daemon);
            tokio::time::sleep(Duration::from_millis(20)).await;
            let _ = stop.send(());
            let served = daemon.await.unwrap();
            assert!(served.is_ok(), "round {round}: {served:?}");
        }
    });
    looking.store(false, Ordering::Relaxed);
    prober.join().unwrap();
}

#[test]
fn a_second_daemon_on_the_same_directory_refuses() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let first = start(&layout, &[]);
    let second = spawn_serve(&layout, "127.0.0.1:0", &[])
        .wait_with_output()
        .unwrap();
    assert!(!second.status.success());
    let err = stderr(&second);
    assert!(err.contains("already serves"), "{err}");
    assert!(err.contains(&first.child.id().to_string()), "{err}");
    assert!(
        err.contains(first.base.trim_start_matches("http://")),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_http_api_adds_searches_consolidates_and_forgets() {
    let server = scripted(|_, body| faithful(body)).await;
    let (_t, layout) = memory_dir();
    write_config(&layout, Some(&server.url), "");
    let served = layout.clone();
    tokio::task::spawn_blocking(move || {
        let d = start_in_process(&layout);
        let base = d.base.clone();
        let c = Http::at(&base, None);
        let status = || c.get("/v1/status").1;
        assert_eq!(c.get("/healthz").0, 200);

        let (code, r) = c.post(
            "/v1/facts",
            json!({"texts": ["Keeps a sourdough starter called Bubbles", "Plays padel on Tuesdays"], "session": "s1"}).to_string(),
        );
        assert_eq!(code, 200, "{r}");
        assert_eq!(r["ids"].as_array().unwrap().len(), 2);
        assert_eq!(status()["pending_facts"], 2);
        let (_, hits) = c.get("/v1/search?q=sourdough%20starter&k=3");
        assert!(hits["hits"][0]["text"].as_str().unwrap().contains("Bubbles"), "{hits}");

        // Bad requests: a clear JSON error, nothing written.
        let (code, msg) = c.post("/v1/facts", json!({"text": ""}).to_string());
        assert_eq!(code, 400);
        assert!(msg["error"].as_str().unwrap().contains("empty"), "{msg}");
        // A request memd cannot read as one says so by kind too.
        let (code, msg) = c.post("/v1/facts", "{not json");
        assert_eq!((code, &msg["kind"]), (400, &json!("invalid")), "{msg}");
        let (code, msg) = c.post("/v1/facts", json!({"text": "x", "bogus": 1}).to_string());
        assert_eq!((code, &msg["kind"]), (422, &json!("invalid")), "{msg}");
        let (code, msg) = c.post("/v1/facts", json!(["x"]).to_string());
        assert_eq!((code, &msg["kind"]), (422, &json!("invalid")), "{msg}");
        let big = json!({ "text": "x".repeat(2 << 20) }).to_string();
        // Its own client: the server closes a connection whose body it
        // refused, which a pooled connection would trip over next time.
        let (code, msg) = Http::at(&base, None).post("/v1/facts", big);
        assert_eq!((code, &msg["kind"]), (413, &json!("invalid")), "{msg}");
        let (code, msg) = c.get("/v1/search");
        assert_eq!(code, 400);
        assert!(msg["error"].as_str().unwrap().contains("q is required"), "{msg}");
        assert_eq!(c.get("/v1/../../etc/passwd").0, 404);
        assert_eq!(status()["facts"], 2);

        // The CLI goes through the daemon while it runs.
        let out = memd(&layout.root, &["reindex"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(stderr(&out).contains("through the daemon"), "{}", stderr(&out));

        let (code, report) = c.post("/v1/consolidate", json!({"force": true}).to_string());
        assert_eq!(code, 200, "{report}");
        assert_eq!(report["applied"]["add"], 2, "{report}");
        assert_eq!(report["llm_calls"], 1, "{report}");
        let s = status();
        assert_eq!((s["entries"].as_u64(), s["pending_facts"].as_u64()), (Some(2), Some(0)));
        let (_, memory) = c.get("/v1/memory");
        assert!(memory.as_str().unwrap().contains("Bubbles"), "{memory}");

        let entries = memd::entries::Document::read(&layout.entries_file()).unwrap();
        let id = entries.entries().find(|e| e.text.contains("Bubbles")).unwrap().id().unwrap().to_string();
        assert_eq!(c.delete(&format!("/v1/entries/{id}")), 200);
        assert_eq!(c.delete("/v1/entries/e-nothere"), 404);
        let (_, hits) = c.get("/v1/search?q=sourdough%20starter%20Bubbles");
        assert!(!hits.to_string().contains("Bubbles"), "{hits}");
        let (_, history) = c.get(&format!("/v1/entries/{id}/history"));
        assert_eq!(history.as_array().unwrap().last().unwrap()["op"], "FORGET");
        let s = status();
        assert_eq!((s["entries"].as_u64(), s["tombstones"].as_u64()), (Some(1), Some(1)));
        d.stop();
    })
    .await
    .unwrap();
    assert!(memd::server::running(&served).is_none());
}

#[test]
fn a_token_guards_every_route_and_non_loopback_needs_one() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let refused = spawn_serve(&layout, "0.0.0.0:0", &[])
        .wait_with_output()
        .unwrap();
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("without a token"),
        "{}",
        stderr(&refused)
    );

    let d = start(&layout, &[("MEMD_TOKEN", "s3cret")]);
    let none = Http::new(&d, None);
    let wrong = Http::new(&d, Some("wrong"));
    for path in ["/healthz", "/v1/status", "/v1/memory", "/v1/search?q=x"] {
        assert_eq!(none.get(path).0, 401, "{path}");
        assert_eq!(wrong.get(path).0, 401, "{path}");
    }
    assert_eq!(
        none.post("/v1/facts", json!({"text": "sneaky"}).to_string())
            .0,
        401
    );
    assert_eq!(Http::new(&d, Some("s3cret")).get("/v1/status").0, 200);
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    assert!(facts.is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_during_a_consolidation_leaves_whole_files_and_the_next_start_finishes() {
    let slow = Arc::new(AtomicBool::new(true));
    let s = slow.clone();
    let server = scripted(move |_, body| {
        if s.load(Ordering::SeqCst) && !is_promotion(body) {
            Reply::Slow(Duration::from_secs(20), json!({}))
        } else {
            faithful(body)
        }
    })
    .await;
    let (_t, layout) = memory_dir();
    write_config(&layout, Some(&server.url), "interval_seconds = 1\n");
    let requests = server.requests.clone();
    tokio::task::spawn_blocking(move || {
        let ids = add(
            &layout,
            "2026-11-20",
            &["Owns a green kayak", "Reads Le Monde daily"],
        );
        let mut d = start(&layout, &[]);
        // The loop starts a run; wait until its LLM call is in flight.
        wait_until("the LLM call", || !requests.lock().unwrap().is_empty());
        let t = Instant::now();
        let pid = d.child.id().to_string();
        assert!(
            Command::new("kill")
                .args(["-TERM", &pid])
                .status()
                .unwrap()
                .success()
        );
        let status = d.child.wait().unwrap();
        assert!(status.success(), "exit status {status}");
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "shutdown waited for the LLM"
        );
        // Locks released, files whole, facts still pending.
        assert!(memd::server::running(&layout).is_none());
        assert!(memd::entries::lock(&layout).is_ok());
        let entries = memd::entries::Document::read(&layout.entries_file()).unwrap();
        assert_eq!(entries.entries().count(), 0);
        memd::state::State::load(&layout.state_file()).unwrap();

        slow.store(false, Ordering::SeqCst);
        let _d = start(&layout, &[]);
        wait_until("the restarted daemon to consolidate", || {
            let doc = memd::entries::Document::read(&layout.entries_file()).unwrap();
            let srcs: Vec<String> = doc
                .entries()
                .flat_map(|e| e.meta.as_ref().unwrap().sources.clone())
                .map(String::from)
                .collect();
            ids.iter().all(|id| srcs.contains(id))
        });
    })
    .await
    .unwrap();
}

/// Any page a user opens can reach 127.0.0.1: a rebound DNS name, a
/// cross-origin fetch, an `<img>` GET and a text/plain POST are refused
/// before any route runs (nothing searched, logged or consolidated).
#[test]
fn web_pages_and_rebound_host_names_are_refused() {
    let (_t, layout) = memory_dir();
    let origins = "[server]\nallowed_origins = [\"http://localhost:3000\"]\n";
    write_config(&layout, None, origins);
    add(&layout, "2026-11-20", &["Drinks flat white coffee"]);
    let d = start_in_process(&layout);
    let port = d.base.rsplit(':').next().unwrap().to_string();
    let own = format!("Host: 127.0.0.1:{port}");
    let get = |headers: &[&str]| raw_status(&d.base, "GET", "/v1/search?q=coffee", headers, "");
    let searched = || {
        std::fs::read_to_string(layout.recall_log())
            .unwrap_or_default()
            .lines()
            .count()
    };

    assert_eq!(get(&["Host: evil.example"]), 403);
    assert_eq!(get(&[&format!("Host: evil.example:{port}")]), 403);
    assert_eq!(get(&[&own, "Origin: http://evil.example"]), 403);
    assert_eq!(get(&[&own, "Origin: null"]), 403);
    assert_eq!(get(&[&own, "Sec-Fetch-Site: cross-site"]), 403);
    let post = raw_status(
        &d.base,
        "POST",
        "/v1/consolidate",
        &[
            &own,
            "Origin: http://evil.example",
            "Content-Type: text/plain",
        ],
        "{\"force\": true}",
    );
    assert_eq!(post, 403);
    assert_eq!(searched(), 0, "a refused search was logged as a recall");
    let state = memd::state::State::load(&layout.state_file()).unwrap();
    assert!(
        state.last_run.is_none(),
        "a refused POST ran a consolidation"
    );

    // This daemon's own names, tools that send no browser headers, and the
    // configured origin get through.
    assert_eq!(get(&[&own]), 200);
    assert_eq!(get(&[&format!("Host: localhost:{port}")]), 200);
    assert_eq!(get(&[&own, "Sec-Fetch-Site: none"]), 200);
    assert_eq!(get(&[&own, "Origin: http://localhost:3000"]), 200);
    assert!(searched() > 0);
    d.stop();
}

/// The API serves MEMORY.md byte for byte, and a run that rewrites its
/// generated part keeps the user's bytes outside the markers as they are.
#[test]
fn memory_md_bytes_are_served_and_kept_as_they_are() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let mut md = std::fs::read(layout.memory_md()).unwrap();
    md.extend_from_slice(b"Caf\xe9 notes kept by hand\n");
    std::fs::write(layout.memory_md(), &md).unwrap();
    let d = start_in_process(&layout);
    let body = run(async {
        let resp = reqwest::get(format!("{}/v1/memory", d.base)).await.unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        resp.bytes().await.unwrap().to_vec()
    });
    assert_eq!(body, md);
    d.stop();

    add(&layout, "2026-11-20", &["Drinks flat white coffee"]);
    let out = memd(&layout.root, &["consolidate", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let after = std::fs::read(layout.memory_md()).unwrap();
    assert!(
        after.windows(5).any(|w| w == b"Caf\xe9 "),
        "the user's byte was rewritten"
    );
    assert!(String::from_utf8_lossy(&after).contains("flat white"));
}

/// Index writes hold a lock across processes: 8 appenders that each sync
/// the index leave exactly one row per fact. A process that is not the
/// daemon never rebuilds the index the daemon owns, whatever embedder it
/// asks for, and `reindex` repairs duplicate rows a sync cannot see.
#[tokio::test(flavor = "multi_thread")]
async fn the_index_stays_equal_to_the_files_across_processes() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let root = layout.root.clone();
    tokio::task::spawn_blocking(move || {
        let children: Vec<_> = (0..8)
            .map(|c| {
                let facts: String = (0..10)
                    .map(|n| format!("Appender {c} remembers item number {n}\n"))
                    .collect();
                let mut child = Command::new(env!("CARGO_BIN_EXE_memd"))
                    .arg("--dir")
                    .arg(&root)
                    .args(["add", "--stdin"])
                    .env_remove("MEMD_DIR")
                    .stdin(Stdio::piped())
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                child
                    .stdin
                    .take()
                    .unwrap()
                    .write_all(facts.as_bytes())
                    .unwrap();
                child
            })
            .collect();
        for mut c in children {
            assert!(c.wait().unwrap().success());
        }
        let out = memd(&root, &["check", "--json"]);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert!(out.status.success(), "{report}");
        assert_eq!(report["index_rows"], 80, "{report}");
    })
    .await
    .unwrap();

    // A daemon owns the index: another process asking for another
    // embedder is refused, and the daemon's index is untouched.
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let l = layout.clone();
    let d = tokio::task::spawn_blocking(move || start(&l, &[]))
        .await
        .unwrap();
    let mut other = memd::config::Config::load(&layout.root).unwrap();
    other.embedder.kind = memd::config::EmbedderKind::Openai;
    other.embedder.base_url = server.url.clone();
    other.embedder.model = "fake-embed".into();
    let err = memd::index::Index::open(&memd::Memory::new(layout.clone(), other.clone()))
        .await
        .err()
        .unwrap();
    assert!(format!("{err}").contains("the daemon"), "{err}");
    let base = d.base.clone();
    let (code, hits) = tokio::task::spawn_blocking(move || {
        Http::at(&base, None).get("/v1/search?q=appender%20remembers")
    })
    .await
    .unwrap();
    assert_eq!(code, 200);
    assert!(!hits["hits"].as_array().unwrap().is_empty(), "{hits}");
    drop(d);
}

/// While the daemon indexes a bulk post (here: an embedder that takes its
/// time over those facts), `wait=false` searches answer from the index as
/// it is and say which files it does not cover yet; a default search waits
/// and finds the new facts (read-your-writes).
#[tokio::test(flavor = "multi_thread")]
async fn searches_stay_answerable_while_a_bulk_post_is_indexed() {
    let (_t, layout) = memory_dir();
    let server = scripted(|_, body| {
        let reply = embeddings_reply(body, 8);
        match body.to_string().contains("slowtoken") {
            true => Reply::Slow(Duration::from_secs(6), reply),
            false => Reply::Json(reply),
        }
    })
    .await;
    let config = format!(
        "[embedder]\nkind = \"openai\"\nbase_url = \"{}\"\nmodel = \"fake-embed\"\n\
         api_key_env = \"MEMD_TEST_NO_SUCH_KEY\"\ntimeout_seconds = 60\n",
        server.url
    );
    std::fs::write(layout.config_file(), config).unwrap();
    let l = layout.clone();
    let d = tokio::task::spawn_blocking(move || start(&l, &[]))
        .await
        .unwrap();
    let base = d.base.clone();
    tokio::task::spawn_blocking(move || {
        let http = Http::at(&base, None);
        let text = json!({"text": "User owns a green canoe"}).to_string();
        assert_eq!(http.post("/v1/facts", text).0, 200);
        let (code, hits) = http.get("/v1/search?q=green%20canoe");
        assert_eq!(code, 200, "{hits}");
        assert!(hits.to_string().contains("green canoe"), "{hits}");

        let bulk: Vec<String> = (0..50)
            .map(|i| format!("User noted slowtoken item {i}"))
            .collect();
        let (code, _) = http.post("/v1/facts", json!({ "texts": bulk }).to_string());
        assert_eq!(code, 200);
        let (code, now) = http.get("/v1/search?q=green%20canoe&wait=false");
        assert_eq!(code, 200, "{now}");
        assert!(now["hits"].to_string().contains("green canoe"), "{now}");
        assert!(!now["hits"].to_string().contains("slowtoken"), "{now}");
        let behind = now["indexing"]["files_behind"].to_string();
        assert!(behind.contains("archive/"), "{now}");

        let (code, waited) = http.get("/v1/search?q=noted%20item%207");
        assert_eq!(code, 200, "{waited}");
        // One shape, waited for or not: the hits, and what is not indexed.
        assert!(
            waited["hits"].is_array() && waited["indexing"].is_null(),
            "{waited}"
        );
        assert!(waited.to_string().contains("slowtoken item 7"), "{waited}");
        let (_, after) = http.get("/v1/search?q=green%20canoe&wait=false");
        assert!(after["indexing"].is_null(), "{after}");
    })
    .await
    .unwrap();
    drop(d);
}

#[test]
fn the_http_api_lists_runs_and_undoes_one() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start_in_process(&layout);
    let c = Http::at(&d.base, None);
    let (code, r) = c.post(
        "/v1/facts",
        json!({"texts": ["Keeps a sourdough starter called Bubbles"]}).to_string(),
    );
    assert_eq!(code, 200, "{r}");
    let (code, report) = c.post("/v1/consolidate", json!({"force": true}).to_string());
    assert_eq!(code, 200, "{report}");
    let (code, runs) = c.get("/v1/runs");
    assert_eq!(code, 200, "{runs}");
    let run = runs.as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (&run["id"], &run["ops"]["ADD"]),
        (&report["run_id"], &json!(1)),
        "{runs}"
    );

    let undo = format!("/v1/runs/{}/undo", run["id"].as_str().unwrap());
    let (code, dry) = c.post(&undo, json!({"dry_run": true}).to_string());
    assert_eq!(
        (code, dry["changes"].as_array().unwrap().len()),
        (200, 1),
        "{dry}"
    );
    assert_eq!(
        c.get("/v1/status").1["entries"],
        1,
        "a dry run writes nothing"
    );
    let (code, done) = c.post(&undo, json!({}).to_string());
    assert_eq!(code, 200, "{done}");
    let s = c.get("/v1/status").1;
    assert_eq!(
        (s["entries"].as_u64(), s["pending_facts"].as_u64()),
        (Some(0), Some(1)),
        "{s}"
    );
    let (_, memory) = c.get("/v1/memory");
    assert!(!memory.as_str().unwrap().contains("Bubbles"), "{memory}");
    let (_, hits) = c.get("/v1/search?q=sourdough%20starter&k=5");
    let kinds: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h["kind"].as_str())
        .collect();
    assert!(
        kinds.contains(&"fact") && !kinds.contains(&"entry"),
        "{hits}"
    );
    assert_eq!(c.post("/v1/runs/r-nothere/undo", "{}").0, 404);
    d.stop();
}

/// A daemon keeps each day file as it last read it and reads only what an
/// append added; a file changed anywhere else, in place (same inode, as
/// nano saves) and grown too, or a line that continues the last fact, is
/// read again where it changed.
#[test]
fn a_day_file_changed_before_its_end_is_read_again_not_only_its_new_tail() {
    use std::os::unix::fs::MetadataExt;
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    let hits = |q: &str| searched(&c, q);
    let path = layout.archive_file("2026-01-01");
    let mut text = String::from("# 2026-01-01\n\n## 09:00:00\n");
    for i in 0..40 {
        text.push_str(&format!("- The user filler fact number {i}\n"));
    }
    text.push_str("- The user Zqearly likes tea\n- The user Zqlast\n");
    std::fs::write(&path, &text).unwrap();
    assert!(hits("Zqearly").contains("Zqearly likes tea"));

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    writeln!(f, "  and Zqcontinued on the next line").unwrap();
    drop(f);
    let found = hits("Zqcontinued");
    assert!(
        found.contains("The user Zqlast and Zqcontinued on the next line"),
        "a line continuing the last fact makes it one fact: {found}"
    );

    let ino = std::fs::metadata(&path).unwrap().ino();
    let now = std::fs::read_to_string(&path).unwrap();
    let edited = now.replace("Zqearly likes tea", "Zqedited likes coffee") + "- The user Zqgrown\n";
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    f.write_all(edited.as_bytes()).unwrap();
    drop(f);
    assert_eq!(
        std::fs::metadata(&path).unwrap().ino(),
        ino,
        "rewritten in place"
    );
    assert!(hits("Zqgrown").contains("Zqgrown"));
    let found = hits("Zqedited");
    assert!(found.contains("Zqedited likes coffee"), "{found}");
    assert!(!hits("Zqearly").contains("Zqearly"), "the old text is gone");
    drop(d);
}

/// The hits of a search for `q` (up to 50, any score), as JSON text.
fn searched(c: &Http, q: &str) -> String {
    let (code, hits) = c.get(&format!("/v1/search?q={q}&k=50&min_score=0"));
    assert_eq!(code, 200, "{hits}");
    hits.to_string()
}

/// A daemon's sync before a search stats only the day files the kernel
/// says changed, and its next search still finds at once what
/// every way of changing the archive wrote: an append by hand, a write
/// through a day file that is a symbolic link or a hard link to a file
/// elsewhere (which the kernel does not report on the archive), an
/// editor's save by rename, a new day file, and the archive directory
/// itself replaced. Its status, which counts the day files it keeps
/// parsed (reading again only those that changed), says after each the
/// same days and facts as a status read from the files.
#[test]
fn a_daemons_next_search_sees_every_way_the_archive_changes() {
    use std::io::Write;
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    let finds = |marker: &str, how: &str| {
        let hits = searched(&c, marker);
        assert!(hits.contains(marker), "{how}: {hits}");
        let (code, kept) = c.get("/v1/status");
        assert_eq!(code, 200, "{kept}");
        let memory = memd::Memory::open(&layout.root).unwrap();
        let read = serde_json::to_value(memd::status::gather(&memory, None).unwrap()).unwrap();
        for field in ["days", "facts", "facts_forgotten", "pending_facts"] {
            assert_eq!(kept[field], read[field], "{how}: status {field}");
        }
    };
    let day = |d: &str| layout.archive_file(d);
    let page = |d: &str, text: &str| format!("# {d}\n\n## 09:00:00\n- {text}\n");
    let append = |path: &std::path::Path, text: &str| {
        let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
        writeln!(f, "- {text}").unwrap();
    };
    std::fs::write(day("2026-01-01"), page("2026-01-01", "The user Zqfirst")).unwrap();
    finds("Zqfirst", "a day file written before the first search");
    append(&day("2026-01-01"), "The user Zqappended");
    finds("Zqappended", "an append by hand");

    let elsewhere = layout.root.join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let target = elsewhere.join("linked.md");
    std::fs::write(&target, page("2026-01-02", "The user Zqlinked")).unwrap();
    std::os::unix::fs::symlink(&target, day("2026-01-02")).unwrap();
    finds("Zqlinked", "a new day file that is a symbolic link");
    append(&target, "The user Zqthroughthelink");
    finds("Zqthroughthelink", "a write to a symbolic link's target");

    let hard = elsewhere.join("hard.md");
    std::fs::write(&hard, page("2026-01-03", "The user Zqhard")).unwrap();
    std::fs::hard_link(&hard, day("2026-01-03")).unwrap();
    finds("Zqhard", "a new day file that is a hard link");
    append(&hard, "The user Zqthroughthehardlink");
    finds(
        "Zqthroughthehardlink",
        "a write through the other hard link",
    );

    let archive = layout.root.join("archive");
    let saved = archive.join(".2026-01-01.md.swp");
    let before = std::fs::read_to_string(day("2026-01-01")).unwrap();
    std::fs::write(&saved, format!("{before}- The user Zqsaved\n")).unwrap();
    std::fs::rename(&saved, day("2026-01-01")).unwrap();
    finds("Zqsaved", "an editor's save by rename");

    let old = layout.root.join("archive.old");
    std::fs::rename(&archive, &old).unwrap();
    std::fs::create_dir(&archive).unwrap();
    std::fs::copy(old.join("2026-01-01.md"), day("2026-01-01")).unwrap();
    std::fs::write(day("2026-01-04"), page("2026-01-04", "The user Zqreplaced")).unwrap();
    finds("Zqreplaced", "the archive directory replaced");
    append(&day("2026-01-04"), "The user Zqafterwards");
    finds("Zqafterwards", "an append to the new archive directory");
    std::fs::remove_file(day("2026-01-01")).unwrap();
    finds("Zqreplaced", "a day file removed");
    drop(d);
}

/// Review mode through a running daemon: turned on in memd.toml while it
/// runs, the next run proposes and applies nothing; the review routes
/// accept one op and carry it out.
#[test]
fn a_daemon_honours_review_turned_on_while_it_runs_and_its_routes_carry_out_a_decision() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let d = start_in_process(&layout);
    let c = Http::at(&d.base, None);
    let facts = json!({"texts": ["Keeps bees on the roof", "Plays go on Sundays"]});
    assert_eq!(c.post("/v1/facts", facts.to_string()).0, 200);
    let toml = std::fs::read_to_string(layout.config_file()).unwrap();
    let manual = toml.replace(
        "[consolidation]\n",
        "[consolidation]\nreview = \"manual\"\n",
    );
    assert_ne!(manual, toml, "the test's configuration has the section");
    std::fs::write(layout.config_file(), manual).unwrap();
    let (code, report) = c.post("/v1/consolidate", json!({"force": true}).to_string());
    assert_eq!(code, 200, "{report}");
    assert_eq!(
        report["proposed"].as_array().map(Vec::len),
        Some(2),
        "{report}"
    );
    assert_eq!(report["applied"]["add"], 0, "{report}");
    let (code, items) = c.get("/v1/review");
    assert_eq!(code, 200, "{items}");
    let bees = items["open"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["says"].as_str().unwrap().contains("bees"))
        .map(|o| o["item"].as_str().unwrap().to_string())
        .unwrap();
    let body = json!({"action": "accept", "ids": [bees], "apply": true});
    let (code, done) = c.post("/v1/review", body.to_string());
    assert_eq!(code, 200, "{done}");
    assert_eq!(done["carried"]["accepted"], json!([bees]), "{done}");
    assert_eq!(c.get("/v1/status").1["entries"], 1);
    let (_, hits) = c.get("/v1/search?q=bees%20roof&k=5");
    assert!(
        hits["hits"]
            .as_array()
            .unwrap()
            .iter()
            .any(|h| h["kind"] == "entry" || h["kind"] == "core"),
        "the entry the decision made (and its MEMORY.md line) is searchable: {hits}"
    );
    let bogus = json!({"action": "accept", "ids": ["p-00000000"]});
    assert_eq!(c.post("/v1/review", bogus.to_string()).0, 404);
    d.stop();
}

/// The daemon shows a fact's rows to searches before LanceDB commits
/// them: stopped for good between the two, its search finds the fact, and
/// the table does not hold it yet. Killed there, the next daemon indexes
/// the fact from its file: its search gives the same hits in the same
/// order, and `memd check` passes.
#[test]
fn a_search_finds_a_fact_the_daemon_has_not_yet_written_to_the_table_as_it_will_once_written() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let dir = layout.root.as_path();
    for text in [
        "The user grows tomatoes on the balcony",
        "The user cycles to work on Mondays",
        "The user keeps bees in the garden",
    ] {
        crate::trust::add(dir, text);
    }
    crate::trust::ok(dir, &["search", "garden"]);
    let fact = "The user planted Zqbasil beside the tomatoes";
    let marker = dir.join(".memd").join("paused-at-index-shown");
    let hits = |c: &Http| -> Vec<(String, String)> {
        let (code, v) = c.get("/v1/search?q=Zqbasil%20tomatoes&k=10&min_score=0");
        assert_eq!(code, 200, "{v}");
        let hits = v["hits"].as_array().unwrap_or_else(|| panic!("{v}"));
        let pair = |h: &Value| (h["id"].to_string(), h["text"].to_string());
        hits.iter().map(pair).collect()
    };

    let d = start(&layout, &[("MEMD_PAUSE_AT", "index-shown")]);
    // A search that waited for the stopped sync would wait for good.
    let c = Http {
        client: reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap(),
        ..Http::new(&d, None)
    };
    // A search first: the daemon then holds the rows' words (as it does
    // soon after it starts), which is where a sync shows its rows.
    let before = hits(&c);
    assert!(
        !before.iter().any(|(_, t)| t.contains("Zqbasil")),
        "{before:?}"
    );
    let (code, v) = c.post("/v1/facts", json!({ "text": fact }).to_string());
    assert_eq!(code, 200, "{v}");
    wait_until("the daemon's sync stops with the fact shown", || {
        marker.exists()
    });
    let shown = hits(&c);
    assert!(
        shown.first().is_some_and(|(_, t)| t.contains("Zqbasil")),
        "found before the table holds it: {shown:?}"
    );
    let in_table = run(async {
        let table = crate::support::lance_table(&layout).await;
        let filter = format!("text = '{fact}'");
        table.count_rows(Some(filter)).await.unwrap()
    });
    assert_eq!(in_table, 0, "the table holds the fact already");
    drop(d);
    std::fs::remove_file(&marker).unwrap();

    let d = start(&layout, &[]);
    let c = Http::new(&d, None);
    assert_eq!(hits(&c), shown, "the same search once the table holds it");
    drop(d);
    let (passed, _, v) = crate::trust::check(dir);
    assert!(passed, "{v}");
}

/// A daemon serving a memory of one fact, holding rows back from the
/// table for ten minutes (a test build's `MEMD_HELD_MS`), its words loaded
/// by a first search; with a client.
fn holding_daemon(layout: &memd::Layout) -> (Daemon, Http) {
    write_config(layout, None, "");
    crate::trust::add(&layout.root, "The user keeps bees in the garden");
    let d = start(layout, &[("MEMD_HELD_MS", "600000")]);
    let http = Http::new(&d, None);
    let (code, hits) = http.get("/v1/search?q=bees%20garden");
    assert!(code == 200 && hits.to_string().contains("bees"), "{hits}");
    (d, http)
}

/// POST `text` as a fact that looks up similar entries (its rows held).
fn add_similar(http: &Http, text: &str) {
    let body = json!({"text": text, "similar": true});
    assert_eq!(http.post("/v1/facts", body.to_string()).0, 200);
}

/// SIGTERM the daemon, which must then exit cleanly.
fn stop_gracefully(mut d: Daemon) {
    let pid = d.child.id().to_string();
    let term = Command::new("kill").args(["-TERM", &pid]).status();
    assert!(term.unwrap().success());
    assert!(d.child.wait().unwrap().success());
}

/// A daemon's adds that look up similar entries hold their rows back from
/// the table, shown to searches (`index::held`), and the daemon commits
/// them when it stops: after a SIGTERM the table holds every fact and
/// `memd check` sees nothing left to sync.
#[test]
fn a_daemon_stopped_commits_the_rows_it_held() {
    let (_t, layout) = memory_dir();
    let (d, http) = holding_daemon(&layout);
    let dir = layout.root.clone();
    for i in 0..5 {
        add_similar(&http, &format!("Zqlily{i} flowers in June"));
    }
    let (_, hits) = http.get("/v1/search?q=Zqlily4");
    assert!(hits.to_string().contains("Zqlily4 "), "{hits}");
    let (passed, _, v) = crate::trust::check(&dir);
    assert!(passed && crate::trust::unsynced_notes(&v) > 0, "held: {v}");
    stop_gracefully(d);
    let (passed, _, v) = crate::trust::check(&dir);
    assert!(passed && crate::trust::unsynced_notes(&v) == 0, "{v}");
    assert_eq!(v["index_rows"], 6, "{v}");
}

/// Rows a daemon holds back from the table (`index::held`) leave their day
/// file marked as syncing, and a handle that writes past the daemon (the
/// random test of user actions opens one) syncs that file and adds them:
/// the daemon then takes its held rows back instead of adding them a
/// second time (the random test found 2 rows for a fact).
#[test]
fn a_daemon_holding_rows_another_handle_indexed_adds_none_twice() {
    let (_t, layout) = memory_dir();
    let (d, http) = holding_daemon(&layout);
    let dir = layout.root.clone();
    for i in 0..2 {
        add_similar(&http, &format!("Zqaster{i} flowers in May"));
    }
    run(async {
        let memory = memd::Memory::open(&dir).unwrap();
        let past = memd::index::Index::open(&memory).await.unwrap();
        let synced = past.writer.sync().await.unwrap();
        assert_eq!(synced.rows_added, 2, "{synced:?}");
    });
    stop_gracefully(d);
    let (passed, kinds, v) = crate::trust::check(&dir);
    assert!(passed, "{kinds:?} {v}");
    assert_eq!(v["index_rows"], 3, "{v}");
}
