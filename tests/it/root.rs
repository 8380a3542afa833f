//! `memd serve --root`: one daemon for many memories.

use std::time::Duration;

use serde_json::json;

use crate::serving::*;
use crate::support::*;

#[test]
fn two_memories_served_by_one_daemon_never_see_each_others_facts_entries_recalls_or_tombstones() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(8));
    let c = Http::at(&d.base, None);
    let post = |m: &str, texts: &[&str]| {
        let (code, r) = c.post(
            &format!("/v1/m/{m}/facts"),
            json!({ "texts": texts }).to_string(),
        );
        assert_eq!(code, 200, "{r}");
    };
    post(
        "alice",
        &["Alice keeps bees on the roof", "Alice likes jazz"],
    );
    post("bob", &["Bob keeps goats in the garden"]);
    let (_, a) = c.get("/v1/m/alice/search?q=keeps&k=10");
    let (_, b) = c.get("/v1/m/bob/search?q=keeps&k=10");
    assert!(texts(&a).iter().all(|t| t.starts_with("Alice")), "{a}");
    assert!(
        texts(&b).iter().all(|t| t.starts_with("Bob")) && !texts(&b).is_empty(),
        "{b}"
    );

    let (code, r) = c.post(
        "/v1/m/alice/consolidate",
        json!({"force": true}).to_string(),
    );
    assert_eq!((code, &r["applied"]["add"]), (200, &json!(2)), "{r}");
    let status = |m: &str| c.get(&format!("/v1/m/{m}/status")).1;
    assert_eq!(status("alice")["entries"], 2);
    assert_eq!(
        (
            status("bob")["entries"].as_u64(),
            status("bob")["pending_facts"].as_u64()
        ),
        (Some(0), Some(1))
    );

    let alice = root.path().join("alice");
    let doc = memd::entries::Document::read(&alice.join("consolidated/memory.md")).unwrap();
    let bees = doc
        .entries()
        .find(|e| e.text.contains("bees"))
        .unwrap()
        .id()
        .unwrap()
        .to_string();
    assert_eq!(
        c.delete(&format!("/v1/m/bob/entries/{bees}")),
        404,
        "bob cannot forget alice's entry"
    );
    assert_eq!(c.delete(&format!("/v1/m/alice/entries/{bees}")), 200);
    assert_eq!(status("alice")["tombstones"], 1);
    assert_eq!(status("bob")["tombstones"], 0);
    let bob_recalls =
        std::fs::read_to_string(root.path().join("bob/.recall_log.jsonl")).unwrap_or_default();
    assert!(
        !bob_recalls.contains("Alice") && !bob_recalls.contains(&bees),
        "{bob_recalls}"
    );
    let alice_recalls = std::fs::read_to_string(alice.join(".recall_log.jsonl")).unwrap();
    assert!(!alice_recalls.contains("Bob"), "{alice_recalls}");

    let (_, list) = c.get("/v1/memories");
    assert_eq!(list["memories"].as_array().unwrap().len(), 2, "{list}");
    assert_eq!(
        c.get("/v1/m/carol/search?q=x").0,
        404,
        "a read creates nothing"
    );
    assert!(!root.path().join("carol").exists());
    d.stop();
    assert!(memd::server::running(&memd::Layout::open(&alice).unwrap()).is_none());
}

#[test]
fn a_memory_name_with_dot_dot_or_a_separator_is_refused() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(8));
    let before: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
    let long = "a".repeat(65);
    for name in [
        "..",
        "..%2F..%2Fetc",
        "a%2Fb",
        "a%5Cb",
        ".hidden",
        &long,
        "caf%C3%A9",
    ] {
        let status = raw_status(
            &d.base,
            "POST",
            &format!("/v1/m/{name}/facts"),
            &["Content-Type: application/json"],
            r#"{"text":"x"}"#,
        );
        assert_eq!(status, 400, "{name}");
    }
    // A path that walks out of /v1/m/ never reaches a memory at all.
    let status = raw_status(
        &d.base,
        "POST",
        "/v1/m/../../facts",
        &["Content-Type: application/json"],
        r#"{"text":"x"}"#,
    );
    assert!(status == 400 || status == 404, "{status}");
    let after: Vec<_> = std::fs::read_dir(root.path()).unwrap().collect();
    assert_eq!(before.len(), after.len(), "nothing created");
    assert!(memd::server::memories::check_name("alice-2.work_x").is_ok());
    d.stop();
}

