//! The daemon's HTTP API (axum, JSON). Every request of
//! [`crate::request`] has one route, made from its type here: the path's
//! `{field}`s, the query (GET, DELETE) or the JSON body (POST) are read
//! into the request, which is applied once ([`crate::request::Target`]).
//!
//! For one memory directory the routes are `/v1/…`; under a root they are
//! `/v1/m/{name}/…` (nested, the name checked before any file is touched),
//! with `GET /v1/memories` listing the memories and which are open. Both
//! answer `GET /healthz` and describe themselves at `GET /v1/openapi.json`
//! ([`super::openapi`]).
//!
//! Every request is screened by the guard first ([`super::guard`]: host,
//! origin, tokens). Errors are `{"error": "..."}` with a 4xx or 5xx status.
//! Bodies are capped at [`MAX_BODY`]. No request names a path: ids are
//! looked up among entries and facts, never joined onto the file system.

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, RawPathParams, Request as HttpRequest};
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use axum::{Json, Router};
use serde_json::{Value, json};

pub use super::state::{ApiError, State};
use super::state::{MemoryName, Shared, target};
use crate::request::{self, Consolidate, Method, Request};
use crate::steps;

/// Largest request body accepted (bytes).
pub(crate) use crate::limits::MAX_BODY;

type Reply = Result<Response, ApiError>;

pub(crate) fn router(state: Shared) -> Router {
    let mut mount = Mount(Router::new());
    request::each(&mut mount);
    let memory = mount.0.route("/healthz", get(memory_health));
    let (app, login) = match state.memories.root_dir() {
        None => (
            Router::new()
                .nest("/v1", memory)
                .merge(super::page::routes()),
            Router::new().route("/login", super::page::login_route()),
        ),
        Some(_) => (
            Router::new()
                .route("/v1/memories", get(memories))
                .route("/v1/handover/{name}", post(handover))
                .route("/v1/takeover/{name}", post(takeover))
                .nest("/v1/m/{name}", memory)
                .route("/", get(super::page::memories))
                // A nested `/` is `/m/{name}` alone; the page's links end in `/`.
                .route("/m/{name}/", get(super::page::index))
                .nest("/m/{name}", super::page::routes()),
            Router::new().route("/m/{name}/login", super::page::login_route()),
        ),
    };
    app.route("/healthz", get(|| async { Json(json!({"ok": true})) }))
        .route("/v1/openapi.json", get(openapi))
        // A request on a memory holds it while it runs (a handover waits).
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), lease))
        // Every route above asks for the token; the login form, merged
        // after, is the one route that does not.
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), token))
        .merge(login)
        .fallback(|| async { ApiError::new(StatusCode::NOT_FOUND, "no such route") })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(state.clone(), screen))
        .layer(axum::middleware::from_fn(super::page::headers))
        .with_state(state)
}

/// Mounts each request's route on the one-memory router.
struct Mount(Router<Shared>);

impl request::Each for Mount {
    fn one<R: Request>(&mut self) {
        let route: MethodRouter<Shared> = match R::ROUTE.method {
            Method::Get => axum::routing::get(handle::<R>),
            Method::Post => axum::routing::post(handle::<R>),
            Method::Delete => axum::routing::delete(handle::<R>),
            Method::Patch => axum::routing::patch(handle::<R>),
        };
        let router = std::mem::take(&mut self.0);
        self.0 = router.route(R::ROUTE.path, route);
    }
}

/// Refuse a request from another host or another site's page, before
/// any route runs ([`super::guard::refuse_page`]).
async fn screen(
    axum::extract::State(s): axum::extract::State<Shared>,
    req: HttpRequest,
    next: Next,
) -> Response {
    let allowed = &s.config.server.allowed_origins;
    match super::guard::refuse_page(req.headers(), s.bound, allowed) {
        Some((code, msg)) => refused(code, msg),
        None => next.run(req).await,
    }
}

