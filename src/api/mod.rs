//! The daemon's HTTP API (axum, JSON). Every route is a thin call into the
//! library; every write is a file write.
//!
//! | route                              | does                                |
//! |------------------------------------|-------------------------------------|
//! | `POST /v1/facts`                   | append facts (`text` or `texts`)    |
//! | `GET /v1/search?q=&k=`             | hybrid search (logged as recall)    |
//! | `POST /v1/similar`                 | `{texts}` → similar entries of each |
//! | `POST /v1/consolidate`             | `{force?, dry_run?}` → run report   |
//! | `POST /v1/reindex`                 | `{clear?}` → sync report            |
//! | `DELETE /v1/entries/{id}`          | forget                              |
//! | `GET /v1/entries/{id}/history`     | journal lineage                     |
//! | `GET /v1/runs`                     | runs from the journal, oldest first |
//! | `POST /v1/runs/{id}/undo`          | `{dry_run?, keep_out?}` → undo      |
//! | `GET /v1/memory`                   | `MEMORY.md`, as the agent's prompt  |
//! | `GET /v1/status`, `GET /healthz`   | status report, liveness             |
//!
//! With a token set, every route needs `Authorization: Bearer <token>`.
//! Errors are `{"error": "..."}` with a 4xx or 5xx status. Bodies are capped
//! at [`MAX_BODY`]. No request names a path: ids are looked up among
//! entries and facts, never joined onto the file system.

pub(crate) mod many;

use std::sync::Arc;

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::json;

use crate::archive;
use crate::config::Config;
use crate::error::Kind;
use crate::index::Index;
use crate::shutdown::Shutdown;
use crate::{Layout, consolidate, forget};

/// Largest request body accepted (bytes).
pub(crate) const MAX_BODY: usize = 1 << 20;

pub struct State {
    pub layout: Layout,
    pub config: Config,
    pub index: Arc<Index>,
    pub token: Option<String>,
    /// The address the daemon is bound to (for the `Host` check).
    pub bound: std::net::SocketAddr,
    /// Long requests give up when it fires.
    pub shutdown: Shutdown,
}

type Shared = Arc<State>;

pub struct ApiError(StatusCode, String);

