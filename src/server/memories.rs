//! The memories a process serves: one directory (`memd serve`, `memd
//! mcp`), or every memory under a root (`memd serve --root DIR`, `memd mcp
//! --memory NAME`), one directory per user or agent, `DIR/NAME`, opened on
//! demand. A daemon serving one directory is a `Memories` of one.
//!
//! - **Names** are checked before anything touches the file system
//!   ([`check_name`]): ASCII letters, digits, `-`, `_` and `.`, not
//!   starting with a dot, at most [`MAX_NAME`] bytes. So no name holds a
//!   separator or `..`, and none is hidden or too long for a file name.
//! - **Created on the first write**: a write to a memory that does not
//!   exist makes it as `memd init` does, with `DIR/memd.toml` (when there
//!   is one) as its configuration; a read of one that does not exist is
//!   `NotFound`. Each memory then follows its own `memd.toml`, which is
//!   what the CLI reads too, so the two never build its index with two
//!   different embedders.
//! - **Open memories are capped** ([`Memories::root`]'s `max_open`): the
//!   least recently used is closed when another opens. Closing drops the
//!   handle on the table, the daemon's lock on the directory and its
//!   `daemon.json`; the files are the truth, so nothing is lost, and the
//!   next request opens it again and syncs what changed meanwhile. A
//!   memory still in use by a request when it is closed stays alive until
//!   that request ends, and a request for it meanwhile gets that same one
//!   (never a second handle on the table).
//! - **One embedder per embedder configuration**, shared by every open
//!   memory: the model is loaded once, not once per memory.
//! - A daemon **serves** what it opens ([`Opened::serve`]): it holds the
//!   directory's `.memd/daemon.lock` and writes `.memd/daemon.json` (naming
//!   the memory among many), so CLI commands on it go through the daemon.
//!   `memd mcp` opens without serving: a daemon that serves the directory
//!   gets its requests instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use super::info::{self, Info};
use super::moves::{self, HandedOver, Lease, Leases, TakenOver};
use crate::config::Config;
use crate::embed::{self, Embedder};
use crate::error::{Context, Result};
use crate::index::Index;
use crate::request::{Holder, Lazy, Target};
use crate::{Error, Layout, Memory};

use super::tenant;
pub use super::tenant::{MAX_NAME, check_name, layout_of};

/// One memory a process has open.
pub struct Opened {
    /// Its name among many (`None`: the process serves one directory).
    pub name: Option<String>,
    held: Lazy,
    /// Set by every request and run since the upkeep loop last looked: an
    /// open memory nobody touched needs no upkeep.
    pub touched: AtomicBool,
    /// Whether this process serves it (and writes its `daemon.json`).
    served: bool,
    /// Its directory's identity when opened ([`tenant::identity`]).
    identity: Option<(u64, u64)>,
}

impl Drop for Opened {
    fn drop(&mut self) {
        if self.served {
            info::remove(&self.memory().layout);
            tracing::debug!(memory = ?self.name, "memory closed");
        }
    }
}

impl Opened {
    fn with(name: Option<&str>, held: Lazy, served: bool) -> Opened {
        let identity = tenant::identity(&held.memory().layout.root);
        Opened {
            name: name.map(String::from),
            held,
            touched: AtomicBool::new(true),
            served,
            identity,
        }
    }

    /// Whether its directory is still the one it opened.
    fn is_there(&self) -> bool {
        self.identity.is_some() && tenant::identity(&self.memory().layout.root) == self.identity
    }

