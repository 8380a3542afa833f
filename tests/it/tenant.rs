//! The tenant model of `memd serve --root` and `memd mcp --memory`: a
//! memory under a root is untrusted, and reaches nothing beyond itself.
//! The daemon runs as a child process, so each test here also runs
//! against an older build (`MEMD_TEST_BIN`); each failed on 9420bc9.

use std::io::{BufRead, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serving::{Http, raw_status, spawn_mcp_with};
use crate::support::memd_bin;

/// `memd serve --root DIR` as a child, killed when dropped.
struct RootDaemon {
    child: Child,
    base: String,
}

impl Drop for RootDaemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A root whose memories consolidate at once, their loop every second.
fn root() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("memd.toml"),
        "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\ninterval_seconds = 1\n",
    )
    .unwrap();
    t
}

fn serve_root(root: &Path, args: &[&str], env: &[(&str, &str)]) -> RootDaemon {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let mut cmd = Command::new(memd_bin());
    cmd.arg("--dir")
        .arg(root)
        .args(["serve", "--root"])
        .arg(root);
    cmd.args(["--listen", &listen]).args(args);
    cmd.env_remove("MEMD_DIR").env_remove("MEMD_TOKEN");
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = cmd.spawn().unwrap();
    let base = format!("http://{listen}");
    let deadline = Instant::now() + Duration::from_secs(60);
    while std::net::TcpStream::connect(&listen).is_err() {
        assert!(Instant::now() < deadline, "the daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    RootDaemon { child, base }
}

/// A TCP listener that records whatever reaches it.
fn tap() -> (String, std::sync::Arc<std::sync::Mutex<Vec<u8>>>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1", l.local_addr().unwrap());
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let into = seen.clone();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            let mut s = s;
            s.set_read_timeout(Some(Duration::from_millis(500))).ok();
            let mut buf = [0u8; 4096];
            while let Ok(n) = s.read(&mut buf) {
                if n == 0 {
                    break;
                }
                into.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        }
    });
    (url, seen)
}

#[test]
fn a_tenants_own_config_cannot_send_the_daemons_token_anywhere() {
    let r = root();
    let d = serve_root(r.path(), &[], &[("MEMD_TOKEN", "daemon-secret-7f3a")]);
    let c = Http::at(&d.base, Some("daemon-secret-7f3a"));
    let fact = |t: &str| json!({ "text": t }).to_string();
    assert_eq!(c.post("/v1/m/alice/facts", fact("Alice keeps bees")).0, 200);
    let (url, seen) = tap();
    let own = r.path().join("alice/memd.toml");
    let mut text = std::fs::read_to_string(&own).unwrap();
    text.push_str(&format!(
        "[llm]\nbase_url = \"{url}\"\nmodel = \"x\"\napi_key_env = \"MEMD_TOKEN\"\n"
    ));
    std::fs::write(&own, text).unwrap();
    let _ = c.post("/v1/m/alice/facts", fact("Alice likes jazz"));
    let (code, reply) = c.post(
        "/v1/m/alice/consolidate",
        json!({"force": true}).to_string(),
    );
    std::thread::sleep(Duration::from_secs(3)); // the loop's turn too
    let sent = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    assert!(
        !sent.contains("daemon-secret-7f3a"),
        "the token was sent: {sent}"
    );
    assert!(
        sent.is_empty(),
        "nothing reaches a tenant's endpoint: {sent}"
    );
    assert_eq!(code, 400, "{reply}");
    assert!(reply.to_string().contains("base_url"), "{reply}");
}