/// Refuse a request to a route that asks for a token without one (the
/// daemon's, or the memory's own), once the router matched the route.
async fn token(
    axum::extract::State(s): axum::extract::State<Shared>,
    name: MemoryName,
    req: HttpRequest,
    next: Next,
) -> Response {
    let path = req.uri().path().to_string();
    let own = name.folded().and_then(|m| s.tokens.get(&m).cloned());
    let check = super::guard::Check {
        tokens: s
            .token
            .iter()
            .chain(own.iter())
            .map(String::as_str)
            .collect(),
        many: s.memories.root_dir().is_some(),
    };
    match check.refuse(req.headers()) {
        Some(_) if super::page::is_page(&path) => super::page::refused(name.0.as_deref()),
        Some((code, msg)) => refused(code, msg),
        None => next.run(req).await,
    }
}

/// Hold a lease on the memory the path names while the request runs
/// ([`super::moves`]): refused, with nothing done, while it is being
/// handed over to another node or once it was.
async fn lease(
    axum::extract::State(s): axum::extract::State<Shared>,
    name: MemoryName,
    req: HttpRequest,
    next: Next,
) -> Response {
    let Some(name) = name.folded() else {
        return next.run(req).await;
    };
    match s.memories.enter(&name) {
        Ok(lease) => {
            let reply = next.run(req).await;
            drop(lease);
            reply
        }
        Err(e) => ApiError::from(e).into_response(),
    }
}

fn refused(code: u16, msg: String) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN);
    tracing::info!(status = code, "request refused: {msg}");
    ApiError::new(status, msg).into_response()
}

