//! `memd bench days`: what a search and an append → searchable cost as the
//! archive's day files grow, the facts the same. One daemon per day count
//! (`memd serve`, child processes), all running at once, each request
//! sent to each in turn, so the figures of one run share the machine's
//! load. Besides search and append it times the requests a person or an
//! agent runs beside them ([`OTHERS`]), whose cost should not grow with
//! the day files either: at most 2× from the first count to the last.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::Serialize;
use serde_json::json;

use super::path_client::Client;
use super::{WORDS, percentile, start_serve, synthetic_fact};
use crate::memory;

/// One day count's figures.
#[derive(Debug, Serialize)]
pub struct DaysReport {
    pub day_files: usize,
    pub facts: usize,
    pub search_p50_ms: f64,
    pub search_p90_ms: f64,
    /// `POST /v1/facts`, then a search that must find the fact.
    pub append_to_searchable_p50_ms: f64,
    pub append_to_searchable_p90_ms: f64,
    /// This count's search p50 over the first count's, in the same run.
    pub search_vs_first: f64,
    pub append_vs_first: f64,
    /// Each of [`OTHERS`] by its name: its p50 and its ratio to the first
    /// count's.
    pub others: BTreeMap<&'static str, Other>,
}

/// One of [`OTHERS`] at one day count.
#[derive(Debug, Serialize)]
pub struct Other {
    pub p50_ms: f64,
    pub vs_first: f64,
}

/// The requests timed besides search and append, by name: method, path
/// and body. `consolidate_gated` is the run a watcher asks for on a
/// schedule, which the gate turns away (the bench's memories wait a day
/// between runs); `similar` is what `memd add` asks after a write;
/// `status_after_append` is a status with a fact posted (untimed) before
/// each, so that it counts a changed day file, not a status it kept;
/// `check_after_append` the same for `check`, whose rows then changed.
pub const OTHERS: [(&str, reqwest::Method, &str, &str); 6] = [
    ("status", reqwest::Method::GET, "/v1/status", ""),
    (
        "status_after_append",
        reqwest::Method::GET,
        "/v1/status",
        "",
    ),
    ("check", reqwest::Method::POST, "/v1/check", "{}"),
    (
        "check_after_append",
        reqwest::Method::POST,
        "/v1/check",
        "{}",
    ),
    (
        "consolidate_gated",
        reqwest::Method::POST,
        "/v1/consolidate",
        "{}",
    ),
    (
        "similar",
        reqwest::Method::POST,
        "/v1/similar",
        r#"{"texts":["what about tea"]}"#,
    ),
];

/// The requests `bench days` and `bench search-path` send.
pub struct Requests<'a> {
    pub searches: usize,
    /// Posts, each followed by a search that must find it.
    pub appends: usize,
    pub embedder: &'a str,
}

/// Times of each of [`OTHERS`] at one day count, in its order.
type OthersTimes = Vec<Vec<Duration>>;

/// What `bench days` is asked to do.
pub struct DaysLoad<'a> {
    pub days: &'a [usize],
    pub facts: usize,
    pub requests: Requests<'a>,
    /// How many times each of [`OTHERS`] is sent to each daemon.
    pub others: usize,
}

/// A memory of `facts` facts over `days` day files, as a person's archive
/// would hold them (written straight into the files: the daemon indexes
/// them when it starts).
fn memory_with(
    parent: &Path,
    days: usize,
    facts: usize,
    embedder: &str,
) -> Result<tempfile::TempDir> {
    let tmp = tempfile::tempdir_in(parent)?;
    let layout = memory::init(tmp.path())?;
    std::fs::write(
        layout.config_file(),
        format!("[embedder]\nkind = \"{embedder}\"\n[consolidation]\ninterval_seconds = 86400\n"),
    )?;
    let last = chrono::NaiveDate::from_ymd_opt(2026, 1, 1).expect("a date");
    let per = facts.div_ceil(days.max(1));
    for d in 0..days {
        let day = (last - chrono::Duration::days(d as i64)).format("%Y-%m-%d");
        let mut text = format!("# {day}\n\n## 09:00:00\n");
        for i in (d * per..((d + 1) * per).min(facts)).map(|i| synthetic_fact(i * 7 + 3)) {
            text.push_str(&format!("- {i}\n"));
        }
        std::fs::write(layout.archive_dir().join(format!("{day}.md")), text)?;
    }
    Ok(tmp)
}

