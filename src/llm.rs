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
        let body = crate::http::read_capped(resp, MAX_REPLY_BYTES).await?;
        let reply: Reply = serde_json::from_slice(&body).with_context(|| {
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

/// The largest chat completion read, in bytes. Measured replies of
/// Qwen2.5-Coder-1.5B to a 10-fact cluster average ~200 completion tokens
/// (5,216 over 26 calls, EVALUATION.md), about 1 KB; a thousand times that
/// is room for any honest reply, and a bound for any other (a 60 MB reply
/// once took 499 MB of memory).
const MAX_REPLY_BYTES: usize = 1 << 20;

/// How many `{` or `[` [`extract_json`] tries to parse from. Replies put
/// their JSON first or after a short preface; trying from every bracket of
/// a reply made of brackets was quadratic (2 MB of `[` took 60–100 s).
const MAX_JSON_STARTS: usize = 16;

/// The first JSON object or array in `reply`, ignoring code fences, text
/// before it and anything after it; tried from at most
/// [`MAX_JSON_STARTS`] brackets.
pub fn extract_json(reply: &str) -> Result<serde_json::Value> {
    let mut first_err = None;
    let starts = reply.char_indices().filter(|(_, c)| *c == '{' || *c == '[');
    for (i, _) in starts.take(MAX_JSON_STARTS) {
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
