//! One memory directory, opened: the handle every operation takes. It
//! holds what an operation needs besides its request: where the files are
//! ([`Layout`]), the configuration in force (read once, from the
//! directory's `memd.toml`), the clock its writes are stamped with, and
//! the embedder (made on first use, or shared by a daemon serving many
//! memories).
//!
//! "Memory" means this, a memory directory, everywhere in memd; its tiers
//! are the archive ([`crate::archive`]), the entries
//! ([`crate::entries`], `consolidated/memory.md`) and the core memory
//! ([`crate::core_md`], `MEMORY.md`).

use std::sync::{Arc, OnceLock};

use std::path::{Path, PathBuf};

use crate::clock::Clock;
use crate::config::{self, Config};
use crate::embed::{self, Embedder};
use crate::error::{Context, Result};
use crate::layout::{Layout, rel};
use crate::{atomic, core_md, entries};

#[derive(Clone)]
pub struct Memory {
    pub layout: Layout,
    pub config: Config,
    pub clock: Clock,
    embedder: Arc<OnceLock<Arc<dyn Embedder>>>,
}

impl std::fmt::Debug for Memory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memory")
            .field("root", &self.layout.root)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl Memory {
    /// The memory directory at `dir` (an error if it is not one), with its
    /// configuration.
    pub fn open(dir: impl Into<PathBuf>) -> Result<Memory> {
        let layout = Layout::open(dir)?;
        let config = Config::load(&layout.root)?;
        Ok(Memory::new(layout, config))
    }

    /// A memory of `layout` with `config` (tests and evaluations set their
    /// own), on the system clock.
    pub fn new(layout: Layout, config: Config) -> Memory {
        Memory {
            layout: layout.with_index_uri(&config.index.uri),
            config,
            clock: Clock::System,
            embedder: Arc::default(),
        }
    }

    /// This memory, its writes stamped with `clock`'s time.
    pub fn at(mut self, clock: Clock) -> Memory {
        self.clock = clock;
        self
    }

    /// This memory with `embedder` in place of the configured one (a
    /// daemon shares one per setting; tests choose their own).
    pub fn with_embedder(self, embedder: Arc<dyn Embedder>) -> Memory {
        let _ = self.embedder.set(embedder);
        self
    }

    /// The embedder the configuration asks for, made on first use.
    pub fn embedder(&self) -> Result<Arc<dyn Embedder>> {
        if let Some(e) = self.embedder.get() {
            return Ok(e.clone());
        }
        let made = embed::from_config(&self.config.embedder)?;
        Ok(self.embedder.get_or_init(|| made).clone())
    }

    /// The embedder behind this directory's embedding cache.
    pub fn cached_embedder(&self) -> Result<embed::cache::Cached> {
        embed::cache::Cached::open(self.embedder()?, &self.layout.cache_dir())
    }
}

/// Create a memory directory at `root` (or complete a partial one). Existing
/// files are never overwritten: running `init` twice is harmless.
pub fn init(root: &Path) -> Result<Layout> {
    let layout = Layout::new(root);
    for dir in [
        layout.root.clone(),
        layout.archive_dir(),
        layout.consolidated_dir(),
        layout.runtime_dir(),
    ] {
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let files: [(PathBuf, String); 4] = [
        (layout.config_file(), config::default_file_text()),
        (layout.entries_file(), entries::EMPTY_FILE.to_string()),
        (layout.memory_md(), core_md::EMPTY_FILE.to_string()),
        (layout.gitignore(), format!("{}/\n", rel::RUNTIME)),
    ];
    for (path, text) in files {
        if !path.exists() {
            atomic::write(&path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
    }
    Ok(layout)
}