    /// Serve `memory` from this process: the directory's daemon lock (an
    /// error naming the daemon that holds it), `daemon.json` saying where
    /// `listen`ing, and the index with the sole writer.
    pub(crate) async fn serve(name: Option<&str>, memory: Memory, listen: &Info) -> Result<Opened> {
        let served = info::claim(&memory.layout).await?;
        // Said before the index opens (which can take a while), so a
        // command meanwhile goes to this daemon rather than the table.
        let record = listen.for_memory(name);
        info::write(&memory.layout, &record).context("writing .memd/daemon.json")?;
        // The embedder's full session before the index's words and
        // vectors, as it was made before it was made lazily: made after
        // them, its freed scratch left the daemon's RSS at 100,000 facts
        // higher (measured in BENCHMARKS.md, "An append costs what it
        // adds; a one-shot search without ONNX Runtime's start").
        if let Ok(e) = memory.embedder() {
            e.warm();
        }
        let index = match Index::open_sole(&memory, served).await {
            Ok(index) => index,
            Err(e) => {
                info::remove(&memory.layout);
                return Err(e);
            }
        };
        tracing::debug!(memory = ?name, "memory opened");
        // Its words and LanceDB's vector index, in the background: a memory
        // opened by a write loads them too, which its first search would
        // have done (a tenant only written to holds them now as well).
        let reader = index.reader.clone();
        tokio::spawn(async move {
            if let Err(e) = reader.words_ready().await {
                tracing::debug!("words not loaded ahead: {e:#}");
            }
            reader.warm_vector_index().await;
        });
        Ok(Opened::with(name, Lazy::with(memory, Some(index)), true))
    }

    pub fn memory(&self) -> &Memory {
        self.held.memory()
    }

    /// A target for requests on this memory, applied in this process.
    pub fn target(self: &Arc<Self>) -> Target {
        Target::here(self.memory().clone(), self.clone())
    }

    fn touch(&self) {
        self.touched.store(true, Ordering::Relaxed);
    }
}

#[async_trait::async_trait]
impl Holder for Opened {
    async fn index(&self) -> Result<Arc<Index>> {
        self.held.index().await
    }

    fn index_if_open(&self) -> Option<Arc<Index>> {
        self.held.index_if_open()
    }
}

/// A memory among many that a request may not need opened: it is opened
/// only if the request needs its index, and a write brings the index in
/// step only if the memory is open anyway.
pub(crate) struct OnDemand {
    pub memories: Arc<Memories>,
    pub name: String,
    opened: tokio::sync::OnceCell<Arc<Opened>>,
}

impl OnDemand {
    pub(crate) fn new(memories: Arc<Memories>, name: &str) -> OnDemand {
        OnDemand {
            memories,
            name: name.to_string(),
            opened: tokio::sync::OnceCell::new(),
        }
    }
}

#[async_trait::async_trait]
impl Holder for OnDemand {
    async fn index(&self) -> Result<Arc<Index>> {
        let open = || self.memories.get(&self.name, false);
        self.opened.get_or_try_init(open).await?.index().await
    }

    fn index_if_open(&self) -> Option<Arc<Index>> {
        match self.opened.get() {
            Some(o) => o.index_if_open(),
            None => self.memories.open_now(&self.name)?.index_if_open(),
        }
    }

    async fn to_settle(&self) -> Option<Result<Arc<Index>>> {
        let open = self.memories.open_now(&self.name)?;
        Some(open.index().await)
    }
}

/// The memories a process serves or opens.
pub struct Memories {
    served: Served,
    /// Where the daemon listens, for each memory's `daemon.json` (`None`:
    /// opened without serving, by `memd mcp`).
    listen: Option<Info>,
}

enum Served {
    One(Arc<Opened>),
    Root(Box<Root>),
}

/// Every memory under a root, the open ones capped.
struct Root {
    dir: PathBuf,
    max_open: usize,
    open: Mutex<Open>,
    embedders: Mutex<HashMap<String, Arc<dyn Embedder>>>,
    /// Each memory's configuration as last read, with its file's stamp: a
    /// request on a memory that is not open (an append) reads it only when
    /// the file changed.
    configs: Mutex<HashMap<String, (Stamp, Config)>>,
    /// One open at a time, so two requests for a cold memory open it once.
    opening: tokio::sync::Mutex<()>,
    /// The requests in flight on each memory, for a handover's drain.
    leases: Arc<Leases>,
}

#[derive(Default)]
struct Open {
    /// Strong handles, with the tick of their last use.
    held: HashMap<String, (Arc<Opened>, u64)>,
    /// Every memory opened and maybe still in use after it was closed.
    alive: HashMap<String, Weak<Opened>>,
    tick: u64,
}

