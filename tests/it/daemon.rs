//! `memd serve` and `memd mcp`, driven from outside as a client would.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use memd::Layout;
use serde_json::{Value, json};

use crate::consolidate::add;
use crate::support::*;

/// A daemon child process, killed when dropped.
struct Daemon {
    child: Child,
    base: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn write_config(layout: &Layout, llm_url: Option<&str>, extra: &str) {
    let mut toml = String::from(
        "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\nmin_similarity = 0.0\n",
    );
    toml.push_str(extra);
    if let Some(url) = llm_url {
        toml.push_str(&format!(
            "[llm]\nbase_url = \"{url}\"\nmodel = \"scripted\"\nmax_attempts = 1\ntimeout_seconds = 30\n"
        ));
    }
    std::fs::write(layout.config_file(), toml).unwrap();
}

fn spawn_serve(layout: &Layout, listen: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memd"));
    cmd.arg("--dir")
        .arg(&layout.root)
        .args(["serve", "--listen", listen])
        .env_remove("MEMD_DIR")
        .env_remove("MEMD_TOKEN")
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().unwrap()
}

/// Start a daemon and wait until it has written its address.
fn start(layout: &Layout, env: &[(&str, &str)]) -> Daemon {
    let mut child = spawn_serve(layout, "127.0.0.1:0", env);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(info) = memd::daemon::running(layout)
            && info.pid == child.id()
        {
            return Daemon {
                child,
                base: format!("http://{}", info.listen),
            };
        }
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            panic!("daemon exited ({status}): {err}");
        }
        assert!(Instant::now() < deadline, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A daemon inside the test process (axum's `examples/testing` way):
/// `memd::daemon::serve` on a runtime thread of its own, with a listener on
/// port 0 and a shutdown the test fires.
struct InProcess {
    base: String,
    stop: tokio::sync::oneshot::Sender<()>,
    thread: std::thread::JoinHandle<memd::Result<()>>,
}

/// Run `serve` (given a listener on port 0 and a shutdown future) on a
/// runtime thread of its own: the base URL, the shutdown trigger and the
/// thread.
fn on_port_zero<F, Fut>(serve: F) -> InProcess
where
    F: FnOnce(tokio::net::TcpListener, tokio::sync::oneshot::Receiver<()>) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = memd::Result<()>>,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            serve(listener, stopped).await
        })
    });
    InProcess { base, stop, thread }
}

fn start_in_process(layout: &Layout) -> InProcess {
    let config = memd::config::Config::load(&layout.root).unwrap();
    let served = layout.clone();
    let d = on_port_zero(move |listener, stopped| async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        memd::daemon::serve(served, config, listener, None, shutdown).await
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while memd::daemon::running(layout).is_none() {
        assert!(!d.thread.is_finished(), "the daemon stopped while starting");
        assert!(Instant::now() < deadline, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

impl InProcess {
    /// Fire the shutdown and wait for the daemon to finish cleanly.
    fn stop(self) {
        let _ = self.stop.send(());
        self.thread.join().unwrap().unwrap();
    }
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run a future to completion from synchronous test code (a blocking
/// thread of the test's runtime, or no runtime at all).
fn run<F: std::future::Future>(f: F) -> F::Output {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => h.block_on(f),
        Err(_) => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f),
    }
}

/// A blocking client for the daemon's API: (status, body as JSON or text).
struct Http {
    base: String,
    token: Option<String>,
    client: reqwest::Client,
}

impl Http {
    fn new(d: &Daemon, token: Option<&str>) -> Http {
        Http::at(&d.base, token)
    }

    fn at(base: &str, token: Option<&str>) -> Http {
        Http {
            base: base.to_string(),
            token: token.map(String::from),
            client: reqwest::Client::new(),
        }
    }

    fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<reqwest::Body>,
    ) -> (u16, String) {
        run(async {
            let mut req = self.client.request(method, format!("{}{path}", self.base));
            if let Some(t) = &self.token {
                req = req.bearer_auth(t);
            }
            if let Some(b) = body {
                req = req.header("content-type", "application/json").body(b);
            }
            let resp = req.send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.text().await.unwrap())
        })
    }

    fn get(&self, path: &str) -> (u16, Value) {
        let (s, t) = self.send(reqwest::Method::GET, path, None);
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let (s, t) = self.send(reqwest::Method::POST, path, Some(body.into()));
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    fn delete(&self, path: &str) -> u16 {
        self.send(reqwest::Method::DELETE, path, None).0
    }
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
        assert!(hits[0]["text"].as_str().unwrap().contains("Bubbles"), "{hits}");

        // Bad requests: a clear JSON error, nothing written.
        let (code, msg) = c.post("/v1/facts", json!({"text": ""}).to_string());
        assert_eq!(code, 400);
        assert!(msg["error"].as_str().unwrap().contains("empty"), "{msg}");
        assert_eq!(c.post("/v1/facts", "{not json").0, 400);
        let big = json!({ "text": "x".repeat(2 << 20) }).to_string();
        // Its own client: the server closes a connection whose body it
        // refused, which a pooled connection would trip over next time.
        assert_eq!(Http::at(&base, None).post("/v1/facts", big).0, 413);
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
    assert!(memd::daemon::running(&served).is_none());
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
        assert!(memd::daemon::running(&layout).is_none());
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
                .collect();
            ids.iter().all(|id| srcs.contains(id))
        });
    })
    .await
    .unwrap();
}

