//! memd past one machine (`deploy/`): `memd serve --root` nodes behind
//! HAProxy from Debian's package, on loopback, started by `deploy/up.sh`
//! as an operator starts them. Without `haproxy` these tests skip and say
//! why, except in CI (`CI=true`), where `scripts/install-haproxy.sh` has
//! installed it and a skip would be a test that cannot fail: there they
//! fail.
//!
//! The nodes embed with the lexical embedder: what is under test is where
//! requests go and what survives a node's crash, not the embedder (the
//! MiniLM path is tested everywhere else), and 1,000 memories' first
//! searches would otherwise embed for minutes on 2 cores.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serving::run;
use crate::support::memd_bin;

/// A deployment `deploy/up.sh` started in a temporary directory, stopped
/// (`deploy/down.sh`) when dropped.
struct Deployment {
    state: tempfile::TempDir,
    nodes: usize,
    url: String,
}

impl Drop for Deployment {
    fn drop(&mut self) {
        let _ = script("down.sh").arg(self.state.path()).status();
    }
}

/// The token every node of a test deployment asks for.
const TOKEN: &str = "deploy-test-token-5f1c";

fn script(name: &str) -> Command {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(name);
    let mut cmd = Command::new(path);
    cmd.env("MEMD", memd_bin()).env("MEMD_TOKEN", TOKEN);
    cmd
}

/// Whether HAProxy is installed; in CI its absence fails the test.
fn haproxy_here() -> bool {
    let found = Command::new("haproxy").arg("-v").output().is_ok()
        && Command::new("socat").arg("-V").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs scripts/install-haproxy.sh: haproxy and socat must be here"
        );
        eprintln!(
            "skipped: the deployment tests need Debian's haproxy and socat (scripts/install-haproxy.sh)"
        );
    }
    found
}

/// A base port with it and the `nodes` ports after it free on 127.0.0.1.
fn free_ports(nodes: usize) -> u16 {
    let first = (std::process::id() % 2_000) as u16;
    (0..2_000u16)
        .map(|i| 20_000 + (first + i) % 2_000 * 16)
        .find(|&base| {
            (0..=nodes as u16).all(|k| std::net::TcpListener::bind(("127.0.0.1", base + k)).is_ok())
        })
        .expect("a free run of ports")
}

/// `nodes` nodes behind HAProxy; `None` when HAProxy is not installed.
fn up(nodes: usize) -> Option<Deployment> {
    if !haproxy_here() {
        return None;
    }
    let state = tempfile::tempdir().unwrap();
    let template = state.path().join("template.toml");
    std::fs::write(&template, "[embedder]\nkind = \"lexical\"\n").unwrap();
    let port = free_ports(nodes);
    let out = script("up.sh")
        .arg(state.path())
        .arg(nodes.to_string())
        .arg(port.to_string())
        .env("MEMD_TEMPLATE", &template)
        .output()
        .unwrap();
    let d = Deployment {
        state,
        nodes,
        url: format!("http://127.0.0.1:{port}"),
    };
    assert!(out.status.success(), "deploy/up.sh: {out:?}");
    Some(d)
}

impl Deployment {
    fn node(&self, k: usize, what: &str) {
        let out = script("node.sh")
            .arg(self.state.path())
            .arg(k.to_string())
            .arg(what)
            .output()
            .unwrap();
        assert!(out.status.success(), "deploy/node.sh {k} {what}: {out:?}");
    }

    fn node_root(&self, k: usize) -> PathBuf {
        self.state.path().join(format!("node{k}"))
    }

    /// Each memory's name, with the nodes whose root holds it.
    fn placement(&self) -> BTreeMap<String, Vec<usize>> {
        let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for k in 1..=self.nodes {
            for e in std::fs::read_dir(self.node_root(k)).unwrap() {
                let e = e.unwrap();
                if e.path().join("archive").is_dir() {
                    let name = e.file_name().into_string().unwrap();
                    out.entry(name).or_default().push(k);
                }
            }
        }
        out
    }
}

/// One fact a client posts: to memory `name` (spelled in the path as
/// `path`), with its idempotency key.
#[derive(Clone)]
struct Post {
    name: String,
    path: String,
    text: String,
    key: String,
}

/// `name` as a careless or hostile client may spell it in a path: each
/// character's case flipped or percent-encoded (upper or lower hex), at
/// random from `seed`. memd reads every spelling as the same memory, so
/// HAProxy must send every one to the same node (it sent `%61lice` to
/// another node than `alice`, which made a second `alice` there).
fn spelled(name: &str, seed: u64) -> String {
    let mut x = seed;
    let mut next = || {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x >> 33
    };
    name.chars()
        .map(|c| match next() % 4 {
            0 => format!("%{:02X}", c as u32),
            1 => format!("%{:02x}", c as u32),
            2 => c.to_ascii_uppercase().to_string(),
            _ => c.to_string(),
        })
        .collect()
}

