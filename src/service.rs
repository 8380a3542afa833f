//! What the front ends (CLI, MCP) ask of memd, answered through the
//! daemon's API when a daemon serves the directory (it owns the index, so
//! nothing else opens the table for writing) and in process otherwise.
//! Appending a fact is a file write and never needs the daemon.

use anyhow::{Context, Result, anyhow};
use serde::de::DeserializeOwned;

use crate::config::Config;
use crate::consolidate::{self, Report};
use crate::forget::Candidate;
use crate::index::search::Hit;
use crate::index::{Index, SyncReport};
use crate::{Layout, daemon};

/// Where commands go.
pub enum Backend {
    /// The daemon at this base URL.
    Daemon {
        base: String,
        pid: u32,
        http: reqwest::Client,
        token: Option<String>,
    },
    InProcess,
}

impl Backend {
    pub fn for_dir(layout: &Layout) -> Backend {
        match daemon::running(layout) {
            Some(info) => Backend::Daemon {
                base: format!("http://{}", info.listen),
                pid: info.pid,
                http: reqwest::Client::new(),
                token: std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty()),
            },
            None => Backend::InProcess,
        }
    }

    /// One line for stderr saying where a command went.
    pub fn describe(&self) -> Option<String> {
        match self {
            Backend::Daemon { base, pid, .. } => {
                Some(format!("through the daemon at {base} (pid {pid})"))
            }
            Backend::InProcess => None,
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
            base, http, token, ..
        } = self
        else {
            unreachable!("only called for a daemon")
        };
        let mut url = reqwest::Url::parse(base)?;
        url.path_segments_mut()
            .map_err(|_| anyhow!("bad daemon address {base}"))?
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
            return Err(anyhow!("the daemon answered {status}: {msg}"));
        }
        serde_json::from_value(value).with_context(|| format!("unexpected reply to {path}"))
    }

    pub async fn search(
        &self,
        layout: &Layout,
        config: &Config,
        q: &str,
        k: usize,
    ) -> Result<Vec<Hit>> {
        match self {
            Backend::InProcess => {
                let index = Index::open(layout, config).await?;
                index.sync().await?;
                index.search(q, k).await
            }
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
            Backend::InProcess => consolidate::run(layout, config, opts).await,
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
            Backend::InProcess => {
                if clear {
                    Index::clear(layout)?;
                }
                let index = Index::open(layout, config).await?;
                let report = index.sync().await?;
                Ok((report, index.ids().await?.len()))
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

    pub async fn forget(&self, layout: &Layout, config: &Config, id: &str) -> Result<Candidate> {
        match self {
            Backend::InProcess => {
                let gone = crate::forget::forget(layout, id)?;
                // The files are what counts; the index catches up now if it can.
                if let Err(e) = async { Index::open(layout, config).await?.sync().await }.await {
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