impl ApiError {
    fn bad(msg: impl Into<String>) -> ApiError {
        ApiError(StatusCode::BAD_REQUEST, msg.into())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<crate::Error> for ApiError {
    fn from(e: crate::Error) -> ApiError {
        let status = match e.kind() {
            Kind::Busy => StatusCode::CONFLICT,
            Kind::NotFound => StatusCode::NOT_FOUND,
            Kind::Invalid => StatusCode::BAD_REQUEST,
            Kind::Corrupt | Kind::Other => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(status, format!("{e:#}"))
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> ApiError {
        ApiError(r.status(), r.body_text())
    }
}

impl From<QueryRejection> for ApiError {
    fn from(r: QueryRejection) -> ApiError {
        ApiError::bad(r.body_text())
    }
}

type Reply = Result<Response, ApiError>;

/// Run file I/O that locks and fsyncs off the async workers.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> crate::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| crate::error::err!("background task failed: {e}"))?
}

fn ok(v: impl serde::Serialize) -> Reply {
    Ok(Json(v).into_response())
}

pub(crate) fn router(state: Shared) -> Router {
    Router::new()
        .route("/healthz", get(|| async { Json(json!({"ok": true})) }))
        .route("/v1/facts", post(add_facts))
        .route("/v1/search", get(search))
        .route("/v1/similar", post(similar))
        .route("/v1/consolidate", post(consolidate))
        .route("/v1/reindex", post(reindex))
        .route("/v1/entries/{id}", delete(forget_entry))
        .route("/v1/entries/{id}/history", get(history))
        .route("/v1/runs", get(runs))
        .route("/v1/runs/{id}/undo", post(undo_run))
        .route("/v1/memory", get(memory))
        .route("/v1/status", get(status))
        .fallback(|| async { ApiError(StatusCode::NOT_FOUND, "no such route".into()) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard))
        .with_state(state)
}

/// Refuse what [`crate::guard`] refuses, before any route runs.
async fn guard(
    axum::extract::State(state): axum::extract::State<Shared>,
    req: Request,
    next: Next,
) -> Response {
    let origins = &state.config.server.allowed_origins;
    let refused = crate::guard::refuse(req.headers(), state.bound, origins, state.token.as_deref());
    match refused {
        Some((code, msg)) => {
            let status = StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN);
            tracing::info!(status = code, "request refused: {msg}");
            ApiError(status, msg).into_response()
        }
        None => next.run(req).await,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FactsBody {
    text: Option<String>,
    texts: Option<Vec<String>>,
    category: Option<String>,
    session: Option<String>,
    key: Option<String>,
}

async fn add_facts(
    axum::extract::State(s): axum::extract::State<Shared>,
    body: Result<Json<FactsBody>, JsonRejection>,
) -> Reply {
    append_facts(s.layout.clone(), body).await
}

/// `POST /v1/facts` on `layout`: a file write that needs no index, so
/// `serve --root` answers it without opening the memory.
pub(crate) async fn append_facts(
    layout: Layout,
    body: Result<Json<FactsBody>, JsonRejection>,
) -> Reply {
    let Json(b) = body?;
    let (texts, many) = match (b.text, b.texts) {
        (Some(t), None) => (vec![t], false),
        (None, Some(ts)) if !ts.is_empty() => (ts, true),
        _ => {
            return Err(ApiError::bad(
                "give either \"text\" or a non-empty \"texts\"",
            ));
        }
    };
    let facts = archive::new_facts(texts, b.category, b.session, b.key, many);
    let appended = blocking(move || archive::append_now(&layout, &facts)).await?;
    let ids: Vec<&str> = appended.iter().map(|a| a.id.as_str()).collect();
    ok(json!({ "ids": ids, "facts": appended }))
}

#[derive(Deserialize)]
struct SearchQuery {
    q: Option<String>,
    k: Option<usize>,
    /// `false`: answer at once from the index as it is, with what it does
    /// not cover yet; default `true`: bring it in step first (every fact
    /// acknowledged before the search is searched).
    wait: Option<bool>,
}

async fn search(
    axum::extract::State(s): axum::extract::State<Shared>,
    query: Result<Query<SearchQuery>, QueryRejection>,
) -> Reply {
    let Query(q) = query?;
    let text =
        q.q.filter(|t| !t.trim().is_empty())
            .ok_or_else(|| ApiError::bad("q is required"))?;
    let k =
        q.k.unwrap_or(s.config.search.default_k as usize)
            .clamp(1, 100);
    if !q.wait.unwrap_or(true) {
        let behind = s.index.files_behind()?;
        let hits = s.index.search_as_is(&text, k).await?;
        let indexing = (!behind.is_empty()).then(|| json!({ "files_behind": behind }));
        return ok(json!({ "hits": hits, "indexing": indexing }));
    }
    s.index.sync().await?;
    ok(s.index.search(&text, k).await?)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SimilarBody {
    texts: Vec<String>,
}

async fn similar(
    axum::extract::State(s): axum::extract::State<Shared>,
    body: Result<Json<SimilarBody>, JsonRejection>,
) -> Reply {
    let Json(b) = body?;
    if b.texts.len() > crate::service::SIMILAR_MAX_FACTS {
        return Err(ApiError::bad(format!(
            "at most {} texts per request",
            crate::service::SIMILAR_MAX_FACTS
        )));
    }
    s.index.sync().await?;
    ok(crate::service::similar_in(&s.index, &b.texts).await?)
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct ConsolidateBody {
    force: bool,
    dry_run: bool,
}

async fn consolidate(
    axum::extract::State(s): axum::extract::State<Shared>,
    body: Option<Json<ConsolidateBody>>,
) -> Reply {
    let b = body.map(|Json(b)| b).unwrap_or_default();
    let opts = consolidate::Options {
        force: b.force,
        dry_run: b.dry_run,
    };
    let run = crate::service::consolidate_then_sync(&s.layout, &s.config, opts, Some(&s.index));
    tokio::select! {
        r = run => ok(r?),
        _ = s.shutdown.recv() => Err(ApiError(
            StatusCode::SERVICE_UNAVAILABLE,
            "the daemon is shutting down; the run was stopped before writing and its facts stay pending".into(),
        )),
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
struct ReindexBody {
    clear: bool,
}

async fn reindex(
    axum::extract::State(s): axum::extract::State<Shared>,
    body: Option<Json<ReindexBody>>,
) -> Reply {
    let b = body.map(|Json(b)| b).unwrap_or_default();
    if b.clear {
        s.index.reset().await?;
    }
    let (report, rows) = crate::service::sync_repairing(&s.index, &s.layout).await?;
    ok(json!({ "report": report, "rows": rows }))
}

async fn forget_entry(
    axum::extract::State(s): axum::extract::State<Shared>,
    Path(id): Path<String>,
) -> Reply {
    let layout = s.layout.clone();
    let gone = blocking(move || forget::forget(&layout, &id)).await?;
    if let Err(e) = s.index.sync().await {
        tracing::warn!("index not updated after forget: {e:#}");
    }
    ok(gone)
}

async fn runs(axum::extract::State(s): axum::extract::State<Shared>) -> Reply {
    ok(crate::runs::list(&s.layout)?)
}

async fn undo_run(
    axum::extract::State(s): axum::extract::State<Shared>,
    Path(id): Path<String>,
    body: Option<Json<crate::runs::Options>>,
) -> Reply {
    let opts = body.map(|Json(b)| b).unwrap_or_default();
    let layout = s.layout.clone();
    let outcome = blocking(move || crate::runs::undo(&layout, &id, opts)).await?;
    if outcome.run.is_some()
        && let Err(e) = s.index.sync().await
    {
        tracing::warn!("index not updated after undo: {e:#}");
    }
    ok(outcome)
}

async fn history(
    axum::extract::State(s): axum::extract::State<Shared>,
    Path(id): Path<String>,
) -> Reply {
    ok(forget::history(&s.layout, &id)?)
}

/// `MEMORY.md` byte for byte (a missing file is empty). Only a file that
/// is UTF-8 is labelled so; a byte that is not is served as it is, never
/// dropped or replaced.
async fn memory(axum::extract::State(s): axum::extract::State<Shared>) -> Reply {
    let path = s.layout.memory_md();
    let bytes = crate::atomic::read_if_exists(&path)
        .map_err(|e| crate::Error::from(e).context(format!("reading {}", path.display())))?
        .unwrap_or_default();
    let kind = match std::str::from_utf8(&bytes) {
        Ok(_) => "text/markdown; charset=utf-8",
        Err(_) => "text/markdown",
    };
    Ok(([(axum::http::header::CONTENT_TYPE, kind)], bytes).into_response())
}

async fn status(axum::extract::State(s): axum::extract::State<Shared>) -> Reply {
    ok(crate::status::gather(&s.layout, &s.config)?)
}