/// Send `p` through HAProxy, with its key and the token.
async fn send(http: &reqwest::Client, url: &str, p: &Post) -> reqwest::Result<reqwest::Response> {
    let body = json!({"text": p.text, "key": p.key});
    let to = format!("{url}/v1/m/{}/facts", p.path);
    http.post(to).bearer_auth(TOKEN).json(&body).send().await
}

/// Post `p` through HAProxy; whether memd acknowledged it (a 200).
async fn post(http: &reqwest::Client, url: &str, p: &Post) -> bool {
    match send(http, url, p).await {
        Ok(r) if r.status().is_success() => true,
        Ok(r) => {
            let status = r.status();
            let v: Value = r.json().await.unwrap_or_default();
            // HAProxy's answers are in memd's error shape (deploy/errors).
            assert!(v["kind"].is_string(), "{status}: {v}");
            false
        }
        Err(_) => false,
    }
}

/// 8 clients post `posts` round-robin; each post not acknowledged is
/// posted again (same key) until it is. Halfway, every client waits until
/// `kill` has run (so the second half meets what it did, however fast the
/// first half went); `revive` runs 4 s later, past HAProxy's retries of a
/// refused connection (3, a second apart: a node back within them is not
/// seen by clients at all). Returns how many posts failed at least once.
fn post_all(url: &str, posts: Vec<Post>, kill: impl FnOnce(), revive: impl FnOnce()) -> usize {
    let acked = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicUsize::new(0));
    let killed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let half = posts.len() / 16;
    let posts = Arc::new(posts);
    let clients: Vec<_> = (0..8)
        .map(|c| {
            let (url, posts) = (url.to_string(), posts.clone());
            let (acked, failed, killed) = (acked.clone(), failed.clone(), killed.clone());
            std::thread::spawn(move || {
                run(async move {
                    let http = reqwest::Client::new();
                    let deadline = Instant::now() + Duration::from_secs(120);
                    for (i, p) in posts.iter().skip(c).step_by(8).enumerate() {
                        while i == half && !killed.load(Ordering::Acquire) {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                        let mut first = true;
                        while !post(&http, &url, p).await {
                            if first {
                                failed.fetch_add(1, Ordering::Relaxed);
                                first = false;
                            }
                            assert!(Instant::now() < deadline, "{} never acknowledged", p.key);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        acked.fetch_add(1, Ordering::Relaxed);
                    }
                })
            })
        })
        .collect();
    while acked.load(Ordering::Relaxed) < half * 8 {
        std::thread::sleep(Duration::from_millis(5));
    }
    kill();
    killed.store(true, Ordering::Release);
    std::thread::sleep(Duration::from_secs(4));
    revive();
    for c in clients {
        c.join().unwrap();
    }
    failed.load(Ordering::Relaxed)
}

/// How many times each text is in the archive of memory `dir`.
fn said(dir: &Path) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for e in std::fs::read_dir(dir.join("archive")).unwrap() {
        let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
        for line in text.lines().filter_map(|l| l.strip_prefix("- ")) {
            let fact = line.split(" <!--").next().unwrap_or(line).trim();
            *out.entry(fact.to_string()).or_default() += 1;
        }
    }
    out
}

