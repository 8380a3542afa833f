//! Helpers for the tests that serve memd: a daemon as a child process or
//! inside the test process, an HTTP client, `memd mcp` on pipes.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use memd::Layout;
use serde_json::{Value, json};

/// A daemon child process, killed when dropped.
pub(crate) struct Daemon {
    pub(crate) child: Child,
    pub(crate) base: String,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn write_config(layout: &Layout, llm_url: Option<&str>, extra: &str) {
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

pub(crate) fn spawn_serve(layout: &Layout, listen: &str, env: &[(&str, &str)]) -> Child {
    let mut cmd = Command::new(crate::support::memd_bin());
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
pub(crate) fn start(layout: &Layout, env: &[(&str, &str)]) -> Daemon {
    let mut child = spawn_serve(layout, "127.0.0.1:0", env);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(info) = memd::server::running(layout)
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
/// `memd::server::serve` on a runtime thread of its own, with a listener on
/// port 0 and a shutdown the test fires.
pub(crate) struct InProcess {
    pub(crate) base: String,
    pub(crate) stop: tokio::sync::oneshot::Sender<()>,
    pub(crate) thread: std::thread::JoinHandle<memd::Result<()>>,
}

/// Run `serve` (given a listener on port 0 and a shutdown future) on a
/// runtime thread of its own: the base URL, the shutdown trigger and the
/// thread.
pub(crate) fn on_port_zero<F, Fut>(serve: F) -> InProcess
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

pub(crate) fn start_in_process(layout: &Layout) -> InProcess {
    let memory = memd::Memory::open(&layout.root).unwrap();
    let d = on_port_zero(move |listener, stopped| async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        let served = memd::server::Served::One(memory);
        memd::server::serve(served, listener, Default::default(), shutdown).await
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    while memd::server::running(layout).is_none() {
        assert!(!d.thread.is_finished(), "the daemon stopped while starting");
        assert!(Instant::now() < deadline, "daemon did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    d
}

impl InProcess {
    /// Fire the shutdown and wait for the daemon to finish cleanly.
    pub(crate) fn stop(self) {
        let _ = self.stop.send(());
        self.thread.join().unwrap().unwrap();
    }
}

pub(crate) fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Run a future to completion from synchronous test code (a blocking
/// thread of the test's runtime, or no runtime at all).
pub(crate) fn run<F: std::future::Future>(f: F) -> F::Output {
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
pub(crate) struct Http {
    pub(crate) base: String,
    pub(crate) token: Option<String>,
    pub(crate) client: reqwest::Client,
}

impl Http {
    pub(crate) fn new(d: &Daemon, token: Option<&str>) -> Http {
        Http::at(&d.base, token)
    }

    pub(crate) fn at(base: &str, token: Option<&str>) -> Http {
        Http {
            base: base.to_string(),
            token: token.map(String::from),
            client: reqwest::Client::new(),
        }
    }

    pub(crate) fn send(
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

    pub(crate) fn get(&self, path: &str) -> (u16, Value) {
        let (s, t) = self.send(reqwest::Method::GET, path, None);
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    pub(crate) fn post(&self, path: &str, body: impl Into<reqwest::Body>) -> (u16, Value) {
        let (s, t) = self.send(reqwest::Method::POST, path, Some(body.into()));
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    pub(crate) fn patch(&self, path: &str, body: Value) -> (u16, Value) {
        let body = reqwest::Body::from(body.to_string());
        let (s, t) = self.send(reqwest::Method::PATCH, path, Some(body));
        (s, serde_json::from_str(&t).unwrap_or(Value::String(t)))
    }

    pub(crate) fn delete(&self, path: &str) -> u16 {
        self.send(reqwest::Method::DELETE, path, None).0
    }
}

pub(crate) type Mcp = (
    Child,
    std::process::ChildStdin,
    BufReader<std::process::ChildStdout>,
);

/// `memd mcp` on `layout`, with its stdin and its stdout (line by line).
pub(crate) fn spawn_mcp(layout: &Layout) -> Mcp {
    spawn_mcp_with(&layout.root, &[])
}

/// `memd --dir DIR mcp ARGS…`.
pub(crate) fn spawn_mcp_with(dir: &std::path::Path, args: &[&str]) -> Mcp {
    spawn_mcp_env(dir, args, &[])
}

/// `memd --dir DIR mcp ARGS…` with `env` set.
pub(crate) fn spawn_mcp_env(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Mcp {
    let mut child = Command::new(crate::support::memd_bin())
        .arg("--dir")
        .arg(dir)
        .arg("mcp")
        .args(args)
        .envs(env.iter().copied())
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

/// One raw HTTP/1.1 request (headers as given, no others but
/// `Connection: close`); the status code.
pub(crate) fn raw_status(
    base: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> u16 {
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

/// `memd serve --root` inside the test process, on port 0.
pub(crate) fn start_root(root: &std::path::Path, opts: memd::server::Options) -> InProcess {
    let config = memd::config::Config::load(root).unwrap();
    let dir = root.to_path_buf();
    on_port_zero(move |listener, stopped| async move {
        let shutdown = async move {
            let _ = stopped.await;
        };
        let served = memd::server::Served::Root { dir, config };
        memd::server::serve(served, listener, opts, shutdown).await
    })
}

/// A root whose memories use the lexical embedder and consolidate at once.
pub(crate) fn root_dir() -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    std::fs::write(
        t.path().join("memd.toml"),
        "[embedder]\nkind = \"lexical\"\n[consolidation]\nmin_facts = 1\nmin_hours = 0.0\n",
    )
    .unwrap();
    t
}

pub(crate) fn open_options(max_open: usize) -> memd::server::Options {
    memd::server::Options {
        token: None,
        tokens: Default::default(),
        max_open,
    }
}

/// The hits' texts of a `/v1/search` reply.
pub(crate) fn texts(found: &Value) -> Vec<String> {
    found["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["text"].as_str().unwrap().to_string())
        .collect()
}

/// A tool call's (is error, text).
pub(crate) fn tool(
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
