//! `memd bench serve-many`: one daemon (`memd serve --root`, a child
//! process) over many memories: its memory and file descriptors, the
//! first search of a cold memory, searches of a warm one, and posts spread
//! over every memory, with no acknowledged fact missing afterwards.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::{percentile, synthetic_fact};
use crate::Layout;
use crate::archive::{self, NewFact};
use crate::server::memories::layout_of;

/// What to load.
pub struct Load {
    pub memories: usize,
    pub facts: usize,
    pub max_open: usize,
    /// Memories whose first search is timed one by one.
    pub cold: usize,
    pub clients: usize,
    pub seconds: u64,
    pub embedder: String,
}

#[derive(Debug, Default, Serialize)]
pub struct ServeManyReport {
    pub memories: usize,
    pub facts_per_memory: usize,
    pub max_open: usize,
    pub embedder: String,
    pub setup_seconds: f64,
    pub cold_first_search_p50_ms: f64,
    pub cold_first_search_p99_ms: f64,
    pub warm_search_p50_ms: f64,
    pub warm_search_p99_ms: f64,
    pub clients: usize,
    pub posts: usize,
    pub posts_per_second: f64,
    pub post_p50_ms: f64,
    pub post_p99_ms: f64,
    /// One search of every memory, two at a time: every index built.
    pub all_searched_seconds: f64,
    pub rss_mb: f64,
    pub rss_peak_mb: f64,
    pub open_fds: usize,
    pub open_fds_peak: usize,
    pub errors: usize,
    pub facts_missing: usize,
}

fn name(i: usize) -> String {
    format!("m{i:05}")
}

/// The memories under `root`, each with `facts` facts in its archive.
fn populate(root: &Path, load: &Load) -> Result<()> {
    std::fs::write(
        Layout::new(root).config_file(),
        format!(
            "[embedder]\nkind = \"{}\"\n[consolidation]\ninterval_seconds = 86400\n",
            load.embedder
        ),
    )?;
    for i in 0..load.memories {
        let layout = layout_of(root, &name(i), true)?;
        let facts: Vec<NewFact> = (0..load.facts)
            .map(|f| NewFact {
                text: synthetic_fact(i * 7919 + f),
                ..Default::default()
            })
            .collect();
        archive::append(&layout, "2026-11-20", "10:00:00", &facts)?;
    }
    Ok(())
}

/// The process's resident and peak resident memory (MB), and open files.
fn usage(pid: u32) -> (f64, f64, usize) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kb = |key: &str| -> f64 {
        let line = status.lines().find(|l| l.starts_with(key));
        let n = line.and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok());
        n.unwrap_or(0.0) / 1024.0
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    (kb("VmRSS:"), kb("VmHWM:"), fds)
}

/// One search of memory `i`: its time, or `None` on an error.
async fn search(http: &reqwest::Client, base: &str, i: usize) -> Option<Duration> {
    let t = Instant::now();
    let url = format!("{base}/v1/m/{}/search", name(i));
    let r = http.get(url).query(&[("q", "planning a trip"), ("k", "8")]);
    let ok = r.send().await.ok()?.status().is_success();
    ok.then(|| t.elapsed())
}

/// Posts from `clients` clients for `seconds`, spread over every memory:
/// latencies, acknowledged (memory, id) pairs, errors.
async fn posts(base: &str, load: &Load) -> (Vec<Duration>, Vec<(usize, String)>, usize) {
    let until = Instant::now() + Duration::from_secs(load.seconds);
    let tasks: Vec<_> = (0..load.clients)
        .map(|c| {
            let (base, memories, clients) = (base.to_string(), load.memories, load.clients);
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                let (mut times, mut ids, mut errors) = (Vec::new(), Vec::new(), 0);
                let mut n = 0;
                while Instant::now() < until {
                    let m = (c + n * clients) % memories;
                    let t = Instant::now();
                    let text = format!("{} (client {c}, post {n})", synthetic_fact(n));
                    let r = http
                        .post(format!("{base}/v1/m/{}/facts", name(m)))
                        .json(&serde_json::json!({ "text": text }))
                        .send()
                        .await;
                    let v: Option<serde_json::Value> = match r {
                        Ok(resp) if resp.status().is_success() => resp.json().await.ok(),
                        _ => None,
                    };
                    match v.as_ref().and_then(|v| v["ids"][0].as_str()) {
                        Some(id) => {
                            times.push(t.elapsed());
                            ids.push((m, id.to_string()));
                        }
                        None => errors += 1,
                    }
                    n += 1;
                }
                (times, ids, errors)
            })
        })
        .collect();
    let (mut times, mut ids, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        if let Ok((t, i, e)) = t.await {
            times.extend(t);
            ids.extend(i);
            errors += e;
        }
    }
    times.sort();
    (times, ids, errors)
}

