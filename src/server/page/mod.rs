//! The memory's web page: `memd serve` at `/`, `serve --root` at
//! `/m/NAME/`. A view over the same files, through the same requests as
//! the CLI and the API ([`crate::request`]): what a person does here is
//! what `memd forget`, `memd undo` or `memd review` do, with their checks.
//!
//! Rendered on the server ([`views`], maud), with its one stylesheet in
//! the binary: no script, no build step, nothing fetched, so it works
//! offline and from the keyboard (every control is a labelled form
//! control). Each change is a POST form answered by a redirect to a page
//! that reads the files again, so a hand edit made meanwhile is what the
//! next page shows, and nothing the page holds is ever written back.
//!
//! The guard ([`super::guard`]) screens it as it screens the API: the
//! page's own origin is allowed (a POST from any other page is refused),
//! and with a token a login form sets an HttpOnly, SameSite=Strict cookie
//! ([`login`]).

mod views;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::extract::{Form, FromRequestParts, Query, RawPathParams, State};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;

use super::state::{ApiError, MemoryName, State as Daemon};
use crate::archive::{Fact, read_all};
use crate::core_md::CoreMd;
use crate::entries::Document;
use crate::ids::{ItemId, ProposalId};
use crate::pending::{Journal, Pending};
use crate::request::{self, Request, Target};
use crate::state::State as RunState;
use crate::tombstones::Tombstones;
use crate::{Error, Layout, journal, runs};

type Shared = Arc<Daemon>;

/// The page's routes, under the memory's base (`` or `/m/{name}`).
pub(crate) fn routes() -> Router<Shared> {
    Router::new()
        .route("/", get(index))
        .route("/search", get(search))
        .route("/as-of", get(as_of))
        .route("/entries/{id}", get(entry))
        .route("/entries/{id}/forget", post(forget))
        .route("/entries/{id}/unforget", post(unforget))
        .route("/review", get(review).post(decide))
        .route("/runs", get(runs))
        .route("/runs/{run}", get(run))
        .route("/runs/{run}/undo", post(undo))
        .route("/archive", get(archive))
        .route("/style.css", get(style))
}

/// The stylesheet, from the binary.
async fn style() -> Response {
    let css = include_str!("style.css");
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], css).into_response()
}

/// A page, or an error page with its status.
type Page = Result<Response, PageError>;

pub(crate) struct PageError(StatusCode, String);

impl From<Error> for PageError {
    fn from(e: Error) -> PageError {
        PageError::from(ApiError::from(e))
    }
}

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> PageError {
        let said = match e.3 {
            Some((remedy, base)) => format!("{}; {}", e.1, remedy.said_over_http(&base)),
            None => e.1,
        };
        PageError(e.0, said)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let body = views::error(self.0, &self.1);
        (self.0, Html(body.into_string())).into_response()
    }
}

/// Where a page is: the memory's target and the base of its links.
pub(crate) struct At {
    pub base: String,
    pub name: Option<String>,
}

impl At {
    fn of(MemoryName(name): MemoryName) -> At {
        let base = name.as_ref().map_or(String::new(), |n| format!("/m/{n}"));
        At { base, name }
    }

    fn param(params: &RawPathParams, key: &str) -> String {
        params
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    }

    /// Apply `req` at this memory, as the API does.
    async fn run<R: Request>(&self, s: &Shared, req: R) -> Result<R::Reply, PageError> {
        let target: Target = super::state::target(s, self.name.as_deref(), &req).await?;
        Ok(req.apply(&target).await?)
    }

    fn layout(&self, s: &Shared) -> Result<Layout, PageError> {
        let memory = match &self.name {
            None => s
                .memories
                .the_one()
                .map(|o| o.memory().clone())
                .ok_or_else(|| PageError(StatusCode::NOT_FOUND, "no memory".into()))?,
            Some(n) => {
                super::memories::check_name(n)?;
                s.memories.memory(n, false)?
            }
        };
        Ok(memory.layout)
    }

