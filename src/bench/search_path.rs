//! `memd bench search-path`: one search, and one append → searchable,
//! broken into their steps as the daemon runs them, at each
//! table size. The daemon is served from this process (`server::serve`,
//! the code `memd serve` runs) with its steps recorded
//! ([`crate::steps`]), and searched over HTTP on 127.0.0.1 with
//! keep-alive, as a client would; the HTTP hop is what the client waited
//! less the handler's time. With `--via mcp` the requests go to `memd
//! mcp`'s handler in this process instead ([`super::path_client`]). The
//! sizes grow in one memory: each adds the facts up to it, and the index
//! embeds only those.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use super::path_client::{Client, Via};
use super::{WORDS, percentile, synthetic_fact};
use crate::memory::init;
use crate::server::{self, Options, Served};
use crate::steps::{self, Span, record, take};
use crate::{Layout, Memory};

/// One step's figures.
#[derive(Debug, Serialize)]
pub struct Step {
    pub step: String,
    /// How many times it ran (a step that runs only sometimes, as the
    /// embedding of a full-text hit the vector list did not hold, shows it).
    pub runs: usize,
    pub p50_ms: f64,
    pub p90_ms: f64,
}

/// One table size's figures.
#[derive(Debug, Serialize)]
pub struct PathReport {
    pub facts: usize,
    pub searches: usize,
    pub search_p50_ms: f64,
    pub search_p90_ms: f64,
    /// Each step of the searches, in the order a search runs them.
    pub search_steps: Vec<Step>,
    /// `POST /v1/facts`, then a search that must find the fact.
    pub append_to_searchable_p50_ms: f64,
    pub append_steps: Vec<Step>,
    /// The median append → searchable, step by step: what ran when, from
    /// the post's sending to the reply that found the fact
    /// ([`median_timeline`]).
    pub append_timeline: Vec<Moment>,
}

/// One run of a step in a timeline: when it began and ended, in ms since
/// the post was sent.
#[derive(Debug, Serialize)]
pub struct Moment {
    pub step: &'static str,
    pub from_ms: f64,
    pub to_ms: f64,
}

/// What `bench search-path` is asked to do.
pub struct PathLoad<'a> {
    pub sizes: &'a [usize],
    /// Facts to a day file (100: a person's archive; all of them: what
    /// `memd add --stdin` of a whole corpus writes).
    pub per_day: usize,
    pub requests: super::Requests<'a>,
    pub via: Via,
}

/// The steps in the order a search runs them (those of a sync with
/// something to write come from the appends).
const ORDER: &[&str] = &[
    "HTTP handler",
    "MCP call",
    "append",
    "sync",
    "sync: fingerprints",
    "sync: lock",
    "sync: latest version",
    "sync: marks",
    "sync: rows of the files",
    "sync: rows in the table",
    "sync: embedding",
    "sync: table delete",
    "sync: table add",
    "sync: words and hashes",
    "sync: table indices",
    "query embedding",
    "query vector",
    "vector search",
    "full text (BM25)",
    "full-text hits' vectors",
    "tombstones read",
    "fusion",
    "collapse and finish",
    "recall log",
    "reply serialised",
];

/// Run the load at each size, in one memory under `parent`.
pub async fn search_path(parent: &Path, load: &PathLoad<'_>) -> Result<Vec<PathReport>> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = init(tmp.path())?;
    std::fs::write(
        layout.config_file(),
        format!(
            "[embedder]\nkind = \"{}\"\n[consolidation]\ninterval_seconds = 86400\n",
            load.requests.embedder
        ),
    )?;
    let mut written = 0;
    let mut out = Vec::new();
    for &size in load.sizes {
        grow(&layout, written, size, load.per_day)?;
        written = written.max(size);
        out.push(one_size(&layout, size, load).await?);
    }
    record(false);
    Ok(out)
}

/// Add facts `from..to` to the archive, `per_day` to a day file, today's
/// first and then back in time (the daemon indexes them when it starts).
fn grow(layout: &Layout, from: usize, to: usize, per_day: usize) -> Result<()> {
    use std::io::Write;
    // The first facts are today's, where the appends go too.
    let today = chrono::Local::now().date_naive();
    for i in from..to {
        let day = (today - chrono::Duration::days((i / per_day.max(1)) as i64)).format("%Y-%m-%d");
        let path = layout.archive_dir().join(format!("{day}.md"));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        if f.metadata()?.len() == 0 {
            write!(f, "# {day}\n\n## 09:00:00\n")?;
        }
        writeln!(f, "- {}", synthetic_fact(i * 7 + 3))?;
    }
    Ok(())
}

