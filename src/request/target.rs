//! What a request is ([`Request`], the trait every operation implements)
//! and where it goes: a [`Target`] is a memory and who owns its index. The
//! one rule of where a request runs is [`Target::run`].

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::client::Client;
use super::route::Route;
use crate::error::{Result, err};
use crate::index::Index;
use crate::{Error, Memory};

/// One operation: its parameters (this type) and its reply.
pub trait Request:
    Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static
{
    type Reply: Serialize + DeserializeOwned + schemars::JsonSchema + Send + 'static;

    const ROUTE: Route;

    /// Its name where its type is named otherwise (a type of the library
    /// used as a request under another name).
    const NAME: Option<&'static str> = None;

    /// The media type of a reply the HTTP API sends as it is, when it is
    /// not JSON (MEMORY.md, byte for byte); [`Request::raw`] gives the
    /// bytes.
    const MEDIA: Option<&'static str> = None;

    /// Fields of which at least one must be given, each group on its own
    /// (its type makes them optional: a CLI flag, a default, or one of two
    /// shapes). The OpenAPI description says so ([`crate::server`]).
    const NEEDS: &'static [&'static [&'static str]] = &[];

    /// Whether it needs the index (a search, a sync, a run's embeddings);
    /// otherwise it reads and writes files only, which any process may.
    fn needs_index(&self) -> bool;

    /// Whether it makes the memory it names, under `serve --root`, when
    /// that does not exist yet (only a first write does).
    fn creates(&self) -> bool {
        false
    }

    /// Apply it in this process, at `target`.
    fn apply(self, target: &Target) -> impl Future<Output = Result<Self::Reply>> + Send;

    /// The bytes of a reply sent as [`Request::MEDIA`].
    fn raw(_reply: &Self::Reply) -> Vec<u8> {
        Vec::new()
    }
}

/// Who owns a memory's index, seen from the process a request is in.
pub enum Owner {
    /// The daemon serving the directory: requests that need the index go
    /// there.
    Daemon(Client),
    /// This process, through a holder of the index (opened on first need).
    Here(Arc<dyn Holder>),
}

/// This process's hold on a memory's index.
#[async_trait::async_trait]
pub trait Holder: Send + Sync {
    /// The index, opened on first need.
    async fn index(&self) -> Result<Arc<Index>>;

    /// The index, if it is open.
    fn index_if_open(&self) -> Option<Arc<Index>>;

    /// Whether this holder is the only handle this process could have on
    /// the index, so that deleting `.memd/index` when it is not open
    /// leaves no handle on a deleted table (a command, `memd mcp`); a
    /// daemon's memory may be open through another request.
    fn alone(&self) -> bool {
        false
    }

    /// The index a write brings in step after it, if any: by default the
    /// index, opened if need be (a command owns it, and searches next).
    async fn to_settle(&self) -> Option<Result<Arc<Index>>> {
        Some(self.index().await)
    }

    /// Before this process exits (or lets the memory go): the sync running
    /// on the index, if it is open, ends, and the rows it holds back from
    /// the table are committed ([`crate::index::Writer::idle`]).
    async fn idle(&self) {
        if let Some(index) = self.index_if_open() {
            index.writer.idle().await;
        }
    }
}

/// A memory in a process that opens its index on first need, beside
/// other writers (a command for its one request, `memd mcp` for its life).
pub struct Lazy {
    memory: Memory,
    index: tokio::sync::OnceCell<Arc<Index>>,
}

impl Lazy {
    pub fn new(memory: Memory) -> Lazy {
        Lazy::with(memory, None)
    }

    /// `memory`, with its index already open when `index` is given.
    pub fn with(memory: Memory, index: Option<Index>) -> Lazy {
        Lazy {
            memory,
            index: tokio::sync::OnceCell::new_with(index.map(Arc::new)),
        }
    }

    pub fn memory(&self) -> &Memory {
        &self.memory
    }
}

#[async_trait::async_trait]
impl Holder for Lazy {
    async fn index(&self) -> Result<Arc<Index>> {
        let open = || async { Ok::<_, Error>(Arc::new(Index::open(&self.memory).await?)) };
        Ok(self.index.get_or_try_init(open).await?.clone())
    }

    fn index_if_open(&self) -> Option<Arc<Index>> {
        self.index.get().cloned()
    }

    fn alone(&self) -> bool {
        true
    }
}

/// A memory, and who owns its index: what every request is applied at.
pub struct Target {
    pub memory: Memory,
    pub owner: Owner,
}

impl Target {
    /// The memory directory at `dir`, as a command sees it: through the
    /// daemon when one serves it, else in this process.
    pub fn open(dir: &std::path::Path) -> Result<Target> {
        let memory = Memory::open(dir)?;
        let held = Arc::new(Lazy::new(memory.clone()));
        Ok(Target::routed(memory, held))
    }

    /// `memory` through the daemon serving it when there is one, else
    /// through `held`, this process's hold on its index.
    pub fn routed(memory: Memory, held: Arc<dyn Holder>) -> Target {
        let owner = match Client::for_memory(&memory.layout) {
            Some(client) => Owner::Daemon(client),
            None => Owner::Here(held),
        };
        Target { memory, owner }
    }

    /// `memory`, its index opened by this process on first need, whether
    /// or not a daemon serves it (evaluations and benchmarks, on
    /// directories of their own).
    pub fn local(memory: Memory) -> Target {
        let held = Arc::new(Lazy::new(memory.clone()));
        Target::here(memory, held)
    }

    /// `memory`, its index held by this process (the daemon's requests).
    pub fn here(memory: Memory, held: Arc<dyn Holder>) -> Target {
        Target {
            memory,
            owner: Owner::Here(held),
        }
    }

    /// The one rule: a request that needs the index goes to the daemon
    /// when one owns it; everything else runs here.
    pub async fn run<R: Request>(&self, req: R) -> Result<R::Reply> {
        match &self.owner {
            Owner::Daemon(client) if req.needs_index() => {
                let reply = client.send(R::ROUTE, serde_json::to_value(&req)?).await?;
                let path = R::ROUTE.path;
                serde_json::from_value(reply)
                    .map_err(|e| err!("unexpected reply to {path} from the daemon: {e}"))
            }
            _ => req.apply(self).await,
        }
    }

    /// One line for stderr saying where requests that need the index go.
    pub fn describe(&self) -> Option<String> {
        match &self.owner {
            Owner::Daemon(c) => Some(c.describe()),
            Owner::Here(_) => None,
        }
    }

    /// The index, for a request applied here that needs it (opened on
    /// first need).
    pub(crate) async fn index(&self) -> Result<Arc<Index>> {
        match &self.owner {
            Owner::Here(held) => held.index().await,
            Owner::Daemon(_) => Err(err!(
                "the daemon owns the index of {}; this request is for it",
                self.memory.layout.root.display()
            )),
        }
    }

    /// The index, if this process holds it open.
    pub(crate) fn index_if_open(&self) -> Option<Arc<Index>> {
        match &self.owner {
            Owner::Here(held) => held.index_if_open(),
            Owner::Daemon(_) => None,
        }
    }

    /// Whether this process may delete `.memd/index` instead of emptying
    /// the table through a handle: it owns the index, holds no handle on
    /// it, and no other request of this process can (see
    /// [`Holder::alone`]).
    pub(crate) fn may_delete_index(&self) -> bool {
        match &self.owner {
            Owner::Here(held) => held.alone() && held.index_if_open().is_none(),
            Owner::Daemon(_) => false,
        }
    }

    /// After an append: where this process holds the index open (a daemon,
    /// `memd mcp`), it starts catching up now, in the background, instead
    /// of at the next search or when the watcher's debounce ends, so a
    /// search a moment later finds the fact indexed or being indexed. A
    /// one-shot command does not open the index for it.
    pub(crate) fn index_soon(&self) {
        let Some(index) = self.index_if_open() else {
            return;
        };
        tokio::spawn(async move {
            if let Err(e) = index.writer.sync().await {
                tracing::warn!("index not updated yet: {e:#}");
            }
        });
    }

    /// Before this process exits: the sync running in it now, if any, ends
    /// ([`Holder::idle`]).
    pub async fn idle(&self) {
        if let Owner::Here(held) = &self.owner {
            held.idle().await;
        }
    }

    /// After a request wrote files: the index catches up where this process
    /// owns it (a daemon's watcher or next search catches up otherwise). The
    /// files are what counts, so a failure is a warning.
    pub(crate) async fn settle(&self) {
        let Owner::Here(held) = &self.owner else {
            return;
        };
        let Some(index) = held.to_settle().await else {
            return;
        };
        if let Err(e) = async { index?.writer.sync().await }.await {
            tracing::warn!("index not updated yet: {e:#}");
        }
    }
}

/// Run file I/O that locks and fsyncs off the async workers (which a
/// daemon's other requests share).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| err!("background task failed: {e}"))?
}

/// The JSON Schema of `T`, inline (no references), as MCP and the OpenAPI
/// description both use it.
pub fn schema_of<T: schemars::JsonSchema>() -> serde_json::Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.inline_subschemas = true)
        .into_generator();
    let mut v = generator.into_root_schema_for::<T>().to_value();
    if let Some(o) = v.as_object_mut() {
        o.remove("$schema");
    }
    v
}

/// A request's name, for descriptions and OpenAPI's `operationId`
/// (`Search`): [`Request::NAME`], else its type's own name.
pub fn name_of<R: Request>() -> &'static str {
    R::NAME.unwrap_or_else(|| std::any::type_name::<R>().rsplit("::").next().unwrap_or(""))
}
