//! Many memories under one root (`memd serve --root DIR`): one memory
//! directory per user or agent, `DIR/NAME`, opened on demand.
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
//! - **Open memories are capped** ([`Memories::new`]'s `max_open`): the
//!   least recently used is closed when another opens. Closing drops the
//!   daemon's handle on the table, its lock on the directory and its
//!   `daemon.json`; the files are the truth, so nothing is lost, and the
//!   next request opens it again and syncs what changed meanwhile. A
//!   memory still in use by a request when it is closed stays alive until
//!   that request ends, and a request for it meanwhile gets that same one
//!   (never a second handle on the table).
//! - **One embedder per embedder configuration**, shared by every open
//!   memory: the model is loaded once, not once per memory.
//! - While open, a memory is served like `memd serve` serves one: its
//!   `.memd/daemon.lock` is held and `.memd/daemon.json` names the memory,
//!   so CLI commands on it go through the daemon.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};

use crate::config::Config;
use crate::daemon_info::{self, Info};
use crate::embed::{self, Embedder};
use crate::error::{Context, Result};
use crate::index::Index;
use crate::{Layout, lock};

/// Longest memory name, in bytes.
pub const MAX_NAME: usize = 64;

/// `Ok` when `name` may name a memory (see the module doc).
pub fn check_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME {
        "is longer than 64 bytes"
    } else if name.starts_with('.') {
        "starts with a dot"
    } else if !name.chars().all(ok_char) {
        "may hold only ASCII letters, digits, '-', '_' and '.'"
    } else {
        return Ok(());
    };
    Err(crate::Error::Invalid(format!(
        "memory name {:?} {why}",
        name.chars().take(80).collect::<String>()
    )))
}

/// The layout of memory `name` under `root` (the name checked first).
/// When it does not exist: made as `memd init` does, with `root/memd.toml`
/// (if any) as its configuration, when `create`; else `NoSuch`.
pub fn layout_of(root: &Path, name: &str, create: bool) -> Result<Layout> {
    check_name(name)?;
    let dir = root.join(name);
    if dir.join("archive").is_dir() {
        return Layout::open(&dir);
    }
    if !create {
        return Err(crate::Error::NoSuch {
            what: format!("memory {name:?} (its first write creates it)"),
        });
    }
    let layout = crate::layout::init(&dir)?;
    let template = root.join("memd.toml");
    if template.is_file() {
        std::fs::copy(&template, layout.config_file())
            .with_context(|| format!("copying {}", template.display()))?;
    }
    tracing::info!(memory = %name, "memory created");
    Ok(layout)
}

/// One open memory.
pub struct Memory {
    pub name: String,
    pub layout: Layout,
    pub config: Config,
    pub index: Arc<Index>,
    /// Set by every request and run since the upkeep loop last looked: an
    /// open memory nobody touched needs no upkeep.
    pub touched: std::sync::atomic::AtomicBool,
    /// Its HTTP API ([`crate::api`]'s one-memory router), built by the
    /// first request it serves and kept while it is open.
    pub(crate) api: std::sync::OnceLock<axum::Router>,
    _served: lock::Guard,
}

impl Drop for Memory {
    fn drop(&mut self) {
        daemon_info::remove(&self.layout);
        tracing::debug!(memory = %self.name, "memory closed");
    }
}

