//! Benchmarks behind `memd bench`. Speed is measured here, never asserted
//! in tests.

mod days;
mod path_client;
mod search_path;
mod serve_many;
mod versions;

pub use days::{DaysLoad, DaysReport, Requests, days};
pub use path_client::Via;
pub use search_path::{PathLoad, PathReport, search_path};

pub use serve_many::{Load, ServeManyReport, serve_many};
pub use versions::{VersionsReport, versions};

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;

use crate::archive::{self, NewFact};
use crate::config::Config;
use crate::consolidate::Options;
use crate::embed::Embedder;
use crate::entries::{Document, EMPTY_FILE};
use crate::index::{COMPACT_IDLE, Index, Query};
use crate::layout::Source;
use crate::request::Target;
use crate::{Layout, Memory, memory};

#[derive(Debug, Serialize)]
pub struct AppendReport {
    pub dir: String,
    pub single_appends: usize,
    pub single_p50_ms: f64,
    pub single_p99_ms: f64,
    pub single_max_ms: f64,
    pub batch_size: usize,
    pub batches: usize,
    pub batch_facts_per_second: f64,
}

/// Single-fact appends (lock, read, write, fsync: what `memd add` does
/// after start-up) and batch appends (what `memd add --stdin` does), in a
/// fresh memory directory created under `parent`.
pub fn append(
    parent: &Path,
    singles: usize,
    batch_size: usize,
    batches: usize,
) -> Result<AppendReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = memory::init(tmp.path())?;
    let mut lat = Vec::with_capacity(singles);
    for i in 0..singles {
        let fact = NewFact {
            text: format!("Benchmark fact number {i} about topic {}", i % 17),
            session: Some("bench".into()),
            ..Default::default()
        };
        let t = Instant::now();
        archive::append(&layout, "2026-01-01", "00:00:00", &[fact])?;
        lat.push(t.elapsed());
    }
    lat.sort();

    let mut total = Duration::ZERO;
    for b in 0..batches {
        let facts: Vec<NewFact> = (0..batch_size)
            .map(|i| NewFact {
                text: format!(
                    "Batch {b} fact {i}: the user mentioned item {}",
                    i * 7 % 1000
                ),
                session: Some(format!("batch-{b}")),
                ..Default::default()
            })
            .collect();
        let day = format!("2026-02-{:02}", b % 28 + 1);
        let t = Instant::now();
        archive::append(&layout, &day, "00:00:00", &facts)?;
        total += t.elapsed();
    }
    let facts = (batch_size * batches) as f64;
    Ok(AppendReport {
        dir: parent.display().to_string(),
        single_appends: singles,
        single_p50_ms: percentile(&lat, 0.50),
        single_p99_ms: percentile(&lat, 0.99),
        single_max_ms: lat.last().map(|d| ms(*d)).unwrap_or(0.0),
        batch_size,
        batches,
        batch_facts_per_second: if total.is_zero() {
            0.0
        } else {
            facts / total.as_secs_f64()
        },
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Index figures for one table size.
#[derive(Debug, Serialize)]
pub struct IndexReport {
    pub rows: usize,
    pub embedder: String,
    /// `reindex` from scratch: embed (uncached) + write + build indices.
    pub build_seconds: f64,
    pub build_rows_per_second: f64,
    /// Hybrid search, query embedding excluded.
    pub search_p50_ms: f64,
    pub search_p99_ms: f64,
    /// The same queries after the 20 single appends below (20 more small
    /// fragments, before any compaction).
    pub search_after_appends_p50_ms: f64,
    /// The same once the index has been idle for
    /// [`crate::index::COMPACT_IDLE`] and compacted, as the daemon does.
    pub search_after_idle_compaction_p50_ms: f64,
    /// What that compaction took (the daemon does it in the background).
    pub idle_compaction_ms: f64,
    /// Loading every row's words from the table, as a new process's first
    /// search does (`index::terms`).
    pub terms_load_ms: f64,
    /// Embedding one query.
    pub query_embed_p50_ms: f64,
    /// Append one fact, sync, search finds it.
    pub add_to_searchable_p50_ms: f64,
    pub add_to_searchable_p99_ms: f64,
}

/// Words for synthetic facts that differ in content, not only in a number.
const WORDS: [&str; 24] = [
    "coffee",
    "hiking",
    "Lisbon",
    "dashboard",
    "daughter",
    "piano",
    "Rust",
    "garden",
    "budget",
    "meeting",
    "marathon",
    "recipe",
    "allergy",
    "podcast",
    "violin",
    "kayak",
    "sourdough",
    "chess",
    "novel",
    "tram",
    "invoice",
    "museum",
    "yoga",
    "camera",
];

fn synthetic_fact(i: usize) -> String {
    let w = |k: usize| WORDS[(i / WORDS.len().pow(k as u32)) % WORDS.len()];
    format!(
        "User mentioned {} and {} while planning {} (note {i})",
        w(0),
        w(1),
        w(2)
    )
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    ms(sorted[((sorted.len() as f64 - 1.0) * p).round() as usize])
}

/// 100 hybrid queries (k = 8): search times without the query embedding,
/// and the query embedding times, both sorted.
async fn time_queries(index: &Index) -> Result<(Vec<Duration>, Vec<Duration>)> {
    let mut search = Vec::new();
    let mut embed = Vec::new();
    for q in 0..100 {
        let query = format!(
            "what did the user say about {} and {}",
            WORDS[q % 24],
            WORDS[(q * 7) % 24]
        );
        let t = Instant::now();
        // Straight to the embedder: the cache would turn repeated queries
        // into lookups.
        let qv = index
            .embedder()
            .inner()
            .embed(std::slice::from_ref(&query))
            .await?
            .remove(0);
        embed.push(t.elapsed());
        let t = Instant::now();
        index
            .reader
            .search(&Query::new(&query, 8).with_vector(qv))
            .await?;
        search.push(t.elapsed());
    }
    search.sort();
    embed.sort();
    Ok((search, embed))
}

/// Build an index of `rows` facts and measure it.
pub async fn index(
    parent: &Path,
    rows: usize,
    embedder: std::sync::Arc<dyn Embedder>,
) -> Result<IndexReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = memory::init(tmp.path())?;
    let config = Config::default();
    for (d, start) in (0..rows).step_by(1000).enumerate() {
        let facts: Vec<NewFact> = (start..(start + 1000).min(rows))
            .map(|i| NewFact {
                text: synthetic_fact(i),
                ..Default::default()
            })
            .collect();
        let day = (chrono::NaiveDate::from_ymd_opt(2025, 1, 1).unwrap()
            + chrono::Days::new(d as u64))
        .format("%Y-%m-%d")
        .to_string();
        archive::append(&layout, &day, "00:00:00", &facts)?;
    }
    let name = embedder.id();
    let t = Instant::now();
    let index =
        Index::open(&Memory::new(layout.clone(), config.clone()).with_embedder(embedder.clone()))
            .await?;
    index.writer.sync().await?;
    let build = t.elapsed().as_secs_f64();

    let (search, embed) = time_queries(&index).await?;

    let visible = add_to_searchable(&layout, &index).await?;
    // Each of those syncs wrote one small fragment, as a day of single
    // appends does between two background compactions.
    let (after, _) = time_queries(&index).await?;
    // What a daemon does once writes pause.
    tokio::time::sleep(COMPACT_IDLE).await;
    let t = Instant::now();
    index.writer.compact_if_needed().await?;
    let compaction = t.elapsed();
    let (compacted, _) = time_queries(&index).await?;
    let t = Instant::now();
    index.reader.load_terms().await?;
    let terms = t.elapsed();
    Ok(IndexReport {
        rows,
        embedder: name,
        build_seconds: build,
        build_rows_per_second: rows as f64 / build,
        search_p50_ms: percentile(&search, 0.5),
        search_p99_ms: percentile(&search, 0.99),
        search_after_appends_p50_ms: percentile(&after, 0.5),
        search_after_idle_compaction_p50_ms: percentile(&compacted, 0.5),
        idle_compaction_ms: ms(compaction),
        terms_load_ms: ms(terms),
        query_embed_p50_ms: percentile(&embed, 0.5),
        add_to_searchable_p50_ms: percentile(&visible, 0.5),
        add_to_searchable_p99_ms: percentile(&visible, 0.99),
    })
}

/// 20 single appends, each timed until a search finds it, sorted.
async fn add_to_searchable(layout: &Layout, index: &Index) -> Result<Vec<Duration>> {
    let mut visible = Vec::new();
    for i in 0..20 {
        let text = format!("User adopted a tortoise named Sheldon number {i}");
        let t = Instant::now();
        let fact = NewFact {
            text: text.clone(),
            ..Default::default()
        };
        let a = archive::append(layout, "2030-01-01", "00:00:00", &[fact])?;
        index.writer.sync().await?;
        let hits = index.reader.search(&Query::new(&text, 8)).await?;
        visible.push(t.elapsed());
        anyhow::ensure!(
            hits.iter().any(|h| h.id == a[0].id),
            "appended fact not searchable"
        );
    }
    visible.sort();
    Ok(visible)
}

#[derive(Debug, Serialize)]
pub struct ReembedReport {
    pub appends: usize,
    pub embedder: String,
    /// The whole-file side re-embeds after every `whole_file_every`-th
    /// append only (1: after each), and its time is that sum times
    /// `whole_file_every`.
    pub whole_file_every: usize,
    pub whole_file_seconds: f64,
    /// Texts the whole-file side embedded in this run.
    pub whole_file_texts_embedded: usize,
    pub incremental_seconds: f64,
    pub speedup: f64,
}

/// The same `n` appends handled two ways, side by side: re-embedding and
/// rewriting the whole day file after each append (how the nearest existing
/// system does it) versus memd's incremental sync.
///
/// A whole-file rewrite costs in proportion to the file's length, so with a
/// real model 1,000 appends take hours (500,500 texts). `every` > 1 rewrites
/// after every `every`-th append only, at the middle of each stretch (after
/// appends 5, 15, 25, … for 10), and counts each rewrite `every` times: for a
/// cost linear in the file's length that sum is the full run's to within
/// 0.1 %. The appends and memd's side are always run in full.
pub async fn reembed(
    parent: &Path,
    n: usize,
    every: usize,
    embedder: std::sync::Arc<dyn Embedder>,
) -> Result<ReembedReport> {
    let every = every.max(1);
    let config = Config::default();
    let name = embedder.id();
    let run = |whole: bool| {
        let embedder = embedder.clone();
        let config = config.clone();
        async move {
            let tmp = tempfile::tempdir_in(parent)?;
            let layout = memory::init(tmp.path())?;
            let index = Index::open(
                &Memory::new(layout.clone(), config.clone()).with_embedder(embedder.clone()),
            )
            .await?;
            let mut embedded = 0;
            let mut seconds = 0.0;
            for i in 0..n {
                let fact = NewFact {
                    text: synthetic_fact(i * 31 + 7),
                    ..Default::default()
                };
                let t = Instant::now();
                archive::append(&layout, "2026-01-01", "00:00:00", &[fact])?;
                seconds += t.elapsed().as_secs_f64();
                let t = Instant::now();
                if !whole {
                    index.writer.sync().await?;
                    // What the daemon does in the background, timed here
                    // as if it were in the way.
                    index.writer.compact_if_needed().await?;
                } else if i % every == every / 2 {
                    embedded += index
                        .writer
                        .rewrite_source_uncached(&Source::Day("2026-01-01".into()))
                        .await?;
                    seconds += t.elapsed().as_secs_f64() * (every - 1) as f64;
                }
                // Once for memd's sync and for each rewrite, plus the
                // `every - 1` above for the rewrites not run.
                seconds += t.elapsed().as_secs_f64();
            }
            anyhow::Ok((seconds, embedded))
        }
    };
    let (whole, embedded) = run(true).await?;
    let (incremental, _) = run(false).await?;
    Ok(ReembedReport {
        appends: n,
        embedder: name,
        whole_file_every: every,
        whole_file_seconds: whole,
        whole_file_texts_embedded: embedded,
        incremental_seconds: incremental,
        speedup: whole / incremental,
    })
}

#[derive(Debug, Serialize)]
pub struct ConsolidateReport {
    pub embedder: String,
    pub entries: usize,
    pub facts: usize,
    pub clusters: usize,
    pub llm_calls: usize,
    pub total_ms: f64,
    /// Time spent waiting for the (instant, scripted) LLM.
    pub llm_ms: f64,
    pub outside_llm_ms: f64,
    pub outside_llm_ms_per_1000_facts: f64,
    pub prompt_tokens: u64,
    pub prompt_tokens_per_fact: f64,
}

/// A chat endpoint on 127.0.0.1 that answers at once: every listed fact
/// ADDed as it is. Returns its base URL.
async fn instant_llm() -> Result<String> {
    let app = axum::Router::new().fallback(axum::routing::post(
        |axum::Json(body): axum::Json<serde_json::Value>| async move {
            let prompt = body["messages"][0]["content"].as_str().unwrap_or_default();
            // Every listed fact ADDed in its own words.
            let input = &prompt[prompt.rfind("ENTRIES:").unwrap_or(0)..];
            let adds: Vec<serde_json::Value> = input
                .lines()
                .filter_map(|l| {
                    let alias = l.split(' ').next()?;
                    let n = alias.strip_prefix('F')?;
                    if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit()) {
                        return None;
                    }
                    let text = &l[l.find("]: ")? + 3..];
                    Some(serde_json::json!({"op": "ADD", "text": text, "from": [alias]}))
                })
                .collect();
            let content = if prompt.contains("\"lines\"") {
                serde_json::json!({"lines": [{"id": "E1", "line": "first"}]}).to_string()
            } else {
                serde_json::json!({ "ops": adds }).to_string()
            };
            axum::Json(serde_json::json!({
                "choices": [{"message": {"role": "assistant", "content": content}}]
            }))
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok(format!("http://{addr}/v1"))
}

/// One forced consolidation run of `facts` pending facts against `entries`
/// existing entries, with an LLM that answers instantly, so what is timed
/// is memd's own work: reading, neighbours, clustering, prompts,
/// validation, apply, journal, state, promotion and the index update. The
/// index is in step with the files before the run, as it is under the
/// daemon.
pub async fn consolidate(
    parent: &Path,
    entries: usize,
    facts: usize,
    mut config: Config,
) -> Result<ConsolidateReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = memory::init(tmp.path())?;
    let mut doc = Document::parse(EMPTY_FILE);
    for i in 0..entries {
        let text = synthetic_fact(i);
        let meta = doc.new_meta(&text, "2025-01-01", Vec::new());
        doc.push(&text, meta);
    }
    doc.save(&layout.entries_file(), "2025-01-01")?;
    // Facts that resemble entries (same topics, other wording).
    let new: Vec<NewFact> = (0..facts)
        .map(|i| NewFact {
            text: synthetic_fact(i * 7 + 3).replace("User mentioned", "The user talked about"),
            ..Default::default()
        })
        .collect();
    archive::append(&layout, "2030-01-01", "00:00:00", &new)?;
    config.llm.base_url = instant_llm().await?;
    config.llm.model = "instant".into();
    config.consolidation.concurrency = 1; // so LLM time and memd's time do not overlap
    let index = Index::open(&Memory::new(layout.clone(), config.clone())).await?;
    index.writer.sync().await?;
    let embedder = index.embedder().inner().id();
    drop(index);
    // Timed around the run and the index sync after it, as before the
    // sync moved to the caller.
    let started = Instant::now();
    let opts = Options {
        force: true,
        dry_run: false,
    };
    let r = Target::local(Memory::new(layout.clone(), config.clone()))
        .run(opts)
        .await?;
    let total_ms = started.elapsed().as_secs_f64() * 1000.0;
    let outside = total_ms - r.llm_ms;
    Ok(ConsolidateReport {
        embedder,
        entries,
        facts,
        clusters: r.clusters,
        llm_calls: r.llm_calls,
        total_ms,
        llm_ms: r.llm_ms,
        outside_llm_ms: outside,
        outside_llm_ms_per_1000_facts: outside / facts.max(1) as f64 * 1000.0,
        prompt_tokens: r.prompt_tokens,
        prompt_tokens_per_fact: r.prompt_tokens as f64 / facts.max(1) as f64,
    })
}

#[derive(Debug, Serialize)]
pub struct ServeReport {
    pub clients: usize,
    pub seconds: f64,
    pub requests: usize,
    pub requests_per_second: f64,
    pub post_p50_ms: f64,
    pub post_p99_ms: f64,
    pub search_p50_ms: f64,
    pub search_p99_ms: f64,
    pub errors: usize,
    pub facts_posted: usize,
    pub facts_in_archive: usize,
    pub facts_missing: usize,
}

/// Load a real daemon (`memd serve`, a child process) from this process:
/// `clients` concurrent clients, each posting a fact and then searching,
/// for `seconds`. Afterwards every acknowledged fact must be in the archive.
pub async fn serve(
    parent: &Path,
    clients: usize,
    seconds: u64,
    embedder: &str,
) -> Result<ServeReport> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = memory::init(tmp.path())?;
    std::fs::write(
        layout.config_file(),
        format!("[embedder]\nkind = \"{embedder}\"\n[consolidation]\ninterval_seconds = 3600\n"),
    )?;
    let serve = ["--dir".as_ref(), layout.root.as_os_str(), "serve".as_ref()];
    let (mut child, base) = start_serve(&serve).await?;
    let http = reqwest::Client::new();
    let started = Instant::now();
    let until = started + Duration::from_secs(seconds);
    let tasks: Vec<_> = (0..clients)
        .map(|c| tokio::spawn(client_load(http.clone(), base.clone(), c, until)))
        .collect();
    let mut load = ClientLoad::default();
    for t in tasks {
        let l = t.await?;
        load.posts.extend(l.posts);
        load.searches.extend(l.searches);
        load.ids.extend(l.ids);
        load.errors += l.errors;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait()?;
    let (facts, _) = archive::read_all(&layout)?;
    let stored: std::collections::HashSet<&str> = facts.iter().map(|f| f.id.as_str()).collect();
    let missing = load
        .ids
        .iter()
        .filter(|id| !stored.contains(id.as_str()))
        .count();
    let ClientLoad {
        mut posts,
        mut searches,
        ids,
        errors,
    } = load;
    posts.sort();
    searches.sort();
    Ok(ServeReport {
        clients,
        seconds: elapsed,
        requests: posts.len() + searches.len(),
        requests_per_second: (posts.len() + searches.len()) as f64 / elapsed,
        post_p50_ms: percentile(&posts, 0.5),
        post_p99_ms: percentile(&posts, 0.99),
        search_p50_ms: percentile(&searches, 0.5),
        search_p99_ms: percentile(&searches, 0.99),
        errors,
        facts_posted: ids.len(),
        facts_in_archive: facts.len(),
        facts_missing: missing,
    })
}

/// `memd ARGS --listen 127.0.0.1:PORT` (a `serve` command) as a child
/// process on a free port, and its base URL once it answers `/healthz`.
async fn start_serve(args: &[&std::ffi::OsStr]) -> Result<(std::process::Child, String)> {
    use anyhow::Context;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let base = format!("http://127.0.0.1:{port}");
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .args(args)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .env_remove("MEMD_TOKEN")
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting memd serve")?;
    let deadline = Instant::now() + Duration::from_secs(120);
    let http = reqwest::Client::new();
    while http.get(format!("{base}/healthz")).send().await.is_err() {
        if Instant::now() > deadline || child.try_wait()?.is_some() {
            let _ = child.kill();
            anyhow::bail!("the daemon did not start");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok((child, base))
}

/// What one client did: latencies of its posts and searches, the ids it
/// was given, and failed requests.
#[derive(Default)]
struct ClientLoad {
    posts: Vec<Duration>,
    searches: Vec<Duration>,
    ids: Vec<String>,
    errors: usize,
}

/// Client `c`: post a fact, then search, until `until`.
async fn client_load(http: reqwest::Client, base: String, c: usize, until: Instant) -> ClientLoad {
    let mut load = ClientLoad::default();
    let mut n = 0;
    while Instant::now() < until {
        let text = format!(
            "{} (client {c}, fact {n})",
            synthetic_fact(c * 1_000_003 + n)
        );
        let t = Instant::now();
        let r = http
            .post(format!("{base}/v1/facts"))
            .json(&serde_json::json!({ "text": text }))
            .send()
            .await;
        match r {
            Ok(resp) if resp.status().is_success() => {
                load.posts.push(t.elapsed());
                let v: serde_json::Value = resp.json().await.unwrap_or_default();
                if let Some(id) = v["ids"][0].as_str() {
                    load.ids.push(id.to_string());
                }
            }
            _ => load.errors += 1,
        }
        let t = Instant::now();
        let q = format!("what about {}", WORDS[(c + n) % WORDS.len()]);
        match http
            .get(format!("{base}/v1/search"))
            .query(&[("q", q.as_str()), ("k", "8")])
            .send()
            .await
        {
            Ok(resp) if resp.status().is_success() => load.searches.push(t.elapsed()),
            _ => load.errors += 1,
        }
        n += 1;
    }
    load
}

#[derive(Debug, Serialize)]
pub struct EmbedReport {
    pub embedder: String,
    /// For minilm: what ran it (onnx).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    pub texts: usize,
    pub batch: usize,
    pub texts_per_second: f64,
    /// One text per call (what `memd add` and a query pay).
    pub single_p50_ms: f64,
    pub single_p99_ms: f64,
}

/// The texts `bench embed` embeds.
fn embed_texts(n: usize) -> Vec<String> {
    (0..n).map(|i| synthetic_fact(i * 13 + 5)).collect()
}

/// Embedding throughput without the cache: `texts` synthetic facts in calls
/// of `batch`, then 50 single-text calls.
pub async fn embed(
    texts: usize,
    batch: usize,
    embedder: std::sync::Arc<dyn Embedder>,
) -> Result<EmbedReport> {
    let all = embed_texts(texts);
    let t = Instant::now();
    for chunk in all.chunks(batch.max(1)) {
        embedder.embed(chunk).await?;
    }
    let rate = texts as f64 / t.elapsed().as_secs_f64();
    let mut single = Vec::new();
    for i in 0..50 {
        let text = synthetic_fact(i * 101 + 3);
        let t = Instant::now();
        embedder.embed(std::slice::from_ref(&text)).await?;
        single.push(t.elapsed());
    }
    single.sort();
    Ok(EmbedReport {
        embedder: embedder.id(),
        runtime: None,
        texts,
        batch,
        texts_per_second: rate,
        single_p50_ms: percentile(&single, 0.5),
        single_p99_ms: percentile(&single, 0.99),
    })
}
