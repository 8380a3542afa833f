//! The client side of the HTTP API: a request sent to the daemon that
//! serves a memory directory, and its reply read back. The URL, the query
//! and the body all come from the request's [`Route`] and its fields (as
//! JSON), the way the server reads them.

use serde_json::Value;

use super::route::{Method, Route};
use crate::error::{Context, Error, Result, err};
use crate::layout::Layout;
use crate::server::info::running;

/// The daemon serving one memory directory.
pub struct Client {
    base: String,
    pid: u32,
    http: reqwest::Client,
    token: Option<String>,
    /// The memory's name when the daemon serves many (`serve --root`): its
    /// routes are `/v1/m/NAME/…`.
    memory: Option<String>,
}

impl Client {
    /// The daemon serving `layout`, if one runs. It is sent `MEMD_TOKEN`
    /// when that is set.
    pub fn for_memory(layout: &Layout) -> Option<Client> {
        let info = running(layout)?;
        Some(Client {
            base: format!("http://{}", info.listen),
            pid: info.pid,
            http: reqwest::Client::new(),
            token: std::env::var("MEMD_TOKEN").ok().filter(|t| !t.is_empty()),
            memory: info.memory,
        })
    }

    /// One line for stderr saying where a request went.
    pub fn describe(&self) -> String {
        format!("through the daemon at {} (pid {})", self.base, self.pid)
    }

    /// Send a request (its `route`, and its fields as JSON) to the daemon
    /// and read its reply.
    pub async fn send(&self, route: Route, req: Value) -> Result<Value> {
        let Value::Object(mut fields) = req else {
            return Err(err!("a request is a JSON object"));
        };
        let mut url = self.base_url()?;
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|_| err!("bad daemon address {}", self.base))?;
            for part in route.path.split('/').filter(|p| !p.is_empty()) {
                match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(field) => segments.push(&text_of(fields.remove(field))),
                    None => segments.push(part),
                };
            }
        }
        let path = url.path().to_string();
        let method = match route.method {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Delete => reqwest::Method::DELETE,
            Method::Patch => reqwest::Method::PATCH,
        };
        let mut http = self.http.request(method, url);
        if route.method.in_query() {
            let query: Vec<(String, String)> = fields
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, text_of(Some(v))))
                .collect();
            http = http.query(&query);
        } else {
            http = http.json(&Value::Object(fields));
        }
        if let Some(t) = &self.token {
            http = http.bearer_auth(t);
        }
        self.reply(http, &path).await
    }

    /// `/v1` of the daemon, or `/v1/m/NAME` of the memory among many.
    fn base_url(&self) -> Result<reqwest::Url> {
        let mut url = reqwest::Url::parse(&self.base)
            .map_err(|e| err!("bad daemon address {}: {e}", self.base))?;
        {
            let mut segments = url
                .path_segments_mut()
                .map_err(|_| err!("bad daemon address {}", self.base))?;
            segments.push("v1");
            if let Some(m) = &self.memory {
                segments.push("m").push(m);
            }
        }
        Ok(url)
    }

    async fn reply(&self, http: reqwest::RequestBuilder, path: &str) -> Result<Value> {
        let resp = http
            .send()
            .await
            .with_context(|| format!("cannot reach the daemon at {}", self.base))?;
        let status = resp.status();
        let value: Value = resp
            .json()
            .await
            .with_context(|| format!("the daemon's reply to {path} is not JSON"))?;
        if !status.is_success() {
            let msg = value["error"].as_str().unwrap_or("no detail");
            let kind = serde_json::from_value(value["kind"].clone()).ok();
            let said = Error::Daemon {
                status: status.as_u16(),
                kind,
                message: msg.to_string(),
            };
            // The remedy as data, for this caller to say in its own words.
            return Err(match serde_json::from_value(value["remedy"].clone()) {
                Ok(remedy) => said.remedied(remedy),
                Err(_) => said,
            });
        }
        Ok(value)
    }
}

/// A field's value as it goes in a path or a query: a string as it is,
/// anything else as JSON.
fn text_of(v: Option<Value>) -> String {
    match v {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => String::new(),
    }
}