impl Open {
    fn touch(&mut self, name: &str) -> Option<Arc<Opened>> {
        self.tick += 1;
        let tick = self.tick;
        if let Some((m, t)) = self.held.get_mut(name) {
            *t = tick;
            return Some(m.clone());
        }
        let m = self.alive.get(name)?.upgrade()?;
        self.held.insert(name.to_string(), (m.clone(), tick));
        Some(m)
    }

    /// Close `name` (its directory is gone or was replaced): a request
    /// that still holds it finishes with it, and the next opens it anew.
    fn forget(&mut self, name: &str) {
        self.held.remove(name);
        self.alive.remove(name);
        tracing::warn!(memory = %name, "memory directory vanished or was replaced while open; closed");
    }

    /// Hold `m`, closing the least recently used past `max_open`.
    fn hold(&mut self, name: &str, m: Arc<Opened>, max_open: usize) {
        self.tick += 1;
        self.alive.insert(name.to_string(), Arc::downgrade(&m));
        self.held.insert(name.to_string(), (m, self.tick));
        while self.held.len() > max_open.max(1) {
            let oldest = self.held.iter().min_by_key(|(_, (_, t))| *t);
            let Some(name) = oldest.map(|(n, _)| n.clone()) else {
                break;
            };
            self.held.remove(&name);
        }
        self.alive.retain(|_, w| w.strong_count() > 0);
    }
}

impl Memories {
    /// A daemon serving one directory: `memory`, opened and served now.
    pub(crate) async fn one(memory: Memory, listen: Info) -> Result<Memories> {
        let opened = Opened::serve(None, memory, &listen).await?;
        Ok(Memories {
            served: Served::One(Arc::new(opened)),
            listen: Some(listen),
        })
    }

    /// Every memory under `dir`, at most `max_open` open at once; served
    /// (as by `memd serve --root`) when `listen` says where.
    pub fn root(dir: &Path, max_open: usize, listen: Option<Info>) -> Memories {
        Memories {
            served: Served::Root(Box::new(Root {
                dir: dir.to_path_buf(),
                max_open,
                open: Mutex::default(),
                embedders: Mutex::default(),
                configs: Mutex::default(),
                opening: tokio::sync::Mutex::new(()),
                leases: Arc::default(),
            })),
            listen,
        }
    }

    /// The root, when these are the memories under one.
    pub fn root_dir(&self) -> Option<&Path> {
        match &self.served {
            Served::Root(r) => Some(&r.dir),
            Served::One(_) => None,
        }
    }

    /// The one memory, when the process serves one directory.
    pub fn the_one(&self) -> Option<&Arc<Opened>> {
        match &self.served {
            Served::One(o) => Some(o),
            Served::Root(_) => None,
        }
    }