/// Three nodes behind HAProxy, 1,000 memories written by 8 clients (the
/// first fact of each by its name, the others by random spellings of it),
/// and one node SIGKILLed in the middle and started again 4 s later: every memory is on
/// exactly one node (a node that is down leaves the hash ring alone, so
/// no other node creates its memories anew), every acknowledged fact is
/// in its memory's archive once (a post HAProxy refused was written
/// nowhere; one sent again with its key was written once), search through
/// HAProxy finds them, so does each memory's web page, and `check` is
/// clean on every memory. Every node
/// asks for the token; a client without it writes nothing anywhere.
#[test]
fn three_nodes_behind_haproxy_keep_every_acknowledged_fact_through_a_node_kill() {
    let Some(d) = up(3) else { return };
    let posts: Vec<Post> = (0..3u64)
        .flat_map(|round| {
            (0..1_000u64).map(move |i| Post {
                name: format!("user-{i:04}"),
                path: match round {
                    0 => format!("user-{i:04}"),
                    _ => spelled(&format!("user-{i:04}"), i * 3 + round),
                },
                text: format!("User {i} keeps note {round} about bees"),
                key: format!("k-{i}-{round}"),
            })
        })
        .collect();
    let kill = || d.node(2, "kill");
    let failed = post_all(&d.url, posts.clone(), kill, || d.node(2, "start"));
    assert!(failed > 0, "no post met the killed node");
    // A client without the token, through HAProxy, writes nothing anywhere.
    run(async {
        let http = reqwest::Client::new();
        for i in 0..20 {
            let url = format!("{}/v1/m/{}/facts", d.url, spelled("intruder", i));
            let r = http.post(url).json(&json!({"text": "x"})).send().await;
            assert_eq!(r.unwrap().status(), 401);
        }
    });

    let placed = d.placement();
    assert_eq!(placed.len(), 1_000, "memories: {}", placed.len());
    for (name, nodes) in &placed {
        assert_eq!(nodes.len(), 1, "{name} is on nodes {nodes:?}");
    }
    for k in 1..=3 {
        let on = placed.values().filter(|n| n[0] == k).count();
        assert!(on > 200, "node {k} serves {on} of 1,000 memories");
    }
    for (name, nodes) in &placed {
        let texts = said(&d.node_root(nodes[0]).join(name));
        for p in posts.iter().filter(|p| &p.name == name) {
            assert_eq!(texts.get(&p.text), Some(&1), "{name}: {:?}", p.text);
        }
    }
    run(async {
        let http = reqwest::Client::new();
        for (name, _) in placed.iter().step_by(50) {
            let url = format!("{}/v1/m/{name}/search?q=bees&k=10", d.url);
            let sent = http.get(url).bearer_auth(TOKEN).send().await;
            let found: Value = sent.unwrap().json().await.unwrap();
            let hits = found["hits"].as_array().unwrap();
            assert_eq!(hits.len(), 3, "{name}: {found}");
        }
        // The memory's web page, by any spelling, is its node's.
        for (i, (name, _)) in placed.iter().step_by(100).enumerate() {
            let url = format!("{}/m/{}/", d.url, spelled(name, i as u64));
            let r = http.get(url).bearer_auth(TOKEN).send().await.unwrap();
            assert_eq!(r.status(), 200, "{name}'s page");
        }
        for name in placed.keys() {
            let url = format!("{}/v1/m/{name}/check", d.url);
            let r = http.post(url).bearer_auth(TOKEN).json(&json!({}));
            let r = r.send().await.unwrap();
            let report: Value = r.json().await.unwrap();
            let problems = report["problems"].as_array().unwrap();
            assert!(problems.is_empty(), "{name}: {report}");
        }
    });
}

