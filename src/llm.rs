//! The LLM client: any OpenAI-compatible `/v1/chat/completions` endpoint
//! (OpenAI, Ollama, llama.cpp server, vLLM) over reqwest.
//!
//! Replies are asked for as JSON (`response_format`) when `json_mode` is on:
//! with the caller's JSON schema when it gives one (`json_schema`, so that a
//! server that constrains decoding, as llama.cpp, vLLM, Ollama and OpenAI
//! do, cannot produce an op on an entry that was not shown), else as any
//! JSON object (`json_object`). A server that refuses one (a 400 naming
//! `response_format` or the schema) is asked again one step down (schema →
//! object → plain text), and the process remembers per endpoint URL what it
//! refused, so a daemon asks each endpoint the way it takes from then on.
//! Whatever comes back, [`extract_json`] takes the
//! first JSON value out of it: small local models wrap JSON in code fences
//! or put a sentence before it. Whether the JSON makes sense is for the
//! caller to judge.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config;
use crate::error::{Context, Result, bail};
use crate::http::{Failure, post_json, read_capped};
use crate::usage::Budget;

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
    /// The most structured [`Format`] the endpoint is asked for.
    format: AtomicU8,
    /// What the calls may spend, and where they are recorded (a memory's
    /// runs; none for evaluations).
    budget: Option<std::sync::Arc<Budget>>,
}

/// How a reply is asked for, most structured first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Format {
    /// `response_format: json_schema`, when the caller has a schema.
    Schema = 0,
    /// `response_format: json_object`.
    Object = 1,
    /// No `response_format`.
    Plain = 2,
}

impl Format {
    fn from_u8(v: u8) -> Format {
        match v {
            0 => Format::Schema,
            1 => Format::Object,
            _ => Format::Plain,
        }
    }
}

/// What each endpoint (by URL) refused in this process: the most
/// structured format it still takes.
fn learned() -> &'static Mutex<HashMap<String, Format>> {
    static LEARNED: std::sync::OnceLock<Mutex<HashMap<String, Format>>> =
        std::sync::OnceLock::new();
    LEARNED.get_or_init(Default::default)
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
        let url = format!("{}/chat/completions", cfg.base_url.trim_end_matches('/'));
        let configured = match cfg.json_mode {
            true => Format::Schema,
            false => Format::Plain,
        };
        let known = learned().lock().unwrap().get(&url).copied();
        let format = known.map_or(configured, |k| k.max(configured));
        Ok(Client {
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(cfg.timeout_seconds.max(1)))
                .build()?,
            url,
            model: cfg.model.clone(),
            api_key: std::env::var(&cfg.api_key_env)
                .ok()
                .filter(|k| !k.is_empty()),
            max_attempts: cfg.max_attempts.max(1),
            format: AtomicU8::new(format as u8),
            budget: None,
        })
    }

    /// This client, its calls admitted by and recorded in `budget`.
    pub fn with_budget(mut self, budget: Budget) -> Client {
        self.budget = Some(std::sync::Arc::new(budget));
        self
    }

    /// The most structured format this endpoint is asked for now.
    pub fn format(&self) -> Format {
        Format::from_u8(self.format.load(Ordering::Relaxed))
    }

    /// The endpoint refused `sent`: ask it one step down from now on.
    fn refused(&self, sent: Format) {
        let next = match sent {
            Format::Schema => Format::Object,
            _ => Format::Plain,
        };
        self.format.fetch_max(next as u8, Ordering::Relaxed);
        let mut learned = learned().lock().unwrap();
        let known = learned.entry(self.url.clone()).or_insert(next);
        *known = (*known).max(next);
    }

    /// The model name, as recorded in the journal.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// One completion, asked for as any JSON object (see the module doc).
    /// Network errors, timeouts, 429 and 5xx are retried with exponential
    /// backoff; other statuses fail at once.
    pub async fn chat(&self, messages: &[Message]) -> Result<(String, Usage)> {
        self.chat_with(messages, None).await
    }

    /// One completion whose reply must follow `schema` (a JSON Schema),
    /// where the endpoint takes one. With a budget, a call that could pass
    /// it is not made ([`crate::Error::OverBudget`]), and what a call made
    /// spent is recorded.
    pub async fn chat_with(
        &self,
        messages: &[Message],
        schema: Option<&serde_json::Value>,
    ) -> Result<(String, Usage)> {
        let Some(budget) = &self.budget else {
            return self.call(messages, schema).await;
        };
        let chars = messages.iter().map(|m| m.content.len()).sum();
        let admitted = budget.admit(chars)?;
        let reply = self.call(messages, schema).await;
        let tokens = reply
            .as_ref()
            .ok()
            .map(|(_, u)| u.prompt_tokens + u.completion_tokens);
        budget.spent(admitted, tokens)?;
        reply
    }

    async fn call(
        &self,
        messages: &[Message],
        schema: Option<&serde_json::Value>,
    ) -> Result<(String, Usage)> {
        let resp = loop {
            let sent = match (self.format(), schema) {
                (Format::Schema, None) => Format::Object,
                (f, _) => f,
            };
            let mut body = serde_json::json!({
                "model": self.model,
                "messages": messages,
                "temperature": 0,
            });
            match (sent, schema) {
                (Format::Schema, Some(schema)) => {
                    body["response_format"] = serde_json::json!({
                        "type": "json_schema",
                        "json_schema": {"name": "reply", "strict": true, "schema": schema},
                    });
                }
                (Format::Object, _) => {
                    body["response_format"] = serde_json::json!({"type": "json_object"});
                }
                _ => {}
            }
            match post_json(
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
                    if sent != Format::Plain && s.as_u16() == 400 && about_format(&text) =>
                {
                    tracing::info!(
                        refused = ?sent,
                        "the LLM server does not take this response_format; asking one step down"
                    );
                    self.refused(sent);
                }
                Err(f) => return Err(f.into_error(&self.url)),
            }
        };
        let body = read_capped(resp, MAX_REPLY_BYTES).await?;
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

/// Whether an error message is about the `response_format` asked for.
fn about_format(text: &str) -> bool {
    let text = text.to_lowercase();
    ["response_format", "json_schema", "schema", "grammar"]
        .iter()
        .any(|w| text.contains(w))
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