    /// Every memory, by name: those under the root (directories with a
    /// valid name and an `archive/`), or the one (named `""`).
    pub fn names(&self) -> Result<Vec<String>> {
        let Served::Root(root) = &self.served else {
            return Ok(vec![String::new()]);
        };
        let read = std::fs::read_dir(&root.dir);
        let mut out: Vec<String> = read
            .with_context(|| format!("reading {}", root.dir.display()))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| check_name(n).is_ok() && Layout::is_memory(&root.dir.join(n)))
            .collect();
        out.sort();
        Ok(out)
    }

    /// How many memories are open now.
    pub fn open_count(&self) -> usize {
        match &self.served {
            Served::One(_) => 1,
            Served::Root(r) => r.open.lock().expect("not poisoned").held.len(),
        }
    }

    /// Memory `name` if it is open now (marked used).
    pub fn open_now(&self, name: &str) -> Option<Arc<Opened>> {
        let o = match &self.served {
            Served::One(o) => o.clone(),
            Served::Root(r) => {
                let name = tenant::canonical(name).ok()?;
                let mut open = r.open.lock().expect("not poisoned");
                let o = open.held.get(&name)?.0.clone();
                if !o.is_there() {
                    open.forget(&name);
                    return None;
                }
                o
            }
        };
        o.touch();
        Some(o)
    }

    /// Whether `name` is open now.
    pub fn is_open(&self, name: &str) -> bool {
        match &self.served {
            Served::One(_) => true,
            Served::Root(r) => tenant::canonical(name)
                .is_ok_and(|n| r.open.lock().expect("not poisoned").held.contains_key(&n)),
        }
    }

    /// The open memories.
    pub fn held(&self) -> Vec<Arc<Opened>> {
        match &self.served {
            Served::One(o) => vec![o.clone()],
            Served::Root(r) => {
                let open = r.open.lock().expect("not poisoned");
                open.held.values().map(|(m, _)| m.clone()).collect()
            }
        }
    }

    /// Memory `name`, open or not, without opening it: what a request that
    /// reads and writes files only needs (its embedder is made only if it
    /// is asked for). Made when `create` (a write) and it does not exist;
    /// else `NotFound`.
    pub fn memory(&self, name: &str, create: bool) -> Result<Memory> {
        let root = match &self.served {
            Served::One(o) => return Ok(o.memory().clone()),
            Served::Root(r) => r,
        };
        let name = &tenant::canonical(name)?;
        moves::refuse_handed_over(&root.dir, name)?;
        if let Some(o) = self.open_now(name) {
            tenant::confined(&o.memory().layout.root)?;
            root.config(name, &o.memory().layout)?;
            return Ok(o.memory().clone());
        }
        let layout = layout_of(&root.dir, name, create)?;
        let config = root.config(name, &layout)?;
        Ok(Memory::new(layout, config))
    }

    /// Memory `name`, opened if it is not; created first when `create`
    /// (a write), else `NotFound` if it does not exist.
    pub async fn get(&self, name: &str, create: bool) -> Result<Arc<Opened>> {
        let root = match &self.served {
            Served::One(o) => return Ok(o.clone()),
            Served::Root(r) => r,
        };
        let name = &tenant::canonical(name)?;
        moves::refuse_handed_over(&root.dir, name)?;
        if let Some(m) = self.open_now(name) {
            tenant::confined(&m.memory().layout.root)?;
            root.config(name, &m.memory().layout)?;
            return Ok(m);
        }
        let _one = root.opening.lock().await;
        if let Some(m) = root.open.lock().expect("not poisoned").touch(name)
            && m.is_there()
        {
            m.touch();
            return Ok(m);
        }
        let memory = self.memory(name, create)?;
        let memory = memory.clone().with_embedder(root.embedder(&memory.config)?);
        let opened = match &self.listen {
            Some(listen) => Opened::serve(Some(name), memory, listen).await?,
            None => Opened::with(Some(name), Lazy::new(memory), false),
        };
        let m = Arc::new(opened);
        let mut open = root.open.lock().expect("not poisoned");
        open.hold(name, m.clone(), root.max_open);
        Ok(m)
    }
}

/// Moving a memory between nodes ([`moves`]).
impl Memories {
    fn under_root(&self) -> Result<&Root> {
        match &self.served {
            Served::Root(r) => Ok(r),
            Served::One(_) => Err(Error::Invalid(
                "only a daemon serving a root of memories hands one over".into(),
            )),
        }
    }

    /// A request's lease on memory `name`, held while it runs: `Moved`
    /// when it is being drained or was handed over. None for a daemon of
    /// one directory, or a name no memory may have (its route refuses it).
    pub fn enter(&self, name: &str) -> Result<Option<Lease>> {
        let Served::Root(root) = &self.served else {
            return Ok(None);
        };
        let Ok(name) = tenant::canonical(name) else {
            return Ok(None);
        };
        moves::refuse_handed_over(&root.dir, &name)?;
        root.leases.enter(&name).map(Some)
    }