#[test]
fn the_lru_closes_and_reopens_a_memory_without_losing_a_write() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(1));
    let c = Http::at(&d.base, None);
    let post = |m: &str, text: &str| {
        let (code, r) = c.post(
            &format!("/v1/m/{m}/facts"),
            json!({ "text": text }).to_string(),
        );
        assert_eq!(code, 200, "{r}");
    };
    post("alice", "Alice keeps bees");
    assert_eq!(
        texts(&c.get("/v1/m/alice/search?q=bees").1),
        vec!["Alice keeps bees"]
    );
    post("bob", "Bob keeps goats");
    let alice = memd::Layout::open(root.path().join("alice")).unwrap();
    assert!(
        memd::server::running(&alice).is_some(),
        "a post opens nothing: alice is still the open one"
    );
    assert_eq!(texts(&c.get("/v1/m/bob/search?q=goats").1).len(), 1);
    let (_, list) = c.get("/v1/memories");
    assert_eq!(list["open"], 1, "{list}");
    assert!(
        memd::server::running(&alice).is_none(),
        "a closed memory is not served"
    );

    // Written while alice is closed: by the daemon, and by the CLI on its own.
    post("alice", "Alice plants lavender for the bees");
    post("bob", "Bob milks the goats");
    let out = memd(&alice.root, &["add", "Alice sells honey"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let found = texts(
        &c.get("/v1/m/alice/search?q=bees%20lavender%20honey&k=10&min_score=0")
            .1,
    );
    for t in [
        "Alice keeps bees",
        "Alice plants lavender for the bees",
        "Alice sells honey",
    ] {
        assert!(found.iter().any(|f| f == t), "{t} missing: {found:?}");
    }
    assert_eq!(
        texts(&c.get("/v1/m/bob/search?q=goats&k=10&min_score=0").1).len(),
        2
    );
    d.stop();
    assert_checks_clean(&alice.root, "the LRU");
}

/// A memory's own token opens that memory's routes, and nothing else: not
/// another memory, not the list, not the operator's routes that name it.
#[test]
fn a_memorys_own_token_opens_that_memory_alone() {
    let root = root_dir();
    let mut opts = open_options(8);
    opts.token = Some("daemon-token".into());
    opts.tokens.insert("alice".into(), "alice-token".into());
    let d = start_root(root.path(), opts);
    let fact = json!({"text": "Alice keeps bees"}).to_string();
    let alice = Http::at(&d.base, Some("alice-token"));
    assert_eq!(alice.post("/v1/m/alice/facts", fact.clone()).0, 200);
    assert_eq!(alice.post("/v1/m/bob/facts", fact.clone()).0, 401);
    assert_eq!(alice.get("/v1/memories").0, 401);
    // The operator's routes name a memory too, but are not on it: a
    // memory's own token moves nothing.
    assert_eq!(alice.post("/v1/handover/alice", "").0, 401);
    assert_eq!(alice.post("/v1/takeover/alice", "").0, 401);
    assert_eq!(Http::at(&d.base, None).get("/v1/m/alice/status").0, 401);
    let admin = Http::at(&d.base, Some("daemon-token"));
    assert_eq!(admin.post("/v1/m/bob/facts", fact).0, 200);
    assert_eq!(admin.get("/v1/memories").0, 200);
    let bob_days = root.path().join("bob/archive").read_dir().unwrap().count();
    assert_eq!(bob_days, 1);
    d.stop();
}

/// The consolidation loop goes over every memory, open or closed, each
/// through its own gate.
#[test]
fn the_consolidation_loop_runs_each_memorys_gate_open_or_closed() {
    let root = root_dir();
    let toml = root.path().join("memd.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("interval_seconds = 1\n");
    std::fs::write(&toml, text).unwrap();
    let d = start_root(root.path(), open_options(1));
    let c = Http::at(&d.base, None);
    for (m, t) in [
        ("alice", "Alice keeps bees"),
        ("bob", "Bob keeps goats"),
        ("carol", "Carol keeps hens"),
    ] {
        assert_eq!(
            c.post(
                &format!("/v1/m/{m}/facts"),
                json!({ "text": t }).to_string()
            )
            .0,
            200
        );
    }
    // Carol's gate stays shut: she wants two facts.
    let carol = root.path().join("carol/memd.toml");
    let mut own = std::fs::read_to_string(&carol).unwrap();
    own = own.replace("min_facts = 1", "min_facts = 2");
    std::fs::write(&carol, own).unwrap();
    let entries = |m: &str| {
        let path = root.path().join(m).join("consolidated/memory.md");
        memd::entries::Document::read(&path)
            .unwrap()
            .entries()
            .count()
    };
    wait_until("alice and bob consolidated", || {
        entries("alice") == 1 && entries("bob") == 1
    });
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(entries("carol"), 0, "carol's own gate holds");
    d.stop();
}

/// The guard asks for the token of the memory a request reaches, however
/// its name is spelled in the path: `%61lice` is `alice` to the router,
/// and so to the guard.
#[test]
fn a_memorys_token_is_asked_for_however_its_name_is_spelled_in_the_path() {
    let root = root_dir();
    let mut opts = open_options(8);
    opts.tokens.insert("alice".into(), "alice-token".into());
    let d = start_root(root.path(), opts);
    let fact = json!({"text": "Alice keeps bees"}).to_string();
    let alice = Http::at(&d.base, Some("alice-token"));
    assert_eq!(alice.post("/v1/m/alice/facts", fact.clone()).0, 200);
    let none = Http::at(&d.base, None);
    for path in [
        "/v1/m/%61lice/status",
        "/v1/m/%61%6c%69%63%65/search?q=bees",
    ] {
        assert_eq!(none.get(path).0, 401, "{path}");
    }
    assert_eq!(none.post("/v1/m/%61lice/facts", fact).0, 401);
    assert_eq!(alice.get("/v1/m/%61lice/status").0, 200);
    d.stop();
}

/// `check` with `fix` on a memory the daemon has open rebuilds its index
/// through the daemon's own handle, never by deleting the files under it.
#[test]
fn check_fix_on_an_open_memory_rebuilds_its_index_in_place() {
    let root = root_dir();
    let d = start_root(root.path(), open_options(8));
    let c = Http::at(&d.base, None);
    let facts = json!({"texts": ["Drinks flat white coffee", "Has two cats"]});
    assert_eq!(c.post("/v1/m/alice/facts", facts.to_string()).0, 200);
    assert_eq!(
        texts(&c.get("/v1/m/alice/search?q=cats&min_score=0").1).len(),
        2
    );
    let layout = memd::Layout::open(root.path().join("alice")).unwrap();
    run(crate::check::duplicate_a_row(&layout));
    let (code, report) = c.post("/v1/m/alice/check", json!({"fix": true}).to_string());
    assert_eq!(code, 200, "{report}");
    assert_eq!(report["problems"], json!([]), "{report}");
    assert_eq!(report["index_rebuilt"], true, "{report}");
    assert!(layout.index_dir().join("lance").is_dir());
    let (code, hits) = c.get("/v1/m/alice/search?q=flat%20white%20coffee");
    assert_eq!(code, 200, "{hits}");
    assert!(hits.to_string().contains("flat white"), "{hits}");
    d.stop();
    assert_checks_clean(&layout.root, "a fix through the daemon");
}

/// A daemon over a root SIGKILLed while it makes a memory (its first
/// write) leaves no half-made memory: the next write makes it whole, with
/// the root's `memd.toml`. (It was left with memd's default configuration,
/// which the root refused on every later request: "its memd.toml sets
/// [embedder] kind … which the root's memd.toml does not allow". Found by
/// the deployment test's node kill.)
#[test]
fn a_daemon_killed_while_making_a_memory_leaves_none_half_made() {
    let root = root_dir();
    let (mut daemon, _) = paused_root_daemon(root.path(), "memory-created");
    let body = json!({ "text": "Alice keeps bees" }).to_string();
    kill_at(
        &mut daemon,
        root.path(),
        ("/v1/m/alice/facts", &body),
        "memory-created",
    );
    assert!(
        !memd::Layout::is_memory(&root.path().join("alice")),
        "half made"
    );

    let d = start_root(root.path(), open_options(4));
    let c = Http::at(&d.base, None);
    let (code, r) = c.post(
        "/v1/m/alice/facts",
        json!({ "text": "Alice keeps bees" }).to_string(),
    );
    assert_eq!(code, 200, "{r}");
    let config = std::fs::read(root.path().join("alice/memd.toml")).unwrap();
    assert_eq!(
        config,
        std::fs::read(root.path().join("memd.toml")).unwrap()
    );
    let left: Vec<_> = std::fs::read_dir(root.path())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().into_string().ok())
        .filter(|n| n.starts_with(".creating-"))
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    d.stop();
    assert_checks_clean(&root.path().join("alice"), "a memory made after a kill");
}

/// `dir` copied whole to `to`, as an operator copies a handed-over memory.
fn copy_dir(dir: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        match e.file_type().unwrap().is_dir() {
            true => copy_dir(&e.path(), &to.join(e.file_name())),
            false => {
                std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
            }
        }
    }
}

