//! `memd serve` for one memory directory, driven from outside as a client
//! would.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::consolidate::add;
use crate::serving::*;
use crate::support::*;

mod searches;

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
