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
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    // Killed when dropped, should the test fail before it kills it.
    let mut daemon = Daemon {
        child: std::process::Command::new(memd_bin())
            .args(["serve", "--root"])
            .arg(root.path())
            .args(["--listen", &format!("127.0.0.1:{port}")])
            .env("MEMD_PAUSE_AT", "memory-created")
            .env_remove("MEMD_TOKEN")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
        base: base.clone(),
    };
    wait_until("the daemon answers", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let body = json!({ "text": "Alice keeps bees" }).to_string();
    // Never answered: the daemon is killed while it holds the request.
    let poster = std::thread::spawn(move || {
        let json = ["Content-Type: application/json"];
        raw_status(&base, "POST", "/v1/m/alice/facts", &json, &body)
    });
    let marker = root.path().join(".memd/paused-at-memory-created");
    wait_until("the daemon pauses making alice", || {
        assert!(!poster.is_finished(), "the post was answered: no pause");
        marker.exists()
    });
    daemon.child.kill().unwrap();
    daemon.child.wait().unwrap();
    let _ = poster.join();
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
