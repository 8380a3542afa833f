//! POSTing JSON to an OpenAI-compatible server, as the embedder and the LLM
//! client both do: a bearer key if one is set, retries with exponential
//! backoff on what may pass (network errors, timeouts, 429, 5xx), and an
//! immediate answer on what will not (any other status), so the caller can
//! decide what a 400 means.

use std::time::Duration;

use crate::{Error, Result};

/// Why a POST did not succeed.
pub enum Failure {
    /// A status that retrying will not change, with the body's start.
    Status(reqwest::StatusCode, String),
    /// Retries used up (or the request could not be built).
    Gave(Error),
}

impl Failure {
    pub(crate) fn into_error(self, url: &str) -> Error {
        match self {
            Failure::Status(s, body) => Error::Service(format!("{url} answered {s}: {body}")),
            Failure::Gave(e) => e,
        }
    }
}

/// The body of `resp`, read a chunk at a time and refused past `max`
/// bytes, so a hostile or broken server cannot make memd hold an
/// unbounded reply in memory.
pub(crate) async fn read_capped(mut resp: reqwest::Response, max: usize) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await? {
        if body.len() + chunk.len() > max {
            return Err(Error::Service(format!(
                "{} sent a reply larger than {max} bytes; it was not read",
                resp.url()
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// POST `body` to `url`; the first successful response.
pub(crate) async fn post_json(
    client: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: &serde_json::Value,
    max_attempts: u32,
    what: &str,
) -> Result<reqwest::Response, Failure> {
    let max_attempts = max_attempts.max(1);
    let mut last_err = Error::Service("no attempt made".into());
    for attempt in 0..max_attempts {
        if attempt > 0 {
            tokio::time::sleep(Duration::from_millis(200 << (attempt - 1).min(6))).await;
        }
        let mut req = client.post(url).json(body);
        if let Some(k) = api_key {
            req = req.bearer_auth(k);
        }
        match req.send().await {
            Ok(resp) if resp.status().is_success() => return Ok(resp),
            Ok(resp) => {
                let status = resp.status();
                let text: String = resp
                    .text()
                    .await
                    .unwrap_or_default()
                    .chars()
                    .take(300)
                    .collect();
                if !(status.is_server_error() || status.as_u16() == 429) {
                    return Err(Failure::Status(status, text));
                }
                last_err = Error::Service(format!("{url} answered {status}: {text}"));
            }
            Err(e) if e.is_timeout() => last_err = Error::Service(format!("{url} timed out: {e}")),
            Err(e) => last_err = Error::Service(format!("cannot reach {url}: {e}")),
        }
        tracing::warn!(attempt = attempt + 1, error = %last_err, "{what} request failed");
    }
    Err(Failure::Gave(last_err.context(format!(
        "{what} failed after {max_attempts} attempts"
    ))))
}