/// Acknowledged facts that are not in their memory's archive.
fn missing(root: &Path, ids: &[(usize, String)]) -> Result<usize> {
    let mut by_memory: std::collections::HashMap<usize, Vec<&str>> = Default::default();
    for (m, id) in ids {
        by_memory.entry(*m).or_default().push(id);
    }
    let mut missing = 0;
    for (m, ids) in by_memory {
        let layout = Layout::open(root.join(name(m)))?;
        let (facts, _) = archive::read_all(&layout)?;
        let stored: std::collections::HashSet<&str> = facts.iter().map(|f| f.id.as_str()).collect();
        missing += ids.iter().filter(|id| !stored.contains(*id)).count();
    }
    Ok(missing)
}

/// Run the whole load under a scratch directory in `parent`.
pub async fn serve_many(parent: &Path, load: &Load) -> Result<ServeManyReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let root = tmp.path();
    let t = Instant::now();
    populate(root, load)?;
    let mut r = ServeManyReport {
        memories: load.memories,
        facts_per_memory: load.facts,
        max_open: load.max_open,
        embedder: load.embedder.clone(),
        clients: load.clients,
        setup_seconds: t.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let max_open = load.max_open.to_string();
    let serve = [
        "serve".as_ref(),
        "--root".as_ref(),
        root.as_os_str(),
        "--max-open".as_ref(),
        max_open.as_ref(),
    ];
    let (mut child, base) = super::start_serve(&serve).await?;
    let http = reqwest::Client::new();
    let mut cold = Vec::new();
    for i in 0..load.cold.min(load.memories) {
        match search(&http, &base, i).await {
            Some(d) => cold.push(d),
            None => r.errors += 1,
        }
    }
    cold.sort();
    (r.cold_first_search_p50_ms, r.cold_first_search_p99_ms) =
        (percentile(&cold, 0.5), percentile(&cold, 0.99));
    let mut warm = Vec::new();
    for _ in 0..100 {
        warm.extend(search(&http, &base, 0).await);
    }
    warm.sort();
    (r.warm_search_p50_ms, r.warm_search_p99_ms) =
        (percentile(&warm, 0.5), percentile(&warm, 0.99));
    let started = Instant::now();
    let (times, ids, errors) = posts(&base, load).await;
    r.posts_per_second = times.len() as f64 / started.elapsed().as_secs_f64();
    (r.posts, r.post_p50_ms, r.post_p99_ms) = (
        times.len(),
        percentile(&times, 0.5),
        percentile(&times, 0.99),
    );
    r.errors += errors;
    let started = Instant::now();
    all_searched(&http, &base, load, child.id(), &mut r).await;
    r.all_searched_seconds = started.elapsed().as_secs_f64();
    (r.rss_mb, r.rss_peak_mb, r.open_fds) = usage(child.id());
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait()?;
    r.facts_missing = missing(root, &ids)?;
    Ok(r)
}

/// Search every memory once, two at a time, watching the daemon's open
/// files.
async fn all_searched(
    http: &reqwest::Client,
    base: &str,
    load: &Load,
    pid: u32,
    r: &mut ServeManyReport,
) {
    for pair in (0..load.memories).collect::<Vec<_>>().chunks(2) {
        let done = futures::future::join_all(pair.iter().map(|&i| search(http, base, i))).await;
        r.errors += done.iter().filter(|d| d.is_none()).count();
        if pair[0] % 50 == 0 {
            r.open_fds_peak = r.open_fds_peak.max(usage(pid).2);
        }
    }
}