#[test]
fn a_memory_cannot_take_the_name_of_the_roots_own_files() {
    let r = root();
    std::fs::write(r.path().join("notes"), "a file of the root's").unwrap();
    let d = serve_root(r.path(), &[], &[]);
    for name in [
        "memd.toml",
        "MEMD.TOML",
        "tokens.toml",
        "daemon.json",
        "notes",
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
    let config = std::fs::read_to_string(r.path().join("memd.toml")).unwrap();
    assert!(config.starts_with("[embedder]"), "{config}");
    assert!(!r.path().join("memd.toml").is_dir());
    assert_eq!(
        std::fs::read_to_string(r.path().join("notes")).unwrap(),
        "a file of the root's"
    );
}

#[test]
fn another_casing_of_a_name_is_the_same_memory_and_needs_its_token() {
    let r = root();
    let tokens = r.path().join("tokens.toml");
    std::fs::write(&tokens, "alice = \"alice-token\"\n").unwrap();
    let d = serve_root(r.path(), &["--tokens", tokens.to_str().unwrap()], &[]);
    let fact = json!({"text": "Alice keeps bees"}).to_string();
    let none = Http::at(&d.base, None);
    for name in ["ALICE", "Alice", "aLiCe"] {
        let (code, _) = none.post(&format!("/v1/m/{name}/facts"), fact.clone());
        assert_eq!(code, 401, "{name}");
    }
    let alice = Http::at(&d.base, Some("alice-token"));
    assert_eq!(alice.post("/v1/m/Alice/facts", fact).0, 200);
    let names: Vec<String> = std::fs::read_dir(r.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| r.path().join(n).is_dir() && !n.starts_with('.'))
        .collect();
    assert_eq!(
        names,
        vec!["alice".to_string()],
        "(.memd holds the root's own)"
    );
}

#[test]
fn a_link_in_a_memory_reaches_neither_another_memory_nor_outside_the_root() {
    let r = root();
    let outside = tempfile::tempdir().unwrap();
    let d = serve_root(r.path(), &[], &[]);
    let c = Http::at(&d.base, None);
    let fact = |t: &str| json!({ "text": t }).to_string();
    assert_eq!(c.post("/v1/m/bob/facts", fact("Bob keeps goats")).0, 200);
    assert_eq!(c.post("/v1/m/alice/facts", fact("Alice keeps bees")).0, 200);
    // Alice's agent points her archive at Bob's.
    let archive = r.path().join("alice/archive");
    std::fs::rename(&archive, r.path().join("alice/old-archive")).unwrap();
    std::os::unix::fs::symlink("../bob/archive", &archive).unwrap();
    let (_, hits) = c.get("/v1/m/alice/search?q=goats&k=10");
    assert!(!hits.to_string().contains("goats"), "{hits}");
    let (code, _) = c.post("/v1/m/alice/facts", fact("Alice likes jazz"));
    assert_ne!(code, 200, "a write through the link is refused");
    let bob = std::fs::read_dir(r.path().join("bob/archive")).unwrap();
    let bob: String = bob
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(!bob.contains("jazz"), "{bob}");
    // A memory that is a link out of the root.
    std::os::unix::fs::symlink(outside.path(), r.path().join("carol")).unwrap();
    let (code, _) = c.post("/v1/m/carol/facts", fact("Carol keeps hens"));
    assert_eq!(code, 400);
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing outside"
    );
}

#[test]
fn a_memory_deleted_while_open_is_made_anew_and_every_acknowledged_write_is_in_its_files() {
    let r = root();
    let d = serve_root(r.path(), &[], &[]);
    let c = Http::at(&d.base, None);
    let fact = |t: &str| json!({ "text": t }).to_string();
    assert_eq!(c.post("/v1/m/alice/facts", fact("Alice keeps bees")).0, 200);
    assert_eq!(c.get("/v1/m/alice/search?q=bees").0, 200, "open");
    std::fs::remove_dir_all(r.path().join("alice")).unwrap();
    let mut acked = Vec::new();
    for t in ["Alice likes jazz", "Alice walks to work"] {
        let (code, reply) = c.post("/v1/m/alice/facts", fact(t));
        if code == 200 {
            acked.push(t);
        } else {
            assert!(code < 500, "{code} {reply}");
        }
    }
    let (code, hits) = c.get("/v1/m/alice/search?q=jazz&k=10");
    assert_eq!(code, 200, "{hits}");
    let days: String = std::fs::read_dir(r.path().join("alice/archive"))
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for t in &acked {
        assert!(days.contains(t), "acknowledged but not in the files: {t}");
    }
    assert!(!acked.is_empty(), "the memory is made anew");
    assert!(hits.to_string().contains("jazz"), "{hits}");
}