/// A write to memory `name` of the daemon at `base`: its status, its
/// `Retry-After` and its body.
fn write_to(base: &str, name: &str, text: &str) -> (u16, Option<String>, serde_json::Value) {
    run(async {
        let r = reqwest::Client::new()
            .post(format!("{base}/v1/m/{name}/facts"))
            .bearer_auth("daemon-token")
            .json(&json!({ "text": text }))
            .send()
            .await
            .unwrap();
        let retry = r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (r.status().as_u16(), retry, r.json().await.unwrap())
    })
}

fn root_with_slow_llm(llm: &str) -> tempfile::TempDir {
    let root = root_dir();
    let toml = root.path().join("memd.toml");
    let mut text = std::fs::read_to_string(&toml).unwrap();
    text.push_str("request = \"ops\"\nmin_similarity = 0.0\n");
    text.push_str(&format!(
        "[llm]\nbase_url = \"{llm}\"\nmodel = \"scripted\"\nmax_attempts = 1\ntimeout_seconds = 30\n"
    ));
    std::fs::write(&toml, text).unwrap();
    root
}

/// A handover (`POST /v1/handover/NAME`, deploy/move.sh's first step)
/// waits for the request in flight on its memory (a consolidation waiting
/// 3 s on the LLM), and refuses new ones meanwhile: 503, `Retry-After`,
/// `kind: "busy"`, nothing written. After it the node refuses the memory
/// for good, after a restart too, and a write does not make it anew; its
/// files, the run's entries among them, wait in `.memd/outgoing/`. Another
/// root takes it over from a copy and serves every fact and entry. A
/// memory's own token opens neither operator route. A directory put back
/// while the mark stands is a problem for `memd check`, and a takeover
/// where it is serves it again.
#[test]
fn a_handover_drains_its_memory_and_its_node_refuses_it_until_a_takeover() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let llm = rt.block_on(scripted(|_, body| {
        Reply::Slow(Duration::from_secs(3), add_every_fact(body))
    }));
    let root = root_with_slow_llm(&llm.url);
    let mut opts = open_options(8);
    opts.token = Some("daemon-token".into());
    opts.tokens.insert("alice".into(), "alice-token".into());
    let d = start_root(root.path(), opts.clone());
    let admin = Http::at(&d.base, Some("daemon-token"));
    let facts = json!({"texts": ["Alice keeps bees", "Alice rows on Sundays"]});
    assert_eq!(admin.post("/v1/m/alice/facts", facts.to_string()).0, 200);

    a_handover_waits_for_the_run_in_flight_and_refuses_writes_meanwhile(&d.base, &llm);

    let outgoing = root.path().join(".memd/outgoing/alice");
    the_files_wait_and_the_node_refuses_the_memory(root.path(), &d.base, &admin, &outgoing);
    d.stop();
    let d = start_root(root.path(), opts.clone());
    let admin = Http::at(&d.base, Some("daemon-token"));
    assert_eq!(write_to(&d.base, "alice", "Alice moved her hives").0, 503);

    // Another node takes it over from a copy.
    another_node_takes_it_over_from_a_copy(&llm.url, &opts, &outgoing);

    // The copy put back where the mark stands: refused, and said by check;
    // a takeover there lifts the mark.
    copy_dir(&outgoing, &root.path().join("alice"));
    std::fs::remove_dir_all(&outgoing).unwrap();
    let out = memd(&root.path().join("alice"), &["check", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["handed_over"], "{report}");
    assert_eq!(write_to(&d.base, "alice", "Alice moved her hives").0, 503);
    let (code, taken) = admin.post("/v1/takeover/alice", "");
    assert_eq!((code, &taken["moved_in"]), (200, &json!(false)), "{taken}");
    assert_eq!(write_to(&d.base, "alice", "Alice moved her hives").0, 200);
    d.stop();
    assert_checks_clean(&root.path().join("alice"), "taken back");
}

