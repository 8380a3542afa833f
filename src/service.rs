//! What the front ends (CLI, MCP) ask of memd, answered through the
//! daemon's API when a daemon serves the directory (it owns the index, so
//! nothing else opens the table for writing) and in process otherwise.
//! Appending a fact is a file write and never needs the daemon; the
//! similar entries shown after it come from whoever owns the index.

use std::sync::Arc;

use serde::de::DeserializeOwned;

use crate::archive::{self, Appended, NewFact};
use crate::config::Config;
use crate::consolidate::{self, Report};
use crate::error::{Context, Result, err};
use crate::forget::Candidate;
use crate::index::search::{Hit, Similar};
use crate::index::{Index, SyncReport};
use crate::{Layout, daemon_info};

/// How many similar entries an add shows per fact.
pub(crate) const SIMILAR_SHOWN: usize = 3;

/// Past this many facts in one add, no similar entries are looked up (a
/// bulk import is not read fact by fact).
pub(crate) const SIMILAR_MAX_FACTS: usize = 20;

/// Least cosine similarity at which `memd add` shows an existing entry
/// as similar to a new fact (`memd eval dedup`, EVALUATION.md).
pub const SIMILAR_MIN_COSINE: f32 = 0.75;

/// One appended fact and the existing entries most like it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Added {
    #[serde(flatten)]
    pub fact: Appended,
    pub similar: Vec<Similar>,
}

/// For each text, the entries of `index` most like it: the one lookup
/// behind `memd add`, `POST /v1/facts` and MCP's `remember`.
pub(crate) async fn similar_in(index: &Index, texts: &[String]) -> Result<Vec<Vec<Similar>>> {
    let mut out = Vec::with_capacity(texts.len());
    for t in texts {
        out.push(index.similar_entries(t, SIMILAR_SHOWN).await?);
    }
    Ok(out)
}

/// Consolidate, then bring the index in step: the owner's `index`, or one
/// opened here. A failed sync is a warning in the report, never an error:
/// the files are what counts, and the next search or reindex catches up.
pub(crate) async fn consolidate_then_sync(
    layout: &Layout,
    config: &Config,
    opts: consolidate::Options,
    index: Option<&Index>,
) -> Result<Report> {
    let embedder = index.map(Index::embedder);
    let mut report = consolidate::run_with(layout, config, opts, embedder).await?;
    if report.skipped.is_some() || opts.dry_run {
        return Ok(report);
    }
    let synced = match index {
        Some(i) => i.sync().await,
        None => async { Index::open(layout, config).await?.sync().await }.await,
    };
    if let Err(e) = synced {
        let w =
            format!("index not updated ({e:#}); the next search or `memd reindex` will catch up");
        tracing::warn!("{w}");
        report.warnings.push(w);
    }
    Ok(report)
}

/// `reindex` on an open index: sync, then rebuild it from the files if it
/// still disagrees with them (rows a sync cannot see, such as duplicates);
/// the report and the number of rows. The daemon's API and the in-process
/// command both end here.
pub(crate) async fn sync_repairing(index: &Index, layout: &Layout) -> Result<(SyncReport, usize)> {
    let mut report = index.sync().await?;
    if crate::check::index_only(layout).await?.index_fixable {
        tracing::warn!("the index disagreed with the files: rebuilding it");
        index.reset().await?;
        report = index.sync().await?;
    }
    Ok((report, index.ids().await?.len()))
}

/// Where commands go.
pub enum Backend {
    /// The daemon at this base URL.
    Daemon {
        base: String,
        pid: u32,
        http: reqwest::Client,
        token: Option<String>,
        /// The memory's name when the daemon serves many (`serve --root`):
        /// its routes are `/v1/m/NAME/…`.
        memory: Option<String>,
    },
    /// This process: with the index it holds for its whole life (`memd
    /// mcp`), or, for a one-shot command, one opened per call.
    InProcess(Option<Arc<Index>>),
}