type Mcp = (
    Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
);

/// `memd mcp` on `layout`, with its stdin and its stdout (line by line).
fn spawn_mcp(layout: &Layout) -> Mcp {
    spawn_mcp_with(&layout.root, &[])
}

/// `memd --dir DIR mcp ARGS…`.
fn spawn_mcp_with(dir: &std::path::Path, args: &[&str]) -> Mcp {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memd"))
        .arg("--dir")
        .arg(dir)
        .arg("mcp")
        .args(args)
        .env_remove("MEMD_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    (child, stdin, stdout)
}

#[test]
fn mcp_speaks_json_rpc_over_stdio() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut ask = |msg: Value| -> Option<Value> {
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        msg.get("id")?;
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        Some(serde_json::from_str(&line).unwrap())
    };
    let init = ask(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}))
    .unwrap();
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "memd");
    assert!(ask(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_none());
    let list = ask(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).unwrap();
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["remember", "recall", "forget", "core_memory", "consolidate"]
    );
    for t in list["result"]["tools"].as_array().unwrap() {
        assert_eq!(t["inputSchema"]["type"], "object", "{t}");
    }
    let r = ask(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "remember", "arguments": {"text": "Prefers aisle seats on trains", "session": "mcp"}}}))
    .unwrap();
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("remembered as ")
    );
    let r = ask(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "which seats on trains", "k": 3}}}))
    .unwrap();
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("aisle seats"),
        "{r}"
    );
    let r = ask(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "remember", "arguments": {}}}))
    .unwrap();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let r = ask(json!({"jsonrpc": "2.0", "id": 6, "method": "no/such"})).unwrap();
    assert_eq!(r["error"]["code"], -32601);
    let r = ask(json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "core_memory", "arguments": {}}}))
    .unwrap();
    assert!(
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("memd:begin")
    );
    // MEMORY.md is a resource too.
    assert!(
        init["result"]["capabilities"]["resources"].is_object(),
        "{init}"
    );
    let r = ask(json!({"jsonrpc": "2.0", "id": 8, "method": "resources/list"})).unwrap();
    let uri = r["result"]["resources"][0]["uri"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(uri, "memd://MEMORY.md");
    let r = ask(
        json!({"jsonrpc": "2.0", "id": 9, "method": "resources/read",
        "params": {"uri": uri}}),
    )
    .unwrap();
    let text = r["result"]["contents"][0]["text"].as_str().unwrap();
    assert_eq!(text, std::fs::read_to_string(layout.memory_md()).unwrap());
    let r = ask(
        json!({"jsonrpc": "2.0", "id": 10, "method": "resources/read",
        "params": {"uri": "memd://nothing"}}),
    )
    .unwrap();
    assert_eq!(r["error"]["code"], -32002, "{r}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let (facts, _) = memd::archive::read_all(&layout).unwrap();
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0].session.as_deref(), Some("mcp"));
}