/// A handover of alice at the daemon at `daemon`, asked while a run
/// waits on `llm`, waits for the run, and refuses a write meanwhile.
fn a_handover_waits_for_the_run_in_flight_and_refuses_writes_meanwhile(
    daemon: &str,
    llm: &Scripted,
) {
    let base = daemon.to_string();
    let run_started = std::time::Instant::now();
    let consolidation = std::thread::spawn(move || {
        let admin = Http::at(&base, Some("daemon-token"));
        let r = admin.post(
            "/v1/m/alice/consolidate",
            json!({"force": true}).to_string(),
        );
        (r, std::time::Instant::now())
    });
    wait_until("the run asked the LLM", || {
        !llm.requests.lock().unwrap().is_empty()
    });
    let base = daemon.to_string();
    let handover = std::thread::spawn(move || {
        let r = Http::at(&base, Some("daemon-token")).post("/v1/handover/alice", "");
        (r, std::time::Instant::now())
    });
    std::thread::sleep(Duration::from_millis(500));
    let (code, retry, body) = write_to(daemon, "alice", "Alice moved her hives");
    assert_eq!((code, retry.as_deref()), (503, Some("1")), "{body}");
    assert_eq!(body["kind"], "busy", "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("being moved"),
        "{body}"
    );
    let (ran, ran_at) = consolidation.join().unwrap();
    let (handed, handed_at) = handover.join().unwrap();
    assert_eq!(
        (ran.0, &ran.1["applied"]["add"]),
        (200, &json!(2)),
        "{ran:?}"
    );
    assert_eq!(handed.0, 200, "{handed:?}");
    assert!(handed_at >= ran_at && ran_at - run_started >= Duration::from_secs(3));
    assert_eq!(handed.1["held"], true, "{handed:?}");
    assert!(handed.1["bytes"].as_u64().unwrap() > 0, "{handed:?}");
}

