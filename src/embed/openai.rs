//! Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
//! llama.cpp server, vLLM): batches, a timeout per request, retries with
//! exponential backoff on network errors, timeouts, 429 and 5xx.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use tokio::sync::OnceCell;

use super::{Embedder, normalize};
use crate::config;

pub struct OpenAi {
    client: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
    batch_size: usize,
    max_attempts: u32,
    dim: OnceCell<usize>,
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    index: usize,
    embedding: Vec<f32>,
}

impl OpenAi {
    pub fn new(cfg: &config::Embedder) -> Result<OpenAi> {
        if cfg.base_url.trim().is_empty() {
            bail!("[embedder] kind = \"openai\" needs base_url (e.g. http://127.0.0.1:11434/v1)");
        }
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(cfg.timeout_seconds.max(1)))
            .build()?;
        Ok(OpenAi {
            client,
            url: format!("{}/embeddings", cfg.base_url.trim_end_matches('/')),
            model: cfg.model.clone(),
            api_key: std::env::var(&cfg.api_key_env)
                .ok()
                .filter(|k| !k.is_empty()),
            batch_size: cfg.batch_size.max(1) as usize,
            max_attempts: cfg.max_attempts.max(1),
            dim: OnceCell::new(),
        })
    }

    async fn request(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let body = serde_json::json!({ "model": self.model, "input": texts });
        let mut last_err = anyhow!("no attempt made");
        for attempt in 0..self.max_attempts {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(200 << (attempt - 1).min(6))).await;
            }
            let mut req = self.client.post(&self.url).json(&body);
            if let Some(k) = &self.api_key {
                req = req.bearer_auth(k);
            }
            match req.send().await {
                Ok(resp) if resp.status().is_success() => {
                    let reply: Reply = resp.json().await.with_context(|| {
                        format!(
                            "{} returned a reply that is not an embeddings response",
                            self.url
                        )
                    })?;
                    let mut items = reply.data;
                    if items.len() != texts.len() {
                        bail!(
                            "{} returned {} embeddings for {} texts",
                            self.url,
                            items.len(),
                            texts.len()
                        );
                    }
                    items.sort_by_key(|i| i.index);
                    return Ok(items
                        .into_iter()
                        .map(|mut i| {
                            normalize(&mut i.embedding);
                            i.embedding
                        })
                        .collect());
                }
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    last_err = anyhow!(
                        "{} answered {status}: {}",
                        self.url,
                        text.chars().take(300).collect::<String>()
                    );
                    if !(status.is_server_error() || status.as_u16() == 429) {
                        return Err(last_err);
                    }
                }
                Err(e) if e.is_timeout() => last_err = anyhow!("{} timed out: {e}", self.url),
                Err(e) => last_err = anyhow!("cannot reach {}: {e}", self.url),
            }
            tracing::warn!(attempt = attempt + 1, error = %last_err, "embedding request failed");
        }
        Err(last_err.context(format!(
            "embedding failed after {} attempts",
            self.max_attempts
        )))
    }
}

#[async_trait::async_trait]
impl Embedder for OpenAi {
    fn id(&self) -> String {
        format!("openai:{}@{}", self.model, self.url)
    }

    async fn dim(&self) -> Result<usize> {
        self.dim
            .get_or_try_init(|| async {
                let v = self.request(&["dimension probe".to_string()]).await?;
                Ok(v[0].len())
            })
            .await
            .copied()
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_size) {
            out.extend(self.request(chunk).await?);
        }
        if let Some(v) = out.first() {
            let _ = self.dim.set(v.len());
        }
        Ok(out)
    }
}
