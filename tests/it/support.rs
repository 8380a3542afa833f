//! Helpers shared by the tests.

use std::path::Path;
use std::process::{Command, Output};

/// The `memd` binary the tests run: this tree's, or the one
/// `MEMD_TEST_BIN` names (to show that a regression test fails on an
/// older build: `MEMD_TEST_BIN=/path/to/old/memd cargo test … trust::`).
pub fn memd_bin() -> std::path::PathBuf {
    match std::env::var_os("MEMD_TEST_BIN") {
        Some(p) => p.into(),
        None => env!("CARGO_BIN_EXE_memd").into(),
    }
}

/// Run the real `memd` binary with `args` in memory directory `dir`.
pub fn memd(dir: &Path, args: &[&str]) -> Output {
    memd_with_stdin(dir, args, None)
}

pub fn memd_with_stdin(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(memd_bin());
    cmd.arg("--dir").arg(dir).args(args);
    cmd.env_remove("MEMD_DIR");
    cmd.env_remove("MEMD_LOG");
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn memd");
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            pipe.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().expect("memd runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh, initialised memory directory.
/// The newest day file of `dir`'s archive, as `YYYY-MM-DD`: the day a
/// fact added through the command line today was stated.
pub fn archive_day(dir: &Path) -> String {
    let mut days: Vec<String> = std::fs::read_dir(dir.join("archive"))
        .unwrap()
        .filter_map(|f| {
            f.ok()?
                .file_name()
                .to_str()?
                .strip_suffix(".md")
                .map(str::to_string)
        })
        .collect();
    days.sort();
    days.pop().expect("a day file")
}

pub fn memory_dir() -> (tempfile::TempDir, memd::Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let layout = memd::memory::init(tmp.path()).unwrap();
    (tmp, layout)
}

/// What the scripted HTTP server does with its N-th request (from 0).
#[derive(Clone)]
pub enum Reply {
    Json(serde_json::Value),
    Status(u16),
    /// An error status with a body.
    Error(u16, String),
    /// Answer after a delay (to trigger client timeouts).
    Slow(std::time::Duration, serde_json::Value),
}

/// A small scripted OpenAI-compatible server on 127.0.0.1: every POST gets
/// the reply `script` chooses for (request number, body). It records the
/// request bodies.
pub struct Scripted {
    pub url: String,
    pub requests: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

pub async fn scripted<F>(script: F) -> Scripted
where
    F: Fn(usize, &serde_json::Value) -> Reply + Send + Sync + 'static,
{
    use axum::response::IntoResponse;
    let requests = std::sync::Arc::new(std::sync::Mutex::new(Vec::<serde_json::Value>::new()));
    let script = std::sync::Arc::new(script);
    let reqs = requests.clone();
    let app = axum::Router::new().fallback(axum::routing::post(
        move |axum::Json(body): axum::Json<serde_json::Value>| {
            let reqs = reqs.clone();
            let script = script.clone();
            async move {
                let n = {
                    let mut r = reqs.lock().unwrap();
                    r.push(body.clone());
                    r.len() - 1
                };
                match script(n, &body) {
                    Reply::Json(v) => axum::Json(v).into_response(),
                    Reply::Status(s) => (
                        axum::http::StatusCode::from_u16(s).unwrap(),
                        "scripted failure",
                    )
                        .into_response(),
                    Reply::Error(s, body) => {
                        (axum::http::StatusCode::from_u16(s).unwrap(), body).into_response()
                    }
                    Reply::Slow(d, v) => {
                        tokio::time::sleep(d).await;
                        axum::Json(v).into_response()
                    }
                }
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Scripted {
        url: format!("http://{addr}/v1"),
        requests,
    }
}

/// A deterministic fake embedding of `dim` dimensions for `text`.
pub fn fake_vector(text: &str, dim: usize) -> Vec<f32> {
    let h = memd::text::short_hash(text, 16);
    (0..dim)
        .map(|i| {
            (u8::from_str_radix(&h[(i * 2) % 16..(i * 2) % 16 + 2], 16).unwrap() as f32) - 127.5
        })
        .collect()
}

/// An OpenAI embeddings reply for the request `body`.
pub fn embeddings_reply(body: &serde_json::Value, dim: usize) -> serde_json::Value {
    let inputs = body["input"].as_array().cloned().unwrap_or_default();
    let data: Vec<serde_json::Value> = inputs
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"index": i, "embedding": fake_vector(t.as_str().unwrap_or(""), dim)}))
        .collect();
    serde_json::json!({"object": "list", "data": data})
}

/// A copy of `example-memory-dir/` in a temp dir.
pub fn example_dir() -> (tempfile::TempDir, memd::Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("example");
    memd::layout::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("example-memory-dir"),
        &dir,
    )
    .unwrap();
    let layout = memd::Layout::open(&dir).unwrap();
    (tmp, layout)
}

/// An OpenAI chat-completion reply carrying `content`.
pub fn chat(content: impl Into<String>) -> serde_json::Value {
    serde_json::json!({
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content.into()}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20}
    })
}

/// The first user message of a chat request (the prompt memd built).
pub fn prompt_of(body: &serde_json::Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The (alias, text) pairs a consolidation or promotion prompt lists with
/// the alias prefix `prefix` (`'F'` facts, `'E'` entries).
pub fn listed(prompt: &str, prefix: char) -> Vec<(String, String)> {
    // The real input comes last, after any worked example.
    let at = prompt.rfind("ENTRIES:").unwrap_or(0);
    prompt[at..]
        .lines()
        .filter_map(|l| {
            let alias: String = l.chars().take_while(|c| *c != ' ').collect();
            let digits = alias.strip_prefix(prefix)?;
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let bracket = l.find(']')?;
            let at = l[bracket..].find(": ")? + bracket + 2;
            Some((alias, l[at..].to_string()))
        })
        .collect()
}

/// The alias of the first listed item whose text contains `needle`.
pub fn alias_of(prompt: &str, prefix: char, needle: &str) -> Option<String> {
    listed(prompt, prefix)
        .into_iter()
        .find(|(_, t)| t.contains(needle))
        .map(|(a, _)| a)
}

/// A consolidation reply that ADDs every listed fact as it is.
pub fn add_every_fact(body: &serde_json::Value) -> serde_json::Value {
    let ops: Vec<serde_json::Value> = listed(&prompt_of(body), 'F')
        .into_iter()
        .map(|(a, t)| serde_json::json!({"op": "ADD", "text": t, "from": [a]}))
        .collect();
    chat(serde_json::json!({ "ops": ops }).to_string())
}

/// Whether a chat request is a promotion (not a consolidation) prompt.
pub fn is_promotion(body: &serde_json::Value) -> bool {
    prompt_of(body).contains("You choose what an AI agent")
}

/// A promotion reply that promotes every listed entry as it is.
pub fn promote_every_entry(body: &serde_json::Value) -> serde_json::Value {
    let lines: Vec<serde_json::Value> = listed(&prompt_of(body), 'E')
        .into_iter()
        .map(|(a, t)| serde_json::json!({"id": a, "line": t}))
        .collect();
    chat(serde_json::json!({ "lines": lines }).to_string())
}

/// Whether a chat request is the second look at an ADD (`prompts/update.md`).
pub fn is_update_check(body: &serde_json::Value) -> bool {
    prompt_of(body).contains("makes one of the memory ENTRIES out of date")
}

/// A second-look reply naming `alias` (or "none").
pub fn outdated(alias: &str) -> serde_json::Value {
    chat(serde_json::json!({ "outdated": alias }).to_string())
}

/// The judge of tests about something else than its decisions: every fact
/// ADDed as it is, no entry out of date, every entry promoted.
pub fn faithful(body: &serde_json::Value) -> Reply {
    Reply::Json(if is_promotion(body) {
        promote_every_entry(body)
    } else if is_update_check(body) {
        outdated("none")
    } else {
        add_every_fact(body)
    })
}

/// `memd check` finds no problem in `dir` (the oracle every fault test
/// ends with).
/// Delete the entry `id` from the entries file `file`, as a person does
/// in an editor: its block, metadata line and text, goes.
pub fn delete_entry_by_hand(file: &Path, id: &str) -> std::io::Result<()> {
    let src = std::fs::read_to_string(file)?;
    let kept: Vec<&str> = src
        .split("\n\n")
        .filter(|b| !b.contains(&format!("\"id\":\"{id}\"")))
        .collect();
    std::fs::write(file, kept.join("\n\n"))
}

pub fn assert_checks_clean(dir: &Path, after: &str) {
    let out = memd(dir, &["check"]);
    assert!(
        out.status.success(),
        "memd check after {after}:\n{}{}",
        stdout(&out),
        stderr(&out)
    );
}

/// Run `memd ARGS` in `dir` with the failpoint `step` set, wait until it
/// stops there, and kill it with SIGKILL.
pub fn kill_at(dir: &Path, args: &[&str], step: &str) {
    assert!(pause_and_kill(dir, args, step), "memd exited before {step}");
}

/// [`kill_at`], for a command that may end before `step` (it had nothing
/// to do): whether it got there (and was killed).
pub fn pause_and_kill(dir: &Path, args: &[&str], step: &str) -> bool {
    let Some(mut child) = paused(dir, args, step) else {
        return false;
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let _ = std::fs::remove_file(dir.join(".memd").join(format!("paused-at-{step}")));
    true
}

/// Run memd with `args` until it stops at the failpoint `step`: the
/// process, stopped there for good (the caller kills it), or `None` when
/// it ended before getting there.
pub fn paused(dir: &Path, args: &[&str], step: &str) -> Option<std::process::Child> {
    let mut child = Command::new(memd_bin())
        .arg("--dir")
        .arg(dir)
        .args(args)
        .env("MEMD_PAUSE_AT", step)
        .env_remove("MEMD_DIR")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let marker = dir.join(".memd").join(format!("paused-at-{step}"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !marker.exists() {
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        assert!(std::time::Instant::now() < deadline, "never reached {step}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child)
}

/// The index's LanceDB table, opened behind memd's back (to set up what
/// another process or an older memd left).
pub async fn lance_table(layout: &memd::Layout) -> lancedb::Table {
    let lance = layout.index_dir().join("lance");
    let db = lancedb::connect(lance.to_str().unwrap())
        .execute()
        .await
        .unwrap();
    db.open_table("memory").execute().await.unwrap()
}

/// The memory at `layout` with `config`, on the system clock.
pub fn memory(layout: &memd::Layout, config: &memd::config::Config) -> memd::Memory {
    memd::Memory::new(layout.clone(), config.clone())
}

/// `files` of the real MiniLM model directory (`~/.cache/memd/...`,
/// fetched by the set-up), linked into `dir` (made, with any folder a
/// file's path names), so a test can leave some out or add its own.
pub fn link_model_files(dir: &Path, files: &[&str]) {
    let real = memd::embed::minilm::model_dir(&memd::config::Config::default().embedder);
    for f in files {
        let to = dir.join(f);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(real.join(f), to).unwrap();
    }
}
