//! How the benches reach the memory they measure: over HTTP to a daemon
//! (`bench days`' children, or `bench search-path`'s, served from its
//! process), or through `memd mcp`'s handler in the bench's process (the MCP server's code, its index opened as
//! `memd mcp` opens it: beside other writers, so every sync takes the
//! index lock and looks for a newer table version). The stdio hop of a
//! real `memd mcp` (a pipe write and read) is not in the MCP figures.

use std::time::{Duration, Instant};

use anyhow::{Result, bail, ensure};
use serde_json::{Value, json};

use crate::mcp::{Scope, Session, handle};
use crate::{Memory, steps};

/// Which way the bench's requests go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Via {
    /// To a daemon served from the bench's process, over HTTP.
    Http,
    /// To `memd mcp`'s handler in the bench's process.
    Mcp,
}

/// A client of one memory, as [`Via`] says.
pub(super) enum Client {
    Http { http: reqwest::Client, base: String },
    Mcp { scope: Scope, session: Session },
}

impl Client {
    /// The daemon at `base` (`http://host:port`).
    pub(super) fn http(http: &reqwest::Client, base: &str) -> Client {
        Client::Http {
            http: http.clone(),
            base: base.to_string(),
        }
    }

    /// The MCP server of `memory`, set up as `memd mcp` sets it up.
    pub(super) async fn mcp(memory: Memory) -> Result<Client> {
        if let Ok(e) = memory.embedder() {
            e.warm();
        }
        let client = Client::Mcp {
            scope: Scope::one(memory),
            session: Session::default(),
        };
        let hello = json!({"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "memd bench", "version": "0"}});
        client.rpc("initialize", hello).await?;
        Ok(client)
    }

    /// A search's reply, as text.
    pub(super) async fn search(&self, q: &str) -> Result<String> {
        let Client::Http { http, base } = self else {
            let args = json!({"query": q, "k": 10, "min_score": 0});
            return self.tool("recall", args).await;
        };
        let r = http
            .get(format!("{base}/v1/search"))
            .query(&[("q", q), ("k", "10"), ("min_score", "0")])
            .send()
            .await?;
        ensure!(r.status().is_success(), "a search failed: {}", r.status());
        Ok(r.text().await?)
    }

    /// Append a fact holding `marker`, then search for it: the time until
    /// the search answered with it (an error if it did not).
    pub(super) async fn append_then_find(&self, marker: &str) -> Result<Duration> {
        let t = Instant::now();
        let text = format!("The user named a new plant {marker}");
        match self {
            Client::Http { http, base } => {
                let r = http.post(format!("{base}/v1/facts"));
                let r = r.json(&json!({ "text": text }));
                ensure!(r.send().await?.status().is_success(), "a post failed");
            }
            Client::Mcp { .. } => {
                self.tool("remember", json!({ "text": text })).await?;
            }
        }
        let hits = self.search(marker).await?;
        ensure!(
            hits.contains(marker),
            "{marker} not searchable after its append"
        );
        Ok(t.elapsed())
    }

    /// Wait until the index holds what searches see: over HTTP a sync
    /// that runs to its end (`POST /v1/reindex`); through MCP, the end of
    /// the sync running, whose table write goes on after the reply.
    pub(super) async fn settle(&self) -> Result<()> {
        match self {
            Client::Http { http, base } => {
                let settled = http.post(format!("{base}/v1/reindex"));
                let settled = settled.json(&json!({}));
                settled.send().await?.error_for_status()?;
            }
            Client::Mcp { scope, .. } => scope.idle().await,
        }
        Ok(())
    }

    /// Call `tool`; the text of its result.
    async fn tool(&self, tool: &str, args: Value) -> Result<String> {
        let params = json!({"name": tool, "arguments": args});
        let r = self.rpc("tools/call", params).await?;
        if r["isError"] != false {
            bail!("{tool} failed: {r}");
        }
        let text = r["content"][0]["text"].as_str().unwrap_or_default();
        Ok(text.to_string())
    }

    /// One JSON-RPC request to the MCP handler (timed as the step "MCP
    /// call"); its result.
    async fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        let Client::Mcp { scope, session } = self else {
            bail!("not an MCP client");
        };
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let line = msg.to_string();
        let handled = handle(scope, session, &line);
        let Some(mut reply) = steps::timed("MCP call", handled).await else {
            bail!("no reply to {method}");
        };
        match reply.get_mut("result") {
            Some(result) => Ok(result.take()),
            None => bail!("{method}: {reply}"),
        }
    }
}