/// One request of type `R`, read from the path, the query or the body,
/// and applied at the memory the path names.
async fn handle<R: Request>(
    state: axum::extract::State<Shared>,
    name: MemoryName,
    params: RawPathParams,
    uri: Uri,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Reply {
    let body = body.map_err(|e| ApiError::unread(e.status(), e.body_text()))?;
    let handled = handled::<R>(state, (name, params), uri, headers, body);
    steps::timed("HTTP handler", handled).await
}

async fn handled<R: Request>(
    axum::extract::State(s): axum::extract::State<Shared>,
    (MemoryName(name), params): (MemoryName, RawPathParams),
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Reply {
    // The request's own fields in the path (an entry's id, a run's).
    let path: Vec<(String, String)> = (params.iter())
        .filter(|(k, _)| *k != "name")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let req: R = match R::ROUTE.method.in_query() {
        true => from_query(&path, uri.query().unwrap_or(""))?,
        false => from_body(&path, &headers, &body)?,
    };
    let target = target(&s, name.as_deref(), &req).await?;
    // A remedy's route goes under the base the request came by.
    let under = name.as_deref();
    let applied = async {
        req.apply(&target)
            .await
            .map_err(|e| ApiError::from(e).under(under))
    };
    let reply = match std::any::TypeId::of::<R>() == std::any::TypeId::of::<Consolidate>() {
        true => tokio::select! {
            r = applied => r?,
            _ = s.shutdown.recv() => return Err(ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "the daemon is shutting down; the run was stopped before writing and its facts stay pending",
            )),
        },
        false => applied.await?,
    };
    Ok(respond::<R>(reply))
}

/// A request from the path's fields and the query string.
fn from_query<R: Request>(path: &[(String, String)], query: &str) -> Result<R, ApiError> {
    let mut pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
        .map_err(|e| ApiError::bad(format!("invalid query string: {e}")))?;
    pairs.extend(path.iter().cloned());
    let joined = serde_urlencoded::to_string(&pairs)
        .map_err(|e| ApiError::bad(format!("invalid query string: {e}")))?;
    serde_urlencoded::from_str(&joined)
        .map_err(|e| ApiError::bad(format!("Failed to deserialize query string: {e}")))
}

/// A request from the path's fields and the JSON body (an empty body is
/// `{}`). As axum's `Json` answers: 415 without a JSON content type, 400
/// for a body that is not JSON, 422 for JSON that is not the request.
fn from_body<R: Request>(
    path: &[(String, String)],
    headers: &HeaderMap,
    body: &[u8],
) -> Result<R, ApiError> {
    let mut value = match body.iter().all(u8::is_ascii_whitespace) {
        true => json!({}),
        false => {
            if !json_content(headers) {
                return Err(ApiError::unread(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "Expected request with `Content-Type: application/json`",
                ));
            }
            serde_json::from_slice::<Value>(body).map_err(|e| {
                ApiError::bad(format!("Failed to parse the request body as JSON: {e}"))
            })?
        }
    };
    let Some(fields) = value.as_object_mut() else {
        return Err(ApiError::unread(
            StatusCode::UNPROCESSABLE_ENTITY,
            "the request body must be a JSON object",
        ));
    };
    for (k, v) in path {
        fields.insert(k.clone(), Value::String(v.clone()));
    }
    serde_json::from_value(value).map_err(|e| {
        ApiError::unread(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("Failed to deserialize the JSON body into the target type: {e}"),
        )
    })
}

/// Whether the request says its body is JSON (`application/json`, or an
/// `application/…+json` type).
fn json_content(headers: &HeaderMap) -> bool {
    let Some(v) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = v
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// The reply as JSON, or as it is for a request whose reply is not JSON
/// (labelled UTF-8 only when it is).
fn respond<R: Request>(reply: R::Reply) -> Response {
    let Some(media) = R::MEDIA else {
        return steps::timed_now("reply serialised", || Json(reply).into_response());
    };
    let bytes = R::raw(&reply);
    let kind = match std::str::from_utf8(&bytes) {
        Ok(_) => format!("{media}; charset=utf-8"),
        Err(_) => media.to_string(),
    };
    ([(header::CONTENT_TYPE, kind)], bytes).into_response()
}

/// A memory's liveness: `/v1/healthz`, or `/v1/m/{name}/healthz` (a 404
/// when there is no such memory).
async fn memory_health(
    axum::extract::State(s): axum::extract::State<Shared>,
    params: RawPathParams,
) -> Reply {
    if let Some((_, name)) = params.iter().find(|(k, _)| *k == "name") {
        super::memories::check_name(name)?;
        s.memories.memory(name, false)?;
    }
    Ok(Json(json!({"ok": true})).into_response())
}

async fn memories(axum::extract::State(s): axum::extract::State<Shared>) -> Reply {
    let names = s.memories.names()?;
    let listed: Vec<_> = names
        .iter()
        .map(|n| json!({"name": n, "open": s.memories.is_open(n)}))
        .collect();
    let moved = s.memories.handed_over();
    let reply = json!({"memories": listed, "open": s.memories.open_count(), "moved": moved});
    Ok(Json(reply).into_response())
}

/// `POST /v1/handover/{name}` (a root's operator, deploy/move.sh): memory
/// `name` drained, closed and moved out for another node to take over
/// ([`super::moves`]).
async fn handover(
    axum::extract::State(s): axum::extract::State<Shared>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Reply {
    operator(&s)?;
    let done = s.memories.hand_over(&name).await?;
    Ok(Json(done).into_response())
}

/// `POST /v1/takeover/{name}`: memory `name` served here from the copy an
/// operator put in `.memd/incoming/` ([`super::moves`]).
async fn takeover(
    axum::extract::State(s): axum::extract::State<Shared>,
    axum::extract::Path(name): axum::extract::Path<String>,
) -> Reply {
    operator(&s)?;
    let done = s.memories.take_over(&name)?;
    Ok(Json(done).into_response())
}

/// Refuse an operator's route on a daemon whose only tokens are its
/// memories' own: any of them would open it (the token guard asks a
/// route outside `/v1/m/` for the daemon's token, and there is none).
fn operator(s: &State) -> Result<(), ApiError> {
    match s.token.is_none() && !s.tokens.is_empty() {
        true => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "moving a memory needs the daemon's token (MEMD_TOKEN); this daemon has only its memories' own",
        )),
        false => Ok(()),
    }
}

async fn openapi(axum::extract::State(s): axum::extract::State<Shared>) -> Reply {
    let root = s.memories.root_dir().is_some();
    let guarded = s.token.is_some() || !s.tokens.is_empty();
    Ok(Json(super::openapi::document(root, guarded)).into_response())
}
