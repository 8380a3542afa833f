//! The API of a daemon that serves many memories (`memd serve --root`):
//!
//! | route                        | does                                      |
//! |------------------------------|-------------------------------------------|
//! | `/v1/m/{name}/…`             | the one-memory API of memory `name`: `/v1/m/alice/search` is `/v1/search` of `DIR/alice`; `/v1/m/alice/healthz` its liveness |
//! | `GET /v1/memories`           | every memory under the root, and which are open |
//! | `GET /healthz`               | the daemon's liveness                     |
//!
//! A memory is created by its first `POST /v1/m/{name}/facts`; any other
//! request for one that does not exist is a 404. Appending facts is a file
//! write, answered without opening the memory's index. A name that
//! [`crate::memories::check_name`] refuses is a 400, before any file is
//! touched.
//!
//! Tokens: with the daemon's token set, every request needs it, except that
//! a memory's own token (from `--tokens FILE`) opens that memory's routes,
//! and only those. Without any token, the daemon listens on loopback only
//! (as `memd serve`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{DefaultBodyLimit, FromRequest, Request};
use axum::http::{Method, StatusCode, Uri};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use axum::{Json, Router};
use serde_json::json;
use tower::ServiceExt;

use super::{ApiError, MAX_BODY};
use crate::config::Config;
use crate::memories::Memories;
use crate::shutdown::Shutdown;

pub struct State {
    pub memories: Arc<Memories>,
    /// The root's configuration (`DIR/memd.toml`): the guard's origins.
    pub config: Config,
    pub token: Option<String>,
    /// Memory name → the token that opens that memory alone.
    pub tokens: HashMap<String, String>,
    pub bound: std::net::SocketAddr,
    pub shutdown: Shutdown,
}

type Shared = Arc<State>;

pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"ok": true})) }))
        .route("/v1/memories", get(memories))
        .route("/v1/m/{name}", any(forward))
        .route("/v1/m/{name}/{*rest}", any(forward))
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such route".into()) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// The memory a path names, if it is under `/v1/m/`.
fn memory_of(path: &str) -> Option<&str> {
    path.strip_prefix("/v1/m/")?.split('/').next()
}

/// The host and origin checks of [`crate::guard`], then the tokens.
async fn guard(
    axum::extract::State(s): axum::extract::State<Shared>,
    req: Request,
    next: Next,
) -> Response {
    let origins = &s.config.server.allowed_origins;
    let refused = crate::guard::refuse(req.headers(), s.bound, origins, None);
    if let Some((code, msg)) = refused {
        let status = StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN);
        return ApiError(status, msg).into_response();
    }
    if !opened(&s, &req) {
        let msg =
            "this daemon needs `Authorization: Bearer <token>` (the daemon's, or the memory's own)";
        return ApiError(StatusCode::UNAUTHORIZED, msg.into()).into_response();
    }
    next.run(req).await
}

/// Whether `req` may pass: no token is set for what it asks, or it bears
/// the daemon's token or its memory's own.
fn opened(s: &State, req: &Request) -> bool {
    let own = memory_of(req.uri().path()).and_then(|m| s.tokens.get(m));
    let mut tokens = s.token.iter().chain(own).peekable();
    tokens.peek().is_none() || tokens.any(|t| crate::guard::bears(req.headers(), t))
}

async fn memories(axum::extract::State(s): axum::extract::State<Shared>) -> Response {
    let list = match s.memories.names() {
        Ok(names) => names,
        Err(e) => return ApiError::from(e).into_response(),
    };
    let listed: Vec<_> = list
        .iter()
        .map(|n| json!({"name": n, "open": s.memories.is_open(n)}))
        .collect();
    Json(json!({"memories": listed, "open": s.memories.open_count()})).into_response()
}

/// `/v1/m/{name}/REST` → `/REST` of memory `name`'s own API
/// ([`super::router`]), whose routes are `/v1/…` and `/healthz`.
async fn forward(axum::extract::State(s): axum::extract::State<Shared>, req: Request) -> Response {
    match forwarded(&s, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn forwarded(s: &State, req: Request) -> Result<Response, ApiError> {
    let path = req.uri().path().to_string();
    let name = memory_of(&path).unwrap_or_default().to_string();
    let rest = path["/v1/m/".len() + name.len()..].trim_start_matches('/');
    let inner = match rest {
        "healthz" => "/healthz".to_string(),
        _ => format!("/v1/{rest}"),
    };
    let uri = match req.uri().query() {
        Some(q) => format!("{inner}?{q}"),
        None => inner,
    };
    let uri = uri.parse::<Uri>().map_err(|_| ApiError::bad("bad path"))?;
    // A new request, not this one with its URI changed: this one carries
    // the outer route's path parameters, which the inner routes would read.
    let (parts, body) = req.into_parts();
    let mut req = Request::new(body);
    *req.method_mut() = parts.method;
    *req.uri_mut() = uri;
    *req.headers_mut() = parts.headers;
    *req.version_mut() = parts.version;
    // Appending facts is a file write: no index, so the memory is not
    // opened for it (and is made by it, its first write).
    if req.method() == Method::POST && rest == "facts" {
        let layout = crate::memories::layout_of(&s.memories.root, &name, true)?;
        s.memories.mark_used(&name);
        let body = Json::<super::FactsBody>::from_request(req, &()).await;
        return super::append_facts(layout, body).await;
    }
    let m = s.memories.get(&name, false).await?;
    let router = m.api.get_or_init(|| {
        super::router(Arc::new(super::State {
            layout: m.layout.clone(),
            config: m.config.clone(),
            index: m.index.clone(),
            token: None,
            bound: s.bound,
            shutdown: s.shutdown.clone(),
        }))
    });
    let reply = router.clone().oneshot(req).await;
    // The request ran with the memory held; it may be closed from now on.
    drop(m);
    Ok(reply.unwrap_or_else(|never| match never {}))
}