/// The lines `memd mcp` writes, read on a thread of their own, so a
/// missing reply is a timeout rather than a hang.
fn replies(
    out: std::io::BufReader<std::process::ChildStdout>,
) -> std::sync::mpsc::Receiver<String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in out.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// The next reply within a few seconds (`None`: none came).
fn reply_within(rx: &std::sync::mpsc::Receiver<String>) -> Option<Value> {
    let line = rx.recv_timeout(Duration::from_secs(5)).ok()?;
    Some(serde_json::from_str(&line).unwrap_or(Value::Null))
}

#[test]
fn every_mcp_message_that_needs_an_answer_gets_one_as_its_protocol_version_says() {
    let t = crate::trust::fresh();
    for (version, batches) in [("2025-06-18", false), ("2025-03-26", true)] {
        let (mut child, mut stdin, out) = spawn_mcp_with(t.path(), &[]);
        let out = replies(out);
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
        writeln!(stdin, "{init}").unwrap();
        assert!(reply_within(&out).is_some());
        for bad in [
            "[]",
            "5",
            "\"x\"",
            "null",
            "{}",
            "{\"jsonrpc\":\"2.0\",\"id\":3}",
        ] {
            writeln!(stdin, "{bad}").unwrap();
            let r = reply_within(&out).unwrap_or_else(|| panic!("no reply to {bad}"));
            assert_eq!(r["error"]["code"], -32600, "{bad}: {r}");
        }
        let batch = json!([
            {"jsonrpc": "2.0", "id": 7, "method": "ping"},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 8, "method": "tools/list"},
        ]);
        writeln!(stdin, "{batch}").unwrap();
        let r = reply_within(&out).expect("a batch is answered");
        match batches {
            true => {
                let ids: Vec<&Value> = r.as_array().unwrap().iter().map(|m| &m["id"]).collect();
                assert_eq!(ids, [&json!(7), &json!(8)], "{r}");
            }
            false => assert_eq!(r["error"]["code"], -32600, "{r}"),
        }
        drop(stdin);
        child.wait().unwrap();
    }
}

#[test]
fn mcp_under_a_root_refuses_a_fact_over_the_api_limit_and_a_memory_that_is_not_a_string() {
    let r = root();
    let (mut child, mut stdin, out) = spawn_mcp_with(r.path(), &["--memory", "alice"]);
    let out = replies(out);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    writeln!(stdin, "{init}").unwrap();
    assert!(reply_within(&out).is_some());
    let call = |args: Value| {
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "remember", "arguments": args}})
    };
    let big = "b".repeat(1_100_000);
    writeln!(stdin, "{}", call(json!({ "text": big }))).unwrap();
    let reply = reply_within(&out).expect("an answer");
    let refused = reply.get("error").is_some() || reply["result"]["isError"] == json!(true);
    let shown = reply.to_string().chars().take(200).collect::<String>();
    assert!(refused, "{shown}");
    writeln!(
        stdin,
        "{}",
        call(json!({ "text": "Alice keeps bees", "memory": 5 }))
    )
    .unwrap();
    let reply = reply_within(&out).expect("an answer");
    assert_eq!(reply["result"]["isError"], json!(true), "{reply}");
    drop(stdin);
    child.wait().unwrap();
    let written: usize = std::fs::read_dir(r.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path().join("archive").is_dir())
        .map(|e| std::fs::read_dir(e.path().join("archive")).unwrap().count())
        .sum();
    assert_eq!(written, 0, "nothing written");
}