/// The memories under a root, the open ones capped.
pub struct Memories {
    pub root: PathBuf,
    max_open: usize,
    /// Where the daemon listens, for each memory's `daemon.json`.
    info: Info,
    open: Mutex<Open>,
    embedders: Mutex<HashMap<String, Arc<dyn Embedder>>>,
    /// One open at a time, so two requests for a cold memory open it once.
    opening: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct Open {
    /// Strong handles, with the tick of their last use.
    held: HashMap<String, (Arc<Memory>, u64)>,
    /// Every memory opened and maybe still in use after it was closed.
    alive: HashMap<String, Weak<Memory>>,
    tick: u64,
}

impl Open {
    fn touch(&mut self, name: &str) -> Option<Arc<Memory>> {
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

    /// Hold `m`, closing the least recently used past `max_open`.
    fn hold(&mut self, m: Arc<Memory>, max_open: usize) {
        self.tick += 1;
        self.alive.insert(m.name.clone(), Arc::downgrade(&m));
        self.held.insert(m.name.clone(), (m, self.tick));
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
    pub fn new(root: &Path, max_open: usize, info: Info) -> Memories {
        Memories {
            root: root.to_path_buf(),
            max_open,
            info,
            open: Mutex::default(),
            embedders: Mutex::default(),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// Every memory under the root (directories with a valid name and an
    /// `archive/`), by name.
    pub fn names(&self) -> Result<Vec<String>> {
        let read = std::fs::read_dir(&self.root);
        let mut out: Vec<String> = read
            .with_context(|| format!("reading {}", self.root.display()))?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| check_name(n).is_ok() && self.root.join(n).join("archive").is_dir())
            .collect();
        out.sort();
        Ok(out)
    }

    /// How many memories are open now.
    pub fn open_count(&self) -> usize {
        self.open.lock().expect("not poisoned").held.len()
    }

    /// Whether `name` is open now.
    pub fn is_open(&self, name: &str) -> bool {
        self.open
            .lock()
            .expect("not poisoned")
            .held
            .contains_key(name)
    }

    /// Note that `name` was used (a write that did not open it): if it is
    /// open, the upkeep loop syncs it.
    pub fn mark_used(&self, name: &str) {
        let open = self.open.lock().expect("not poisoned");
        if let Some((m, _)) = open.held.get(name) {
            m.touched.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// The open memories.
    pub fn held(&self) -> Vec<Arc<Memory>> {
        let open = self.open.lock().expect("not poisoned");
        open.held.values().map(|(m, _)| m.clone()).collect()
    }

    /// Memory `name`, opened if it is not; created first when `create`
    /// (a write), else `NotFound` if it does not exist.
    pub async fn get(&self, name: &str, create: bool) -> Result<Arc<Memory>> {
        check_name(name)?;
        if let Some(m) = self.open.lock().expect("not poisoned").touch(name) {
            m.touched.store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(m);
        }
        let _one = self.opening.lock().await;
        if let Some(m) = self.open.lock().expect("not poisoned").touch(name) {
            m.touched.store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(m);
        }
        let layout = layout_of(&self.root, name, create)?;
        let m = Arc::new(self.open_memory(name, layout).await?);
        self.open
            .lock()
            .expect("not poisoned")
            .hold(m.clone(), self.max_open);
        Ok(m)
    }

    async fn open_memory(&self, name: &str, layout: Layout) -> Result<Memory> {
        let Some(served) = lock::try_lock(&daemon_info::lock_path(&layout))? else {
            return Err(crate::daemon::already_served(&layout));
        };
        let config = Config::load(&layout.root)?;
        let embedder = self.embedder(&config)?;
        let index = Arc::new(Index::open_with(&layout, &config, embedder).await?);
        index.claim_sole_writer();
        let mut info = self.info.clone();
        info.memory = Some(name.to_string());
        daemon_info::write(&layout, &info).context("writing .memd/daemon.json")?;
        tracing::debug!(memory = %name, "memory opened");
        Ok(Memory {
            name: name.to_string(),
            layout,
            config,
            index,
            touched: std::sync::atomic::AtomicBool::new(true),
            api: std::sync::OnceLock::new(),
            _served: served,
        })
    }

    /// The shared embedder for `config`'s embedder settings.
    fn embedder(&self, config: &Config) -> Result<Arc<dyn Embedder>> {
        let key = serde_json::to_string(&config.embedder)?;
        let mut all = self.embedders.lock().expect("not poisoned");
        if let Some(e) = all.get(&key) {
            return Ok(e.clone());
        }
        let e = embed::from_config(&config.embedder)?;
        all.insert(key, e.clone());
        Ok(e)
    }
}