/// One raw HTTP/1.1 request (headers as given, no others but
/// `Connection: close`); the status code.
fn raw_status(base: &str, method: &str, path: &str, headers: &[&str], body: &str) -> u16 {
    use std::io::Read;
    let addr = base.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    for h in headers {
        req.push_str(&format!("{h}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    s.write_all(req.as_bytes()).unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    reply.split(' ').nth(1).unwrap().parse().unwrap()
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

/// One line of bytes that is not UTF-8, or one too long to read, gets a
/// parse error and the server goes on; a MEMORY.md that is not UTF-8 is a
/// clear error to the model, never an empty memory.
#[test]
fn mcp_answers_bad_bytes_with_a_parse_error_and_goes_on() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let mut md = std::fs::read(layout.memory_md()).unwrap();
    md.extend_from_slice(b"Caf\xe9 notes kept by hand\n");
    std::fs::write(layout.memory_md(), &md).unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut reply = || -> Value {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"p\xffing\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let long = vec![b'x'; 5 << 20];
    stdin.write_all(&long).unwrap();
    stdin
        .write_all(b"\n{\"jsonrpc\": \"2.0\", \"id\": 2, \"method\": \"ping\"}\n")
        .unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["error"]["code"], -32700, "{r}");
    let r = reply();
    assert_eq!(r["id"], 2, "{r}");
    assert!(r["result"].is_object(), "{r}");

    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "core_memory", "arguments": {}}});
    writeln!(stdin, "{call}").unwrap();
    stdin.flush().unwrap();
    let r = reply();
    assert_eq!(r["result"]["isError"], true, "{r}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("not UTF-8"), "{text}");
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(std::fs::read(layout.memory_md()).unwrap(), md);
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
    let err = memd::index::Index::open(&layout, &other)
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
    assert!(!hits.as_array().unwrap().is_empty(), "{hits}");
    drop(d);
}

#[test]
fn mcp_holds_its_index_and_still_sees_what_other_processes_write() {
    let (_t, layout) = memory_dir();
    write_config(&layout, None, "");
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&layout);
    let mut id = 0;
    let mut call = |tool: &str, args: Value| -> String {
        id += 1;
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}});
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let r: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(r["result"]["isError"], false, "{r}");
        r["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    call("remember", json!({"text": "Prefers aisle seats on trains"}));
    assert!(call("recall", json!({"query": "aisle seats"})).contains("aisle seats"));

    // Another process writes while the server holds its index open.
    let out = crate::support::memd(&layout.root, &["add", "Owns a red kayak called Flint"]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let found = call("recall", json!({"query": "red kayak Flint", "k": 3}));
    assert!(found.contains("kayak"), "{found}");
    let id_of = |text: &str| -> String {
        let start = text.find("[2").expect("a fact id") + 1;
        text[start..].split(']').next().unwrap().to_string()
    };
    let seats = id_of(&call("recall", json!({"query": "aisle seats", "k": 1})));
    let out = crate::support::memd(&layout.root, &["forget", &seats]);
    assert!(out.status.success(), "{}", crate::support::stderr(&out));
    let after = call("recall", json!({"query": "aisle seats on trains", "k": 5}));
    assert!(!after.contains("aisle seats"), "{after}");
    drop(stdin);
    child.wait().unwrap();
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
    let kinds: Vec<&str> = hits
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

/// `memd serve --root` inside the test process, on port 0.
fn start_root(root: &std::path::Path, opts: memd::daemon::many::Options) -> InProcess {
    let config = memd::config::Config::load(root).unwrap();
    let root = root.to_path_buf();
    on_port_zero(move |listener, stopped| async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        memd::daemon::many::serve(&root, config, listener, opts, shutdown).await
    })
}

/// A root whose memories use the lexical embedder and consolidate at once.
fn root_dir() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("memd.toml"),
        "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\n",
    )
    .unwrap();
    t
}