/// Run the load against one daemon per day count; their figures, in the
/// order of `load.days`.
pub async fn days(parent: &Path, load: &DaysLoad<'_>) -> Result<Vec<DaysReport>> {
    let mut dirs = Vec::new();
    let mut daemons = Vec::new();
    for &n in load.days {
        let dir = memory_with(parent, n, load.facts, load.requests.embedder)?;
        let args = ["--dir".as_ref(), dir.path().as_os_str(), "serve".as_ref()];
        daemons.push(start_serve(&args).await?);
        dirs.push(dir);
    }
    let http = reqwest::Client::new();
    let clients: Vec<Client> = (daemons.iter())
        .map(|(_, base)| Client::http(&http, base))
        .collect();
    let mut searches = vec![Vec::new(); daemons.len()];
    let mut appends = vec![Vec::new(); daemons.len()];
    // The first search of each indexes its archive: not timed.
    for client in &clients {
        client.search("warm up").await?;
    }
    for i in 0..load.requests.searches {
        let q = format!("what about {} {i}", WORDS[i % WORDS.len()]);
        for (d, client) in clients.iter().enumerate() {
            let t = Instant::now();
            client.search(&q).await?;
            searches[d].push(t.elapsed());
        }
    }
    for i in 0..load.requests.appends {
        let marker = format!("Zq{i}x{}", load.facts);
        for (d, client) in clients.iter().enumerate() {
            appends[d].push(client.append_then_find(&marker).await?);
        }
    }
    let mut others = Vec::new();
    for (_, base) in &daemons {
        others.push(time_others(&http, base, load.others).await?);
    }
    for (mut child, _) in daemons {
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        child.wait()?;
    }
    Ok(report(load, searches, appends, others))
}

/// Each of [`OTHERS`] sent `times` times to the daemon at `base`, after
/// one untimed send (the first `check` reads files no search has).
async fn time_others(http: &reqwest::Client, base: &str, times: usize) -> Result<OthersTimes> {
    let mut out = Vec::new();
    for (name, method, path, body) in OTHERS {
        let mut took = Vec::new();
        for i in 0..=times {
            if name.ends_with("_after_append") {
                let fact = json!({ "text": format!("The user watered plant {i}") });
                let r = http.post(format!("{base}/v1/facts")).json(&fact);
                anyhow::ensure!(r.send().await?.status().is_success(), "a post failed");
            }
            let t = Instant::now();
            let r = (http.request(method.clone(), format!("{base}{path}")))
                .header("content-type", "application/json")
                .body(body)
                .send()
                .await?;
            let status = r.status();
            r.bytes().await?;
            anyhow::ensure!(status.is_success(), "{name} failed: {status}");
            if i > 0 {
                took.push(t.elapsed());
            }
        }
        out.push(took);
    }
    Ok(out)
}

fn report(
    load: &DaysLoad<'_>,
    searches: Vec<Vec<Duration>>,
    appends: Vec<Vec<Duration>>,
    others: Vec<OthersTimes>,
) -> Vec<DaysReport> {
    let p = |mut v: Vec<Duration>, at: f64| {
        v.sort();
        percentile(&v, at)
    };
    let first = (p(searches[0].clone(), 0.5), p(appends[0].clone(), 0.5));
    let first_others: Vec<f64> = others[0].iter().map(|t| p(t.clone(), 0.5)).collect();
    let named = |times: OthersTimes| -> BTreeMap<&'static str, Other> {
        (OTHERS.iter().zip(times).zip(&first_others))
            .map(|(((name, ..), t), first)| {
                let p50_ms = p(t, 0.5);
                let vs_first = p50_ms / first;
                (*name, Other { p50_ms, vs_first })
            })
            .collect()
    };
    load.days
        .iter()
        .zip(searches.into_iter().zip(appends).zip(others))
        .map(|(&day_files, ((s, a), o))| {
            let (s50, a50) = (p(s.clone(), 0.5), p(a.clone(), 0.5));
            DaysReport {
                day_files,
                facts: load.facts,
                search_p50_ms: s50,
                search_p90_ms: p(s, 0.9),
                append_to_searchable_p50_ms: a50,
                append_to_searchable_p90_ms: p(a, 0.9),
                search_vs_first: s50 / first.0,
                append_vs_first: a50 / first.1,
                others: named(o),
            }
        })
        .collect()
}