    fn back(&self, path: &str, said: &str) -> Response {
        let said = percent_encoding::utf8_percent_encode(said, percent_encoding::NON_ALPHANUMERIC);
        Redirect::to(&format!("{}{path}?said={said}", self.base)).into_response()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for At {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let name = MemoryName::from_request_parts(parts, state).await?;
        Ok(At::of(name))
    }
}

/// A message the page before left (`?said=`).
#[derive(Deserialize, Default)]
pub(crate) struct Said {
    #[serde(default)]
    said: Option<String>,
}

fn html(m: maud::Markup) -> Response {
    Html(m.into_string()).into_response()
}

pub(crate) async fn index(State(s): State<Shared>, at: At, Query(q): Query<Said>) -> Page {
    let layout = at.layout(&s)?;
    let core = CoreMd::read(&layout.memory_md())?.lines();
    let status = at.run(&s, request::Status {}).await?;
    let pending = pending(&layout)?;
    let forgotten = forgotten(&layout)?;
    Ok(html(views::index(
        &at,
        q.said.as_deref(),
        (core.as_slice(), &status),
        &pending,
        &forgotten,
    )))
}

/// The facts waiting for a run, oldest first.
fn pending(layout: &Layout) -> Result<Vec<Fact>, PageError> {
    let (facts, _) = read_all(layout)?;
    let doc = Document::read(&layout.entries_file())?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let state = RunState::load(&layout.state_file())?;
    let rule = Pending::new(&state, &stones, &doc, Journal::of(layout));
    Ok(facts.into_iter().filter(|f| rule.is_pending(f)).collect())
}

/// The entries forgotten now (a forget not taken back), newest first, with
/// their text.
fn forgotten(layout: &Layout) -> Result<Vec<(String, String)>, PageError> {
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let mut out: Vec<(String, String)> = Vec::new();
    for t in stones.all.iter().rev() {
        let Some(e) = &t.entry else { continue };
        if stones.names_entry(e) && !out.iter().any(|(id, _)| id == e.as_str()) {
            out.push((e.to_string(), t.text.clone()));
        }
    }
    Ok(out)
}

#[derive(Deserialize, Default)]
struct Asked {
    #[serde(default)]
    q: String,
    /// Search the memory as it was then (`memd search --as-of`).
    #[serde(default)]
    as_of: String,
}

fn given(s: &str) -> Option<String> {
    Some(s.trim().to_string()).filter(|s| !s.is_empty())
}

async fn search(State(s): State<Shared>, at: At, Query(q): Query<Asked>) -> Page {
    let hits = match q.q.trim().is_empty() {
        true => Vec::new(),
        false => {
            let req = request::Search {
                query: Some(q.q.clone()),
                k: Some(20),
                as_of: given(&q.as_of),
                ..Default::default()
            };
            at.run(&s, req).await?.hits
        }
    };
    Ok(html(views::search(&at, (&q.q, &q.as_of), &hits)))
}

#[derive(Deserialize, Default)]
struct When {
    #[serde(default)]
    as_of: String,
}

/// The entries file and MEMORY.md's lines as they were at a time (`memd
/// show --as-of`), or "unknowable" and why.
async fn as_of(State(s): State<Shared>, at: At, Query(w): Query<When>) -> Page {
    let shown = match given(&w.as_of) {
        None => None,
        Some(t) => Some(at.run(&s, request::Show { as_of: Some(t) }).await?),
    };
    Ok(html(views::as_of(&at, &w.as_of, shown.as_ref())))
}

async fn entry(
    State(s): State<Shared>,
    at: At,
    params: RawPathParams,
    Query(q): Query<Said>,
) -> Page {
    let id = At::param(&params, "id");
    let layout = at.layout(&s)?;
    let history = at
        .run(
            &s,
            request::History {
                id: ItemId::given(&id),
            },
        )
        .await?;
    let view = match at
        .run(
            &s,
            request::GetEntry {
                id: ItemId::given(&id),
            },
        )
        .await
    {
        Ok(v) => Some(v),
        Err(e) if e.0 == StatusCode::NOT_FOUND && !history.is_empty() => None,
        Err(e) => return Err(e),
    };
    let (facts, _) = read_all(&layout)?;
    let sources: Vec<&Fact> = match &view {
        Some(v) => facts.iter().filter(|f| v.sources.contains(&f.id)).collect(),
        None => Vec::new(),
    };
    let forgotten = forgotten(&layout)?.iter().any(|(e, _)| *e == id);
    let shown = views::Entry {
        id: &id,
        view: view.as_ref(),
        sources: &sources,
        history: &history,
        forgotten,
    };
    Ok(html(views::entry(&at, q.said.as_deref(), &shown)))
}

async fn forget(State(s): State<Shared>, at: At, params: RawPathParams) -> Page {
    let id = At::param(&params, "id");
    at.run(
        &s,
        request::Forget {
            id: ItemId::given(&id),
        },
    )
    .await?;
    Ok(at.back(&format!("/entries/{id}"), &format!("forgot {id}")))
}

async fn unforget(State(s): State<Shared>, at: At, params: RawPathParams) -> Page {
    let id = At::param(&params, "id");
    at.run(
        &s,
        request::Unforget {
            id: ItemId::given(&id),
        },
    )
    .await?;
    Ok(at.back(&format!("/entries/{id}"), &format!("{id} is back")))
}

async fn review(State(s): State<Shared>, at: At, Query(q): Query<Said>) -> Page {
    let items = at.run(&s, request::ReviewItems {}).await?;
    Ok(html(views::review(&at, q.said.as_deref(), &items)))
}

/// A decision from the review page: `action` accept, reject or apply, and
/// the proposal (`item`) it is about.
#[derive(Deserialize)]
struct Decision {
    action: request::ReviewAction,
    #[serde(default)]
    item: Option<ProposalId>,
}

async fn decide(State(s): State<Shared>, at: At, Form(d): Form<Decision>) -> Page {
    let req = request::Review {
        action: d.action,
        ids: d.item.into_iter().collect(),
        all: false,
        apply: false,
    };
    let done = at.run(&s, req).await?;
    let said = match &done.carried {
        Some(c) => c.summary("; "),
        None => format!("REVIEW.md changed for {}", ids(&done.changed)),
    };
    Ok(at.back("/review", &said))
}

fn ids(ids: &[ProposalId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

async fn runs(State(s): State<Shared>, at: At, Query(q): Query<Said>) -> Page {
    let runs = at.run(&s, request::Runs { last: Some(50) }).await?;
    Ok(html(views::runs(&at, q.said.as_deref(), &runs)))
}

/// One run as a diff: each record of the journal it wrote, the entry's
/// text before and after.
async fn run(State(s): State<Shared>, at: At, params: RawPathParams) -> Page {
    let run = At::param(&params, "run");
    let layout = at.layout(&s)?;
    let all = journal::read(&layout.journal_file())?;
    let records = runs::records(&all, &run)?;
    Ok(html(views::run(&at, &run, &records)))
}

async fn undo(State(s): State<Shared>, at: At, params: RawPathParams) -> Page {
    let run = At::param(&params, "run");
    // A run id of no run's shape names no run.
    let Ok(run) = run.parse() else {
        let what = format!("run {run:?} in the journal");
        return Err(Error::NoSuch { what }.into());
    };
    let req = request::Undo {
        run,
        options: Default::default(),
    };
    let done = at.run(&s, req).await?;
    let said = match &done.run {
        Some(r) => format!(
            "undid {} as run {r} ({} entries changed)",
            done.undoes,
            done.changes.len()
        ),
        None => format!("nothing to undo in {}: it is undone already", done.undoes),
    };
    Ok(at.back("/runs", &said))
}

async fn archive(State(s): State<Shared>, at: At) -> Page {
    let layout = at.layout(&s)?;
    let (facts, _) = read_all(&layout)?;
    let mut days: BTreeMap<&str, Vec<&Fact>> = BTreeMap::new();
    for f in &facts {
        days.entry(f.day.as_str()).or_default().push(f);
    }
    Ok(html(views::archive(&at, &days)))
}

async fn login_form(at: At) -> Response {
    html(views::login(&at, None))
}

#[derive(Deserialize)]
struct Login {
    token: String,
}

/// The login form's POST: the token the daemon (or, under a root, the
/// memory) takes, checked as a bearer token is, becomes an HttpOnly,
/// SameSite=Strict cookie for the page's paths.
async fn login(State(s): State<Shared>, at: At, Form(l): Form<Login>) -> Response {
    let own = at.name.as_ref().and_then(|n| s.tokens.get(n));
    let token = s
        .token
        .iter()
        .chain(own)
        .find(|t| super::guard::same(t.as_bytes(), l.token.as_bytes()));
    let Some(token) = token else {
        let page = views::login(&at, Some("that is not this daemon's token"));
        return (StatusCode::UNAUTHORIZED, Html(page.into_string())).into_response();
    };
    let path = if at.base.is_empty() {
        "/"
    } else {
        at.base.as_str()
    };
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path={path}",
        super::guard::SESSION_COOKIE,
        super::guard::session_of(token)
    );
    let mut reply = Redirect::to(&format!("{}/", at.base)).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        reply.headers_mut().insert(header::SET_COOKIE, v);
    }
    reply
}

/// Whether a path is the page's (not the API's, not a health check): a
/// refused one is answered with the login form, not JSON.
pub(crate) fn is_page(path: &str) -> bool {
    !(path.starts_with("/v1/") || path == "/v1" || path.starts_with("/healthz"))
}

/// The login form's route: the one route the router serves without a
/// token (the API's router mounts it at `/login` or
/// `/m/{name}/login`).
pub(crate) fn login_route() -> axum::routing::MethodRouter<Shared> {
    get(login_form).post(login)
}

/// Headers on every reply: no other site may frame the page or guess a
/// reply's type, and nothing memd sends is kept in a shared cache (a
/// page and an API reply carry a user's facts). The stylesheet alone may
/// be cached. The referrer goes to the page's own origin alone: with none
/// at all a browser sends a form's POST as `Origin: null`, which the guard
/// refuses.
pub(crate) async fn headers(req: axum::extract::Request, next: axum::middleware::Next) -> Response {
    let style = req.uri().path().ends_with("/style.css");
    let mut reply = next.run(req).await;
    let h = reply.headers_mut();
    let set = |h: &mut axum::http::HeaderMap, name, value: &'static str| {
        h.entry(name).or_insert(HeaderValue::from_static(value));
    };
    set(h, header::X_CONTENT_TYPE_OPTIONS, "nosniff");
    set(h, header::X_FRAME_OPTIONS, "DENY");
    set(h, header::REFERRER_POLICY, "same-origin");
    set(
        h,
        header::CONTENT_SECURITY_POLICY,
        "default-src 'none'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    if !style {
        set(h, header::CACHE_CONTROL, "no-store");
    }
    reply
}

/// The login form, for a page request the token check refused.
pub(crate) fn refused(name: Option<&str>) -> Response {
    let base = name.map(|n| format!("/m/{n}")).unwrap_or_default();
    let at = At { base, name: None };
    let page = views::login(&at, Some("this daemon needs its token"));
    (StatusCode::UNAUTHORIZED, Html(page.into_string())).into_response()
}

/// `serve --root`'s `/`: every memory under the root, each a link to its
/// page.
pub(crate) async fn memories(State(s): State<Shared>) -> Page {
    let names = s.memories.names()?;
    Ok(html(views::memories(&names)))
}