/// After alice's handover her files, the run's entries among them, wait
/// in `outgoing`, and the daemon at `daemon` over `root` refuses her: a
/// write does not make her anew, and her own token opens neither
/// operator route.
fn the_files_wait_and_the_node_refuses_the_memory(
    root: &std::path::Path,
    daemon: &str,
    admin: &Http,
    outgoing: &std::path::Path,
) {
    let entries = |dir: &std::path::Path| {
        let doc = memd::entries::Document::read(&dir.join("consolidated/memory.md")).unwrap();
        doc.entries().count()
    };
    assert_eq!(
        entries(outgoing),
        2,
        "the run in flight wrote before the handover"
    );
    let (code, _, body) = write_to(daemon, "alice", "Alice moved her hives");
    assert_eq!(code, 503, "{body}");
    assert!(
        body["error"].as_str().unwrap().contains("was moved"),
        "{body}"
    );
    assert!(!root.join("alice").exists(), "a write made it anew");
    let (_, list) = admin.get("/v1/memories");
    assert_eq!(list["moved"], json!(["alice"]), "{list}");
    let alice = Http::at(daemon, Some("alice-token"));
    assert_eq!(alice.post("/v1/handover/alice", "").0, 401);
    assert_eq!(alice.post("/v1/takeover/alice", "").0, 401);
}

/// Another root, with `opts` and the LLM at `llm`, takes alice over from
/// a copy of `outgoing` and serves every fact and entry.
fn another_node_takes_it_over_from_a_copy(
    llm: &str,
    opts: &memd::server::Options,
    outgoing: &std::path::Path,
) {
    let other = root_with_slow_llm(llm);
    let d2 = start_root(other.path(), opts.clone());
    let admin2 = Http::at(&d2.base, Some("daemon-token"));
    assert_eq!(admin2.post("/v1/takeover/alice", "").0, 404, "no copy yet");
    copy_dir(outgoing, &other.path().join(".memd/incoming/alice"));
    let (code, taken) = admin2.post("/v1/takeover/alice", "");
    assert_eq!((code, &taken["moved_in"]), (200, &json!(true)), "{taken}");
    assert_eq!(write_to(&d2.base, "alice", "Alice moved her hives").0, 200);
    let (_, status) = admin2.get("/v1/m/alice/status");
    assert_eq!(
        (status["facts"].as_u64(), status["entries"].as_u64()),
        (Some(3), Some(2)),
        "{status}"
    );
    d2.stop();
}