/// Serve the memory from this process, search and append, and stop.
async fn one_size(layout: &Layout, size: usize, load: &PathLoad<'_>) -> Result<PathReport> {
    let memory = Memory::open(&layout.root)?;
    if load.via == Via::Mcp {
        let client = Client::mcp(memory).await?;
        let report = measure(&client, size, load).await;
        client.settle().await?;
        return report;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let shutdown = async {
        let _ = stopped.await;
    };
    let served = Served::One(memory);
    let daemon = tokio::spawn(server::serve(
        served,
        listener,
        Options::default(),
        shutdown,
    ));
    let http = reqwest::Client::new();
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        if daemon.is_finished() {
            daemon.await??;
            anyhow::bail!("the daemon stopped before it answered");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let report = measure(&Client::http(&http, &base), size, load).await;
    let _ = stop.send(());
    daemon.await??;
    report
}

/// Search and append through `client`, with the steps recorded.
async fn measure(client: &Client, size: usize, load: &PathLoad<'_>) -> Result<PathReport> {
    // The first search indexes the new facts; then three to warm up.
    for q in ["warm up", "warm up a", "warm up b", "warm up c"] {
        client.search(q).await?;
    }
    // The first search answers once the new facts are shown to searches,
    // before their table write and the vector index built after it
    // (docs/SEARCH.md); what follows measures a memory at rest.
    client.settle().await?;
    record(true);
    take();
    let mut searches = Vec::new();
    for i in 0..load.requests.searches {
        // Never asked before (the embedding cache would answer it).
        let q = format!("what about {} {i} of {size}", WORDS[i % WORDS.len()]);
        let t = Instant::now();
        client.search(&q).await?;
        searches.push(t.elapsed());
    }
    let search_steps = steps::times(&take());
    let mut appends = Vec::new();
    let mut cycles = Vec::new();
    for i in 0..load.requests.appends {
        let sent = Instant::now();
        appends.push(client.append_then_find(&format!("Zq{i}x{size}")).await?);
        cycles.push((sent, Instant::now()));
    }
    // The last append's table write may still run: waited for, and its
    // spans kept (each began before the search that found its fact
    // answered), not those of the wait.
    let appended = Instant::now();
    client.settle().await?;
    let spans = take();
    let spans: Vec<_> = spans.into_iter().filter(|s| s.from < appended).collect();
    let append_steps = steps::times(&spans);
    let append_timeline = median_timeline(&cycles, &spans);
    record(false);
    let (search_steps, hop) = steps(search_steps, &searches);
    let (append_steps, _) = steps(append_steps, &[]);
    let mut report = PathReport {
        facts: size,
        searches: searches.len(),
        search_p50_ms: p(&searches, 0.5),
        search_p90_ms: p(&searches, 0.9),
        search_steps,
        append_to_searchable_p50_ms: p(&appends, 0.5),
        append_steps,
        append_timeline,
    };
    if load.via == Via::Http {
        report.search_steps.push(hop);
    }
    Ok(report)
}

/// The spans begun during the median of `cycles` (each a post sent and
/// the reply that found its fact), by when they began: on 2 cores, an
/// append's sync, the embeddings and the next request's handling run side
/// by side, and which waited for which is what a step's own time hides.
fn median_timeline(cycles: &[(Instant, Instant)], spans: &[Span]) -> Vec<Moment> {
    let mut order: Vec<&(Instant, Instant)> = cycles.iter().collect();
    order.sort_by_key(|(sent, found)| *found - *sent);
    let Some(&&(sent, found)) = order.get(order.len() / 2) else {
        return Vec::new();
    };
    let ms = |t: Instant| t.saturating_duration_since(sent).as_secs_f64() * 1e3;
    let mut out: Vec<Moment> = spans
        .iter()
        .filter(|s| s.from >= sent && s.from <= found)
        .map(|s| Moment {
            step: s.step,
            from_ms: ms(s.from),
            to_ms: ms(s.to),
        })
        .collect();
    out.sort_by(|a, b| a.from_ms.total_cmp(&b.from_ms));
    out.push(Moment {
        step: "found (the client has the reply)",
        from_ms: ms(found),
        to_ms: ms(found),
    });
    out
}

fn p(v: &[Duration], at: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort();
    percentile(&v, at)
}

/// Each step recorded, in [`ORDER`], and the HTTP hop: each end-to-end
/// time less its handler's (paired in order, one handler per search).
fn steps(
    mut times: std::collections::BTreeMap<&'static str, Vec<Duration>>,
    ends: &[Duration],
) -> (Vec<Step>, Step) {
    let handler = times.get("HTTP handler").cloned().unwrap_or_default();
    let hops: Vec<Duration> = ends
        .iter()
        .zip(&handler)
        .map(|(e, h)| e.saturating_sub(*h))
        .collect();
    let step = |name: &str, v: &[Duration]| Step {
        step: name.to_string(),
        runs: v.len(),
        p50_ms: p(v, 0.5),
        p90_ms: p(v, 0.9),
    };
    let mut out: Vec<Step> = ORDER
        .iter()
        .filter_map(|name| times.remove(name).map(|v| step(name, &v)))
        .collect();
    out.extend(times.iter().map(|(name, v)| step(name, v)));
    (out, step("HTTP hop (client wait less handler)", &hops))
}