impl Backend {
    pub fn for_dir(layout: &Layout) -> Backend {
        match daemon_info::running(layout) {
            Some(info) => Backend::Daemon {
                base: format!("http://{}", info.listen),
                pid: info.pid,
                http: reqwest::Client::new(),
                token: std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty()),
                memory: info.memory,
            },
            None => Backend::InProcess(None),
        }
    }

    /// The index of an in-process command, synced: the one held, else one
    /// opened now.
    async fn local(&self, layout: &Layout, config: &Config) -> Result<Arc<Index>> {
        let index = match self {
            Backend::InProcess(Some(held)) => held.clone(),
            _ => Arc::new(Index::open(layout, config).await?),
        };
        index.sync().await?;
        Ok(index)
    }

    /// One line for stderr saying where a command went.
    pub fn describe(&self) -> Option<String> {
        match self {
            Backend::Daemon { base, pid, .. } => {
                Some(format!("through the daemon at {base} (pid {pid})"))
            }
            Backend::InProcess(_) => None,
        }
    }

    /// Call the daemon at the path made of `segments` (each encoded).
    async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        query: &[(&str, String)],
        body: Option<serde_json::Value>,
    ) -> Result<T> {
        let Backend::Daemon {
            base,
            http,
            token,
            memory,
            ..
        } = self
        else {
            unreachable!("only called for a daemon")
        };
        // Every route starts with `v1`; a memory of many has its own.
        let routed: Vec<&str> = match (memory, segments.split_first()) {
            (Some(m), Some((&"v1", rest))) => ["v1", "m", m.as_str()]
                .into_iter()
                .chain(rest.iter().copied())
                .collect(),
            _ => segments.to_vec(),
        };
        let segments = routed.as_slice();
        let mut url =
            reqwest::Url::parse(base).map_err(|e| err!("bad daemon address {base}: {e}"))?;
        url.path_segments_mut()
            .map_err(|_| err!("bad daemon address {base}"))?
            .extend(segments);
        let path = url.path().to_string();
        let mut req = http.request(method, url.clone()).query(query);
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req
            .send()
            .await
            .with_context(|| format!("cannot reach the daemon at {base}"))?;
        let status = resp.status();
        let value: serde_json::Value = resp
            .json()
            .await
            .with_context(|| format!("the daemon's reply to {path} is not JSON"))?;
        if !status.is_success() {
            let msg = value["error"].as_str().unwrap_or("no detail");
            return Err(crate::Error::Daemon {
                status: status.as_u16(),
                message: msg.to_string(),
            });
        }
        serde_json::from_value(value).with_context(|| format!("unexpected reply to {path}"))
    }

    /// Append `facts` (a file write, durable before this returns), then,
    /// when `similar` and the batch is small, look up the entries most like
    /// each one. The lookup is information only: once the facts are written
    /// its failure is a warning, never an error.
    pub async fn add(
        &self,
        layout: &Layout,
        config: &Config,
        facts: &[NewFact],
        similar: bool,
    ) -> Result<Vec<Added>> {
        let appended = archive::append_now(layout, facts)?;
        let mut found = Vec::new();
        if similar && facts.len() <= SIMILAR_MAX_FACTS {
            let texts: Vec<String> = appended.iter().map(|a| a.text.clone()).collect();
            match self.similar(layout, config, &texts).await {
                Ok(s) => found = s,
                Err(e) => tracing::warn!("similar entries not shown: {e:#}"),
            }
        }
        found.resize(appended.len(), Vec::new());
        Ok(appended
            .into_iter()
            .zip(found)
            .map(|(fact, similar)| Added { fact, similar })
            .collect())
    }

    /// For each text, the entries most like it, from whoever owns the index.
    async fn similar(
        &self,
        layout: &Layout,
        config: &Config,
        texts: &[String],
    ) -> Result<Vec<Vec<Similar>>> {
        match self {
            Backend::InProcess(_) => similar_in(&*self.local(layout, config).await?, texts).await,
            Backend::Daemon { .. } => {
                let body = serde_json::json!({ "texts": texts });
                self.call(reqwest::Method::POST, &["v1", "similar"], &[], Some(body))
                    .await
            }
        }
    }

    pub async fn search(
        &self,
        layout: &Layout,
        config: &Config,
        q: &str,
        k: usize,
    ) -> Result<Vec<Hit>> {
        match self {
            Backend::InProcess(_) => self.local(layout, config).await?.search(q, k).await,
            Backend::Daemon { .. } => {
                let query = [("q", q.to_string()), ("k", k.to_string())];
                self.call(reqwest::Method::GET, &["v1", "search"], &query, None)
                    .await
            }
        }
    }

    pub async fn consolidate(
        &self,
        layout: &Layout,
        config: &Config,
        opts: consolidate::Options,
    ) -> Result<Report> {
        match self {
            Backend::InProcess(held) => {
                consolidate_then_sync(layout, config, opts, held.as_deref()).await
            }
            Backend::Daemon { .. } => {
                let body = serde_json::json!({"force": opts.force, "dry_run": opts.dry_run});
                self.call(
                    reqwest::Method::POST,
                    &["v1", "consolidate"],
                    &[],
                    Some(body),
                )
                .await
            }
        }
    }

    /// Sync (after emptying the index with `clear`); the report and the
    /// number of rows.
    pub async fn reindex(
        &self,
        layout: &Layout,
        config: &Config,
        clear: bool,
    ) -> Result<(SyncReport, usize)> {
        match self {
            Backend::InProcess(Some(held)) => {
                if clear {
                    held.reset().await?;
                }
                sync_repairing(held, layout).await
            }
            Backend::InProcess(None) => {
                if clear {
                    Index::clear(layout).await?;
                }
                let index = Index::open(layout, config).await?;
                sync_repairing(&index, layout).await
            }
            Backend::Daemon { .. } => {
                #[derive(serde::Deserialize)]
                struct R {
                    report: SyncReport,
                    rows: usize,
                }
                let r: R = self
                    .call(
                        reqwest::Method::POST,
                        &["v1", "reindex"],
                        &[],
                        Some(serde_json::json!({ "clear": clear })),
                    )
                    .await?;
                Ok((r.report, r.rows))
            }
        }
    }

    /// Undo a forget ([`crate::forget::undo`]). A file write under the
    /// entries' lock, like an add; a daemon's watcher syncs its own index.
    pub async fn unforget(&self, layout: &Layout, config: &Config, id: &str) -> Result<Candidate> {
        let back = crate::forget::undo(layout, id)?;
        if let Backend::InProcess(_) = self
            && let Err(e) = self.local(layout, config).await
        {
            tracing::warn!("index not updated yet: {e:#}");
        }
        Ok(back)
    }

    /// Undo a run ([`crate::runs::undo`]): a file write under the entries'
    /// lock, like [`Backend::unforget`]; a daemon's watcher syncs its own
    /// index.
    pub async fn undo(
        &self,
        layout: &Layout,
        config: &Config,
        run: &str,
        opts: crate::runs::Options,
    ) -> Result<crate::runs::Outcome> {
        let outcome = crate::runs::undo(layout, run, opts)?;
        if let Backend::InProcess(_) = self
            && outcome.run.is_some()
            && let Err(e) = self.local(layout, config).await
        {
            tracing::warn!("index not updated yet: {e:#}");
        }
        Ok(outcome)
    }

    pub async fn forget(&self, layout: &Layout, config: &Config, id: &str) -> Result<Candidate> {
        match self {
            Backend::InProcess(_) => {
                let gone = crate::forget::forget(layout, id)?;
                // The files are what counts; the index catches up now if it can.
                if let Err(e) = self.local(layout, config).await {
                    tracing::warn!("index not updated yet: {e:#}");
                }
                Ok(gone)
            }
            Backend::Daemon { .. } => {
                self.call(reqwest::Method::DELETE, &["v1", "entries", id], &[], None)
                    .await
            }
        }
    }
}