/// `memd serve --root` over `root`, stopping for good at failpoint `step`
/// (killed when dropped, should a test fail before it kills it); its
/// port.
fn paused_root_daemon(root: &std::path::Path, step: &str) -> (Daemon, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let daemon = Daemon {
        child: std::process::Command::new(memd_bin())
            .args(["serve", "--root"])
            .arg(root)
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("MEMD_PAUSE_AT", step)
            .env_remove("MEMD_TOKEN")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
        base: format!("http://127.0.0.1:{port}"),
    };
    wait_until("the daemon answers", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    (daemon, port)
}

/// Post `body` (JSON, or nothing) to `path` of the paused daemon `d`,
/// which stops at `step` while it holds the request (never answered);
/// then SIGKILL it there.
fn kill_at(d: &mut Daemon, root: &std::path::Path, (path, body): (&str, &str), step: &str) {
    let (base, path, body) = (d.base.clone(), path.to_string(), body.to_string());
    let poster = std::thread::spawn(move || {
        let json: &[&str] = match body.is_empty() {
            true => &[],
            false => &["Content-Type: application/json"],
        };
        raw_status(&base, "POST", &path, json, &body)
    });
    let marker = root.join(format!(".memd/paused-at-{step}"));
    wait_until("the daemon pauses", || {
        assert!(!poster.is_finished(), "answered: no pause");
        marker.exists()
    });
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    let _ = poster.join();
    std::fs::remove_file(marker).unwrap();
}

/// The problems `memd check` finds in memory `dir`, by kind.
fn problem_kinds(dir: &std::path::Path) -> Vec<String> {
    let out = memd(dir, &["check", "--json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let problems = report["problems"].as_array().unwrap();
    problems
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect()
}

/// A daemon SIGKILLed in the middle of a handover (its mark written, the
/// directory not yet moved out) or of a takeover (the copy moved in, the
/// mark of an earlier move away not yet lifted) leaves the memory refused
/// where it is, and said by `memd check`; the same route sent again
/// finishes the step, and no fact is lost.
#[test]
fn a_move_killed_midway_leaves_its_memory_refused_and_the_same_step_again_finishes_it() {
    let bees = json!({ "text": "Alice keeps bees" }).to_string();
    // Killed in the handover.
    let a = root_dir();
    let (mut daemon, _) = paused_root_daemon(a.path(), "handover-marked");
    assert_eq!(
        Http::at(&daemon.base, None)
            .post("/v1/m/alice/facts", bees)
            .0,
        200
    );
    kill_at(
        &mut daemon,
        a.path(),
        ("/v1/handover/alice", ""),
        "handover-marked",
    );
    let d = start_root(a.path(), open_options(4));
    let c = Http::at(&d.base, None);
    let hives = json!({ "text": "Alice moved her hives" }).to_string();
    assert_eq!(c.post("/v1/m/alice/facts", hives.clone()).0, 503);
    assert_eq!(problem_kinds(&a.path().join("alice")), ["handed_over"]);
    let (code, handed) = c.post("/v1/handover/alice", "");
    assert_eq!((code, &handed["held"]), (200, &json!(true)), "{handed}");
    assert!(!a.path().join("alice").exists());
    d.stop();
    let outgoing = a.path().join(".memd/outgoing/alice");

    // Killed in the takeover, on a node alice once moved away from.
    let b = root_dir();
    let (mut daemon, _) = paused_root_daemon(b.path(), "takeover-moved-in");
    let (code, marked) = Http::at(&daemon.base, None).post("/v1/handover/alice", "");
    assert_eq!((code, &marked["held"]), (200, &json!(false)), "{marked}");
    copy_dir(&outgoing, &b.path().join(".memd/incoming/alice"));
    kill_at(
        &mut daemon,
        b.path(),
        ("/v1/takeover/alice", ""),
        "takeover-moved-in",
    );
    let d = start_root(b.path(), open_options(4));
    let c = Http::at(&d.base, None);
    assert_eq!(c.post("/v1/m/alice/facts", hives.clone()).0, 503);
    assert_eq!(problem_kinds(&b.path().join("alice")), ["handed_over"]);
    let (code, taken) = c.post("/v1/takeover/alice", "");
    assert_eq!((code, &taken["moved_in"]), (200, &json!(false)), "{taken}");
    assert_eq!(c.post("/v1/m/alice/facts", hives).0, 200);
    let (_, status) = c.get("/v1/m/alice/status");
    assert_eq!(status["facts"], 2, "{status}");
    d.stop();
    assert_checks_clean(&b.path().join("alice"), "a takeover finished after a kill");
}