impl Deployment {
    /// `deploy/move.sh` moves memory `name` to node `to`; its report.
    fn move_memory(&self, name: &str, to: usize) -> Value {
        let out = script("move.sh")
            .arg(self.state.path())
            .arg(name)
            .arg(to.to_string())
            .output()
            .unwrap();
        assert!(out.status.success(), "deploy/move.sh {name} {to}: {out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

/// What the writers of the move test saw.
#[derive(Default)]
struct Seen {
    acked: std::sync::Mutex<Vec<Post>>,
    /// Posts a node refused because their memory was moving or moved.
    moved: AtomicUsize,
}

/// Post `p` until memd acknowledges it (the same key each time), counting
/// refusals of a moving memory in `seen`.
async fn post_until_acked(http: &reqwest::Client, url: &str, p: &Post, seen: &Seen) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = send(http, url, p).await {
            let status = r.status();
            if status.is_success() {
                seen.acked.lock().unwrap().push(p.clone());
                return;
            }
            let retry = r.headers().get("retry-after").is_some();
            let v: Value = r.json().await.unwrap_or_default();
            assert_eq!(status, 503, "{}: {v}", p.key);
            assert!(retry && v["kind"] == "busy", "{v}");
            if v["error"].as_str().unwrap_or("").contains("moved") {
                seen.moved.fetch_add(1, Ordering::Relaxed);
            }
        }
        assert!(Instant::now() < deadline, "{} never acknowledged", p.key);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Three nodes behind HAProxy, 200 memories, 100 of them moved by
/// `deploy/move.sh` to another node (20 of those on to the third) while
/// 8 clients write: four of them to the memory being moved at that
/// moment, four to all of them. Every acknowledged fact is afterwards in
/// its memory's archive exactly once, on the one node that holds it and
/// that HAProxy sends it to (its `check`, through HAProxy, counts every
/// fact and finds no problem); no node keeps a handed-over copy, and the
/// writers met memories being moved (refused with nothing written, then
/// acknowledged at the new node).
#[test]
fn a_hundred_memories_move_between_nodes_while_eight_clients_write_and_lose_nothing() {
    let Some(d) = up(3) else { return };
    let names: Vec<String> = (0..200).map(|i| format!("mover-{i:03}")).collect();
    let seen = Arc::new(Seen::default());
    make_every_memory(&d.url, &names, &seen);
    let hot = Arc::new(std::sync::Mutex::new(names[0].clone()));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clients = start_writers(&d.url, &names, &seen, (&hot, &done));
    let mut placed: HashMap<String, usize> =
        d.placement().into_iter().map(|(n, k)| (n, k[0])).collect();
    let mut moves = Vec::new();
    for m in 0..120 {
        // 100 memories, the first 20 of them twice (on to the third node).
        let name = &names[(m % 100) * 2];
        *hot.lock().unwrap() = name.clone();
        std::thread::sleep(Duration::from_millis(20));
        let to = placed[name] % 3 + 1;
        let report = d.move_memory(name, to);
        assert_eq!(report["from"], placed[name], "{report}");
        placed.insert(name.clone(), to);
        moves.push(report);
    }
    done.store(true, Ordering::Release);
    for c in clients {
        c.join().unwrap();
    }
    eprintln!(
        "moves: {}",
        moves
            .iter()
            .map(|m| format!("{}ms/{}B", m["ms"], m["bytes"]))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let refused = seen.moved.load(Ordering::Relaxed);
    assert!(refused > 0, "no write met a memory being moved");

    let on_disk = d.placement();
    assert_eq!(on_disk.len(), 200);
    let acked = seen.acked.lock().unwrap();
    for (name, nodes) in &on_disk {
        assert_eq!(nodes, &vec![placed[name]], "{name}");
        let texts = said(&d.node_root(nodes[0]).join(name));
        let mine: Vec<&Post> = acked.iter().filter(|p| &p.name == name).collect();
        for p in &mine {
            assert_eq!(texts.get(&p.text), Some(&1), "{name}: {:?}", p.text);
        }
        assert_eq!(texts.values().sum::<usize>(), mine.len(), "{name}");
    }
    for k in 1..=3 {
        let outgoing = d.node_root(k).join(".memd/outgoing");
        let left = std::fs::read_dir(&outgoing).map_or(0, |r| r.count());
        assert_eq!(left, 0, "node {k} kept handed-over copies");
    }
    every_memory_checks_clean_through_haproxy(&d.url, &on_disk, &acked, &names[0]);
}

/// Memories `names` made through HAProxy at `url`, by a fact each,
/// acknowledged (in `seen`).
fn make_every_memory(url: &str, names: &[String], seen: &Seen) {
    run(async {
        let http = reqwest::Client::new();
        for (i, name) in names.iter().enumerate() {
            let p = Post {
                name: name.clone(),
                path: name.clone(),
                text: format!("Memory {name} was made"),
                key: format!("made-{i}"),
            };
            post_until_acked(&http, url, &p, seen).await;
        }
    });
}

/// Eight clients writing through HAProxy at `url` until `done` and 20
/// notes each: four to the memory `hot` names at the time, four to all of
/// `names`; each note acknowledged is in `seen`.
fn start_writers(
    url: &str,
    names: &[String],
    seen: &Arc<Seen>,
    (hot, done): (&Arc<Mutex<String>>, &Arc<AtomicBool>),
) -> Vec<std::thread::JoinHandle<()>> {
    (0..8u64)
        .map(|c| {
            let (url, names, seen) = (url.to_string(), names.to_vec(), seen.clone());
            let (hot, done) = (hot.clone(), done.clone());
            std::thread::spawn(move || {
                run(async move {
                    let http = reqwest::Client::new();
                    let mut i = 0u64;
                    while !done.load(Ordering::Acquire) || i < 20 {
                        let name = match c < 4 {
                            true => hot.lock().unwrap().clone(),
                            false => names[((i * 8 + c) % 200) as usize].clone(),
                        };
                        let p = Post {
                            path: spelled(&name, c * 1_000_003 + i),
                            text: format!("Client {c} wrote note {i} to {name}"),
                            key: format!("c{c}-{i}"),
                            name,
                        };
                        post_until_acked(&http, &url, &p, &seen).await;
                        i += 1;
                    }
                })
            })
        })
        .collect()
}

/// Every memory of `on_disk`, checked through HAProxy at `url`, counts
/// the facts `acked` says it was sent and finds no problem; a client
/// cannot move memory `first` through HAProxy.
fn every_memory_checks_clean_through_haproxy(
    url: &str,
    on_disk: &BTreeMap<String, Vec<usize>>,
    acked: &[Post],
    first: &str,
) {
    run(async {
        let http = reqwest::Client::new();
        for name in on_disk.keys() {
            let url = format!("{url}/v1/m/{name}/check");
            let r = http.post(url).bearer_auth(TOKEN).json(&json!({}));
            let report: Value = r.send().await.unwrap().json().await.unwrap();
            let facts = acked.iter().filter(|p| &p.name == name).count();
            assert_eq!(report["facts"], facts, "{name}: {report}");
            assert!(
                report["problems"].as_array().unwrap().is_empty(),
                "{name}: {report}"
            );
        }
        // A client cannot move a memory through HAProxy.
        let url = format!("{url}/v1/handover/{first}");
        let r = http.post(url).bearer_auth(TOKEN).send().await.unwrap();
        assert_eq!(r.status(), 403);
    });
}
