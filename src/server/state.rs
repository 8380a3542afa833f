//! What every route of the daemon shares, the API's and the page's: the
//! daemon's [`State`], the error reply ([`ApiError`]), the memory a route
//! names ([`MemoryName`]), and where a request is applied ([`target`]).

use std::collections::HashMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::memories::{Memories, OnDemand};
use super::shutdown::Shutdown;
use crate::config::Config;
use crate::error::{Error, Kind};
use crate::remedy::Remedy;
use crate::request::{Request, Target};

pub struct State {
    pub memories: Arc<Memories>,
    /// The daemon's configuration: the guard's origins.
    pub config: Config,
    pub token: Option<String>,
    /// Under a root: memory name → the token that opens that memory alone.
    pub tokens: HashMap<String, String>,
    /// The address the daemon is bound to (for the `Host` check).
    pub bound: std::net::SocketAddr,
    /// Long requests give up when it fires.
    pub shutdown: Shutdown,
}

pub(super) type Shared = Arc<State>;

/// An error reply: its status, its message, and (for memd's own errors)
/// its kind, so that a client gives the same exit code as memd run here.
/// A remedy goes with its words for an HTTP caller (`next`, a route under
/// the base the request came by) and as data (`remedy`), which memd's own
/// client says in its caller's words.
pub struct ApiError(
    pub(crate) StatusCode,
    pub(crate) String,
    pub(crate) Option<Kind>,
    pub(crate) Option<(Remedy, String)>,
);

impl ApiError {
    pub(super) fn new(status: StatusCode, msg: impl Into<String>) -> ApiError {
        ApiError(status, msg.into(), None, None)
    }

    pub(super) fn bad(msg: impl Into<String>) -> ApiError {
        ApiError::unread(StatusCode::BAD_REQUEST, msg)
    }

    /// The error of a request to the memory `name` (of a daemon serving
    /// many), whose remedy's route is under `/v1/m/{name}`.
    pub(super) fn under(mut self, name: Option<&str>) -> ApiError {
        if let (Some((_, base)), Some(name)) = (&mut self.3, name) {
            let name =
                percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
            *base = format!("/v1/m/{name}");
        }
        self
    }

    /// A request memd could not read as one (its query, its body, its
    /// content type, its size): `invalid`, as a request that cannot
    /// succeed as given is everywhere, whatever its status.
    pub(super) fn unread(status: StatusCode, msg: impl Into<String>) -> ApiError {
        ApiError(status, msg.into(), Some(Kind::Invalid), None)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = match self.2 {
            Some(kind) => json!({ "error": self.1, "kind": kind }),
            None => json!({ "error": self.1 }),
        };
        if let Some((remedy, base)) = self.3 {
            body["next"] = json!(remedy.said_over_http(&base));
            body["remedy"] = json!(remedy);
        }
        // Nothing was done (a memory moving to another node, a daemon
        // stopping): the same request may be sent again in a moment.
        if self.0 == StatusCode::SERVICE_UNAVAILABLE {
            return (self.0, [(header::RETRY_AFTER, "1")], Json(body)).into_response();
        }
        (self.0, Json(body)).into_response()
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> ApiError {
        let status = match e.kind() {
            Kind::Busy if e.is_moved() => StatusCode::SERVICE_UNAVAILABLE,
            Kind::Busy => StatusCode::CONFLICT,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::Invalid => StatusCode::BAD_REQUEST,
            Kind::Corrupt | Kind::Unfinished | Kind::Other => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let remedy = e.remedy().map(|r| (r.clone(), "/v1".to_string()));
        ApiError(status, format!("{e:#}"), Some(e.kind()), remedy)
    }
}

/// The memory a request's route names (`/v1/m/{name}/…`, `/m/{name}/…`),
/// as the router decoded it; `None` on every other route (the one memory,
/// and the operator's routes, whose `{name}` is not the memory the request
/// runs on). The one place a route's memory is read from its path.
pub(crate) struct MemoryName(pub Option<String>);

impl MemoryName {
    /// The name folded as every lookup folds it ([`super::tenant`]): what
    /// the memories' tokens are keyed by.
    pub(crate) fn folded(&self) -> Option<String> {
        self.0.as_ref().map(|n| n.to_ascii_lowercase())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for MemoryName {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map(MatchedPath::as_str);
        let on_memory =
            route.is_some_and(|r| r.starts_with("/v1/m/{name}") || r.starts_with("/m/{name}"));
        if !on_memory {
            return Ok(MemoryName(None));
        }
        let params = RawPathParams::from_request_parts(parts, state).await.ok();
        let name = params.and_then(|p| {
            p.iter()
                .find(|(k, _)| *k == "name")
                .map(|(_, v)| v.to_string())
        });
        Ok(MemoryName(name))
    }
}

/// Where `req` is applied: the one memory; or memory `name` under the
/// root, opened now only if the request needs its index, and made by a
/// first write.
pub(super) async fn target<R: Request>(
    s: &Shared,
    name: Option<&str>,
    req: &R,
) -> Result<Target, ApiError> {
    let Some(name) = name else {
        let one = s
            .memories
            .the_one()
            .ok_or_else(|| ApiError::bad("no memory"))?;
        return Ok(one.target());
    };
    super::memories::check_name(name)?;
    if req.needs_index() {
        return Ok(s.memories.get(name, req.creates()).await?.target());
    }
    let memory = s.memories.memory(name, req.creates())?;
    let held = OnDemand::new(s.memories.clone(), name);
    Ok(Target::here(memory, Arc::new(held)))
}