fn open_options(max_open: usize) -> memd::daemon::many::Options {
    memd::daemon::many::Options {
        token: None,
        tokens: Default::default(),
        max_open,
    }
}

fn texts(hits: &Value) -> Vec<String> {
    hits.as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap().to_string())
        .collect()
}

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
    assert!(memd::daemon::running(&memd::Layout::open(&alice).unwrap()).is_none());
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
    assert!(memd::memories::check_name("alice-2.work_x").is_ok());
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
        memd::daemon::running(&alice).is_some(),
        "a post opens nothing: alice is still the open one"
    );
    assert_eq!(texts(&c.get("/v1/m/bob/search?q=goats").1).len(), 1);
    let (_, list) = c.get("/v1/memories");
    assert_eq!(list["open"], 1, "{list}");
    assert!(
        memd::daemon::running(&alice).is_none(),
        "a closed memory is not served"
    );

    // Written while alice is closed: by the daemon, and by the CLI on its own.
    post("alice", "Alice plants lavender for the bees");
    post("bob", "Bob milks the goats");
    let out = memd(&alice.root, &["add", "Alice sells honey"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let found = texts(&c.get("/v1/m/alice/search?q=bees%20lavender%20honey&k=10").1);
    for t in [
        "Alice keeps bees",
        "Alice plants lavender for the bees",
        "Alice sells honey",
    ] {
        assert!(found.iter().any(|f| f == t), "{t} missing: {found:?}");
    }
    assert_eq!(texts(&c.get("/v1/m/bob/search?q=goats&k=10").1).len(), 2);
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

/// A tool call's (is error, text).
fn tool(
    stdin: &mut std::process::ChildStdin,
    stdout: &mut BufReader<std::process::ChildStdout>,
    name: &str,
    args: Value,
) -> (bool, String) {
    let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": args}});
    writeln!(stdin, "{msg}").unwrap();
    stdin.flush().unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let r: Value = serde_json::from_str(&line).unwrap();
    let text = r["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    (r["result"]["isError"] == json!(true), text.to_string())
}

#[test]
fn mcp_with_a_memory_name_serves_the_memories_under_its_directory() {
    let root = root_dir();
    let (mut child, mut stdin, mut stdout) = spawn_mcp_with(root.path(), &["--memory", "alice"]);
    let mut call = |name: &str, args: Value| tool(&mut stdin, &mut stdout, name, args);
    let (err, text) = call("remember", json!({"text": "Alice keeps bees"}));
    assert!(!err, "{text}");
    let (err, text) = call(
        "remember",
        json!({"text": "Bob keeps goats", "memory": "bob"}),
    );
    assert!(!err, "{text}");
    let (_, alice) = call("recall", json!({"query": "keeps", "k": 10}));
    assert!(
        alice.contains("bees") && !alice.contains("goats"),
        "{alice}"
    );
    let (_, bob) = call(
        "recall",
        json!({"query": "keeps", "k": 10, "memory": "bob"}),
    );
    assert!(bob.contains("goats") && !bob.contains("bees"), "{bob}");
    let (err, text) = call("recall", json!({"query": "x", "memory": "../alice"}));
    assert!(err && text.contains("memory name"), "{text}");
    let (err, text) = call("recall", json!({"query": "x", "memory": "carol"}));
    assert!(err && text.contains("no memory"), "{text}");
    assert!(!root.path().join("carol").exists());
    drop(stdin);
    child.wait().unwrap();

    // One memory directory: no `memory` to choose.
    let alice = Layout::open(root.path().join("alice")).unwrap();
    let (mut child, mut stdin, mut stdout) = spawn_mcp(&alice);
    let (err, text) = tool(
        &mut stdin,
        &mut stdout,
        "recall",
        json!({"query": "x", "memory": "bob"}),
    );
    assert!(err && text.contains("--memory"), "{text}");
    drop(stdin);
    child.wait().unwrap();
}
