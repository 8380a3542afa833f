//! The LLM client: any OpenAI-compatible `/v1/chat/completions` endpoint
//! (OpenAI, Ollama, llama.cpp server, vLLM) over reqwest.
//!
//! Replies are asked for as JSON (`response_format`) when `json_mode` is on;
//! a server that rejects that parameter is asked again without it, once, and
//! not asked with it again. Whatever comes back, [`extract_json`] takes the
//! first JSON value out of it: small local models wrap JSON in code fences
//! or put a sentence before it. Whether the JSON makes sense is for the
//! caller to judge.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config;
use crate::error::{Context, Result, bail};
use crate::http::Failure;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn user(content: impl Into<String>) -> Message {
        Message {
            role: "user".into(),
            content: content.into(),
        }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message {
            role: "assistant".into(),
            content: content.into(),
        }
    }
}

/// What one completion cost, as the server reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

pub struct Client {
    http: reqwest::Client,
    url: String,
    model: String,
    api_key: Option<String>,
    max_attempts: u32,
    json_mode: AtomicBool,
}

#[derive(Deserialize)]
struct Reply {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ReplyUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: ReplyMessage,
}

#[derive(Deserialize)]
struct ReplyMessage {
    #[serde(default)]
    content: Option<String>,
}

#[derive(Deserialize)]
struct ReplyUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

impl Client {
    pub fn new(cfg: &config::Llm) -> Result<Client> {
        if !cfg.configured() {
            bail!("no LLM configured ([llm] base_url is empty)");
        }
        Ok(Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(cfg.timeout_seconds.max(1)))
                .build()?,
            url: format!("{}/chat/completions", cfg.base_url.trim_end_matches('/')),
            model: cfg.model.clone(),
            api_key: std::env::var(&cfg.api_key_env)
                .ok()
                .filter(|k| !k.is_empty()),
            max_attempts: cfg.max_attempts.max(1),
            json_mode: AtomicBool::new(cfg.json_mode),
        })
    }

    /// The model name, as recorded in the journal.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One completion. Network errors, timeouts, 429 and 5xx are retried
    /// with exponential backoff; other statuses fail at once.
    pub async fn chat(&self, messages: &[Message]) -> Result<(String, Usage)> {
        let resp = loop {
            let json_mode = self.json_mode.load(Ordering::Relaxed);
            let mut body = serde_json::json!({
                "model": self.model,
                "messages": messages,
                "temperature": 0,
            });
            if json_mode {
                body["response_format"] = serde_json::json!({"type": "json_object"});
            }
            match crate::http::post_json(
                &self.http,
                &self.url,
                self.api_key.as_deref(),
                &body,
                self.max_attempts,
                "LLM",
            )
            .await
            {
                Ok(resp) => break resp,
                Err(Failure::Status(s, text))
                    if json_mode && s.as_u16() == 400 && text.contains("response_format") =>
                {
                    tracing::info!(
                        "the LLM server does not take response_format; asking without it"
                    );
                    self.json_mode.store(false, Ordering::Relaxed);
                }
                Err(f) => return Err(f.into_error(&self.url)),
            }
        };
        let reply: Reply = resp.json().await.with_context(|| {
            format!(
                "{} returned a reply that is not a chat completion",
                self.url
            )
        })?;
        let usage = reply
            .usage
            .map(|u| Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            })
            .unwrap_or_default();
        let content = reply
            .choices
            .into_iter()
            .next()
            .and_then(|c| c.message.content)
            .with_context(|| format!("{} returned no message", self.url))?;
        Ok((content, usage))
    }
}

/// The first JSON object or array in `reply`, ignoring code fences, text
/// before it and anything after it.
pub fn extract_json(reply: &str) -> Result<serde_json::Value> {
    let mut first_err = None;
    for (i, c) in reply.char_indices() {
        if c != '{' && c != '[' {
            continue;
        }
        let mut values =
            serde_json::Deserializer::from_str(&reply[i..]).into_iter::<serde_json::Value>();
        match values.next() {
            Some(Ok(v)) => return Ok(v),
            Some(Err(e)) => {
                first_err.get_or_insert(e);
            }
            None => {}
        }
    }
    let preview: String = reply.chars().take(200).collect();
    match first_err {
        Some(e) => bail!("the reply is not valid JSON ({e}): {preview:?}"),
        None => bail!("the reply holds no JSON object: {preview:?}"),
    }
}
