//! Any OpenAI-compatible `/v1/embeddings` endpoint (OpenAI, Ollama,
//! llama.cpp server, vLLM): batches, a timeout per request, retries with
//! exponential backoff on network errors, timeouts, 429 and 5xx.

use std::time::Duration;

use serde::Deserialize;
use tokio::sync::OnceCell;

use super::{Embedder, normalize};
use crate::error::{Context, Result, bail};
use crate::{config, http};

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
        let resp = http::post_json(
            &self.client,
            &self.url,
            self.api_key.as_deref(),
            &body,
            self.max_attempts,
            "embedding",
        )
        .await
        .map_err(|f| f.into_error(&self.url))?;
        // A 3,072-dimension vector is ~120 KiB of JSON at ~40 bytes a
        // number; 1 MiB per text is room for any honest reply.
        let max = (texts.len().max(1)) << 20;
        let body = http::read_capped(resp, max).await?;
        let reply: Reply = serde_json::from_slice(&body).with_context(|| {
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
        Ok(items
            .into_iter()
            .map(|mut i| {
                normalize(&mut i.embedding);
                i.embedding
            })
            .collect())
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