    /// Memory `name` handed over: drained, closed, marked and moved out
    /// ([`moves`]); served again if the drain gives up.
    pub async fn hand_over(&self, name: &str) -> Result<HandedOver> {
        let root = self.under_root()?;
        let name = tenant::canonical(name)?;
        root.leases.drain(&name, moves::DRAIN_WAIT).await?;
        let done = async {
            self.close(root, &name).await?;
            moves::move_out(&root.dir, &name)
        };
        let done = done.await;
        root.leases.undrain(&name);
        if let Ok(h) = &done {
            tracing::info!(memory = %name, bytes = h.bytes, "memory handed over");
        }
        done
    }

    /// Memory `name` taken over from the copy in `.memd/incoming/`
    /// ([`moves::move_in`]).
    pub fn take_over(&self, name: &str) -> Result<TakenOver> {
        let root = self.under_root()?;
        let name = tenant::canonical(name)?;
        if root.leases.draining(&name) {
            return Err(Error::Busy {
                what: format!("a handover of memory {name:?}"),
                pid: None,
            });
        }
        let done = moves::move_in(&root.dir, &name)?;
        tracing::info!(memory = %name, "memory taken over");
        Ok(done)
    }

    /// The memories this root handed over.
    pub fn handed_over(&self) -> Vec<String> {
        self.root_dir().map(moves::handed_over).unwrap_or_default()
    }

    /// Close memory `name` and wait until nothing holds it (its rows held
    /// back committed, its lock given up); `Busy` past the drain's wait.
    async fn close(&self, root: &Root, name: &str) -> Result<()> {
        let opened = {
            let mut open = root.open.lock().expect("not poisoned");
            let held = open.held.remove(name).map(|(o, _)| o);
            let alive = open.alive.remove(name).and_then(|w| w.upgrade());
            held.or(alive)
        };
        let Some(o) = opened else {
            return Ok(());
        };
        o.idle().await;
        let opened = [Arc::downgrade(&o)];
        let indexes: Vec<_> = o.index_if_open().iter().map(Arc::downgrade).collect();
        drop(o);
        match super::released(&opened, &indexes, moves::DRAIN_WAIT).await {
            true => Ok(()),
            false => Err(Error::Busy {
                what: format!("a task still holding memory {name:?}"),
                pid: None,
            }),
        }
    }
}

/// What identifies a version of a configuration file without reading it:
/// its modification time and length (`None`: no file).
/// Both files a memory's configuration depends on: its own and the
/// root's.
type FileStamp = Option<(Option<std::time::SystemTime>, u64)>;
type Stamp = (FileStamp, FileStamp);

impl Root {
    /// Memory `name`'s configuration, read again only when its file changed.
    fn config(&self, name: &str, layout: &Layout) -> Result<Config> {
        let stamp_of = |p: &Path| {
            std::fs::metadata(p)
                .ok()
                .map(|m| (m.modified().ok(), m.len()))
        };
        let stamp: Stamp = (
            stamp_of(&layout.config_file()),
            stamp_of(&Layout::new(&self.dir).config_file()),
        );
        let mut all = self.configs.lock().expect("not poisoned");
        if let Some((seen, config)) = all.get(name)
            && *seen == stamp
        {
            return Ok(config.clone());
        }
        let mut config = Config::load(&layout.root)?;
        let root = self.root_config()?;
        tenant::allowed(&root, name, &config)?;
        tenant::bind_budget(&root, &mut config);
        tenant::bind_index(&root, &mut config);
        all.insert(name.to_string(), (stamp, config.clone()));
        Ok(config)
    }

    /// The root's own configuration (what a memory's may use).
    fn root_config(&self) -> Result<Config> {
        Config::load(&self.dir)
    }

    /// The shared embedder for `config`'s embedder settings.
    fn embedder(&self, config: &Config) -> Result<Arc<dyn Embedder>> {
        let key = serde_json::to_string(&config.embedder)?;
        let mut all = self.embedders.lock().expect("not poisoned");
        if let Some(e) = all.get(&key) {
            return Ok(e.clone());
        }
        let e = embed::from_config(&config.embedder)?;
        e.warm();
        all.insert(key, e.clone());
        Ok(e)
    }
}
