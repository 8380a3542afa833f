//! The tenant model of `memd serve --root DIR` and `memd mcp --memory
//! NAME`: a memory under a root is **untrusted**. Whoever (or whatever
//! agent) writes its directory can change its files, its `memd.toml` and
//! its links, and must reach nothing beyond its own memory. So:
//!
//! - **Names** ([`canonical`]): ASCII letters, digits, `-`, `_` and `.`,
//!   not starting with a dot, at most [`MAX_NAME`] bytes, and folded to
//!   lower case for lookup, directories and tokens alike (on a
//!   case-insensitive file system `Alice` and `alice` are one directory,
//!   so they are one memory with one token). A name that looks like a
//!   file of the root's (`memd.toml`, anything ending in `.toml`, `.json`,
//!   `.jsonl`, `.md`, `.lock`, `.log`, `.tmp`), or that is a file there,
//!   is refused.
//! - **No links** ([`confined`]): the memory's directory, its fixed files
//!   and folders and the entries of `archive/`, `consolidated/` and
//!   `.memd/` must not be symbolic links, so no path reaches another
//!   memory or leaves the root. Checked on every request that reaches the
//!   memory's files.
//! - **Configuration** ([`allowed`]): where memd sends requests and which
//!   secrets it reads come from the root's `memd.toml`. A memory's own
//!   `[llm] base_url`, `api_key_env` and `[embedder]` `kind`, `runtime`,
//!   `model_dir`, `base_url`, `api_key_env` must equal the root's, or be
//!   listed in the root's `[server] tenant_endpoints` / `tenant_key_envs`;
//!   its `[index] uri` must be the root's or absent (a table elsewhere
//!   would be written with the root's credentials: [`bind_index`]);
//!   otherwise every request on that memory is refused, naming the key,
//!   and its loop does not run. So a tenant cannot make the daemon send
//!   `MEMD_TOKEN` (or any other variable) anywhere.
//! - **Limits** ([`bind_budget`]): the root pays for the LLM, so the
//!   root's `[llm] max_tokens_per_day` binds every memory (a memory's own
//!   may be lower, never higher), and each memory's calls are counted in
//!   the root's `.memd/usage/NAME.jsonl` ([`ledger`]), which no tenant can
//!   write or delete: a tenant that edits its own files neither raises its
//!   budget nor spends it again. (A ledger a memory kept in its own
//!   directory before is not read: that is the tenant's file.)
//! - **Identity** ([`identity`]): an open memory remembers its
//!   directory's device and inode. A directory deleted or replaced while
//!   open is noticed at the next request, closed, and opened again (a
//!   write makes it anew, a read of a missing one is `NotFound`), so a
//!   write is never acknowledged into a directory that is gone.

use std::path::Path;

use crate::config::Config;
use crate::error::{Context, Result};
use crate::layout::rel;
use crate::memory::init;
use crate::pause::{self, Step};
use crate::{Error, Layout, atomic};

/// Longest memory name, in bytes.
pub const MAX_NAME: usize = 64;

/// Endings of the names of a root's own files: no memory takes them.
const RESERVED_ENDINGS: [&str; 7] = [".toml", ".json", ".jsonl", ".md", ".lock", ".log", ".tmp"];

/// `Ok` when `name` may name a memory (see the module doc).
pub fn check_name(name: &str) -> Result<()> {
    let ok_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let lower = name.to_ascii_lowercase();
    let why = if name.is_empty() {
        "is empty"
    } else if name.len() > MAX_NAME {
        "is longer than 64 bytes"
    } else if name.starts_with('.') {
        "starts with a dot"
    } else if !name.chars().all(ok_char) {
        "may hold only ASCII letters, digits, '-', '_' and '.'"
    } else if RESERVED_ENDINGS.iter().any(|e| lower.ends_with(e)) {
        "is a name for the root's own files"
    } else {
        return Ok(());
    };
    Err(Error::Invalid(format!(
        "memory name {:?} {why}",
        name.chars().take(80).collect::<String>()
    )))
}

/// The one spelling of memory `name`: checked, folded to lower case.
pub fn canonical(name: &str) -> Result<String> {
    check_name(name)?;
    Ok(name.to_ascii_lowercase())
}

/// `Ok` when nothing of memory directory `dir` is a link (see the module
/// doc): the directory, its fixed paths, and the entries of its folders.
pub fn confined(dir: &Path) -> Result<()> {
    let refuse = |p: &Path| {
        Err(Error::Invalid(format!(
            "{} is a link: a memory under a root may not reach outside its directory",
            p.display()
        )))
    };
    if is_link(dir) {
        return refuse(dir);
    }
    let layout = Layout::new(dir);
    let fixed = [
        layout.config_file(),
        layout.memory_md(),
        layout.tombstones_file(),
        layout.archive_dir(),
        layout.consolidated_dir(),
        layout.runtime_dir(),
    ];
    if let Some(p) = fixed.iter().find(|p| is_link(p)) {
        return refuse(p);
    }
    for folder in [
        layout.archive_dir(),
        layout.consolidated_dir(),
        layout.runtime_dir(),
    ] {
        let Ok(read) = std::fs::read_dir(&folder) else {
            continue;
        };
        for e in read.flatten() {
            if e.file_type().is_ok_and(|t| t.is_symlink()) {
                return refuse(&e.path());
            }
        }
    }
    Ok(())
}

/// Whether `p` itself is a link (a trailing `/` would follow it, so the
/// path is taken without one).
fn is_link(p: &Path) -> bool {
    let p: std::path::PathBuf = p.components().collect();
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// What tells a directory from another one made at the same path later:
/// its device and inode (`None`: it does not exist).
pub fn identity(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(dir).ok()?;
    Some((m.dev(), m.ino()))
}

/// `Ok` when memory `name`'s configuration sends requests and reads
/// secrets only where the root's allows (see the module doc).
pub fn allowed(root: &Config, name: &str, config: &Config) -> Result<()> {
    let endpoint_ok = |mine: &str, roots: &str| {
        mine == roots || root.server.tenant_endpoints.iter().any(|e| e == mine)
    };
    let key_ok = |mine: &str, roots: &str| {
        mine == roots || root.server.tenant_key_envs.iter().any(|e| e == mine)
    };
    let (l, rl) = (&config.llm, &root.llm);
    let (e, re) = (&config.embedder, &root.embedder);
    let refused = if !endpoint_ok(&l.base_url, &rl.base_url) {
        Some(("llm", "base_url", l.base_url.clone()))
    } else if !key_ok(&l.api_key_env, &rl.api_key_env) {
        Some(("llm", "api_key_env", l.api_key_env.clone()))
    } else if !endpoint_ok(&e.base_url, &re.base_url) {
        Some(("embedder", "base_url", e.base_url.clone()))
    } else if !key_ok(&e.api_key_env, &re.api_key_env) {
        Some(("embedder", "api_key_env", e.api_key_env.clone()))
    } else if e.kind != re.kind || e.runtime != re.runtime || e.model_dir != re.model_dir {
        Some(("embedder", "kind, runtime and model_dir", String::new()))
    } else if !config.index.uri.is_empty() && config.index.uri != root.index.uri {
        Some(("index", "uri", config.index.uri.clone()))
    } else {
        None
    };
    match refused {
        None => Ok(()),
        Some((section, key, value)) => Err(Error::Invalid(format!(
            "memory {name:?}: its memd.toml sets [{section}] {key} {value:?}, which the root's memd.toml does not allow (a memory under a root uses the root's endpoints and keys, or those listed in its [server] tenant_endpoints and tenant_key_envs)"
        ))),
    }
}

/// The root decides where its memories' tables live: memory `config`'s
/// `[index] uri` is the root's ([`allowed`] refuses any other).
pub fn bind_index(root: &Config, config: &mut Config) {
    config.index.uri = root.index.uri.clone();
}

/// The root's budget binds memory `config`: its `max_tokens_per_day` is
/// the lower of its own and the root's, 0 (no limit) counting as no bound.
pub fn bind_budget(root: &Config, config: &mut Config) {
    let (own, roots) = (config.llm.daily_budget(), root.llm.daily_budget());
    let bound = match (own, roots) {
        (Some(o), Some(r)) => o.min(r),
        (o, r) => o.or(r).unwrap_or(0),
    };
    config.llm.max_tokens_per_day = bound;
}

/// Where memory `name` under `root` has its LLM calls counted: in the
/// root, out of the tenant's reach (see the module doc).
pub fn ledger(root: &Path, name: &str) -> std::path::PathBuf {
    root.join(rel::TENANT_LEDGERS).join(format!("{name}.jsonl"))
}

/// The layout of memory `name` under `root`, checked (name, links), its
/// LLM calls counted in the root's [`ledger`].
/// When it does not exist: made as `memd init` does, with `root/memd.toml`
/// (if any) as its configuration, when `create`; else `NoSuch`.
pub fn layout_of(root: &Path, name: &str, create: bool) -> Result<Layout> {
    let name = canonical(name)?;
    let dir = root.join(&name);
    confined(&dir)?;
    let ledger = ledger(root, &name);
    if let Some(parent) = ledger.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    if Layout::is_memory(&dir) {
        return Ok(Layout::open(&dir)?.with_ledger(ledger));
    }
    if dir.exists() && !dir.is_dir() {
        return Err(Error::Invalid(format!(
            "memory name {name:?} is a file of the root's"
        )));
    }
    if !create {
        return Err(Error::NoSuch {
            what: format!("memory {name:?} (its first write creates it)"),
        });
    }
    let layout = make(root, &name, &dir)?;
    tracing::info!(memory = %name, "memory created");
    Ok(layout.with_ledger(ledger))
}

/// Make memory `name` at `dir` under `root`, whole or not at all: it is
/// built in a folder of its own beside it (`.creating-NAME-PID-N`, which
/// no request can name: a memory's name never starts with a dot), with
/// the root's `memd.toml`; its files are moved into `dir`, `archive/`
/// last, and a directory is a memory once it has an `archive/`
/// ([`Layout::is_memory`]). A process killed midway leaves no memory
/// without the root's configuration: such a memory has memd's defaults,
/// which a root that sets its own refuses on every request, so it could
/// never be written again. What `dir` holds already (an operator's files
/// made before its first write) stays, but for `memd.toml`, which is the
/// root's as it always was. One memory is made at a time in a process
/// (two first writes at once: the second finds it made); when another
/// process made it first, its files stay.
fn make(root: &Path, name: &str, dir: &Path) -> Result<Layout> {
    static MAKING: std::sync::Mutex<u64> = std::sync::Mutex::new(0);
    let mut count = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    if Layout::is_memory(dir) {
        return Layout::open(dir);
    }
    *count += 1;
    let temp = root.join(format!(".creating-{name}-{}-{count}", std::process::id()));
    sweep(root, name);
    let made = build(root, &temp).and_then(|()| move_in(&temp, dir));
    if temp.exists() {
        let _ = std::fs::remove_dir_all(&temp);
    }
    made.with_context(|| format!("creating {}", dir.display()))?;
    Layout::open(dir)
}

/// Remove the folders that processes killed while making memory `name`
/// left (they hold no fact: a fact is appended once its memory is made).
/// A folder is left while the process that made it runs: where that cannot
/// be told (no `/proc`), every folder is left.
fn sweep(root: &Path, name: &str) {
    let prefix = format!(".creating-{name}-");
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for e in entries.flatten() {
        let file = e.file_name();
        // PID-N after the prefix, both digits (`.creating-a-b-…` is b's).
        let Some((pid, n)) = file
            .to_str()
            .and_then(|f| f.strip_prefix(&prefix))
            .and_then(|rest| rest.split_once('-'))
        else {
            continue;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(pid) || !digits(n) {
            continue;
        }
        let proc = Path::new("/proc");
        if proc.join("self").exists() && !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Move what `temp` holds into `dir`, `archive/` last; what `dir` has
/// already is kept, but for `memd.toml`.
fn move_in(temp: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    let archive = std::ffi::OsStr::new(rel::ARCHIVE.trim_end_matches('/'));
    let config = std::ffi::OsStr::new(rel::CONFIG);
    for e in std::fs::read_dir(temp)? {
        let e = e?;
        let to = dir.join(e.file_name());
        if e.file_name() == archive || (e.file_name() != config && to.exists()) {
            continue;
        }
        std::fs::rename(e.path(), to)?;
    }
    match std::fs::rename(temp.join(archive), dir.join(archive)) {
        Err(_) if Layout::is_memory(dir) => {}
        made => made?,
    }
    atomic::sync_dir(dir)?;
    match dir.parent() {
        Some(root) => Ok(atomic::sync_dir(root)?),
        None => Ok(()),
    }
}

/// A new memory in `temp`, with the root's `memd.toml` when it has one.
fn build(root: &Path, temp: &Path) -> Result<()> {
    let layout = init(temp)?;
    let template = Layout::new(root).config_file();
    if template.is_file() {
        let text =
            std::fs::read(&template).with_context(|| format!("reading {}", template.display()))?;
        atomic::write(&layout.config_file(), &text)
            .with_context(|| format!("writing {}", layout.config_file().display()))?;
    }
    pause::at(&Layout::new(root), Step::MemoryCreated);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Making memory `a` leaves the folder a live process is making
    /// memory `a-b` in (the sweep read "b" as that folder's process and
    /// took it for a dead one), and takes a dead process's folder of `a`.
    #[test]
    fn making_a_memory_sweeps_only_its_own_leftovers_of_dead_processes() {
        let root = tempfile::tempdir().unwrap();
        let live = root
            .path()
            .join(format!(".creating-a-b-{}-7", std::process::id()));
        let dead = root.path().join(".creating-a-4294967295-0");
        for d in [&live, &dead] {
            std::fs::create_dir_all(d.join("archive")).unwrap();
        }
        layout_of(root.path(), "a", true).unwrap();
        assert!(live.exists(), "a-b's folder, being made, was taken");
        assert!(!dead.exists(), "a dead process's leftover was left");
        assert!(Layout::is_memory(&root.path().join("a")));
    }

    /// A memory's directory that an operator made before its first write
    /// keeps their files; `memd.toml` is the root's.
    #[test]
    fn an_operators_files_in_a_new_memorys_directory_stay() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(
            root.path().join("memd.toml"),
            "[embedder]\nkind = \"lexical\"\n",
        )
        .unwrap();
        let dir = root.path().join("alice");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("MEMORY.md"), "Alice's own notes\n").unwrap();
        std::fs::write(dir.join("memd.toml"), "# not the root's\n").unwrap();
        layout_of(root.path(), "alice", true).unwrap();
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        assert_eq!(read("MEMORY.md"), "Alice's own notes\n");
        assert_eq!(read("memd.toml"), "[embedder]\nkind = \"lexical\"\n");
        assert!(Layout::is_memory(&dir));
    }

    /// A memory under a root that names another table location is
    /// refused (its table would be written with the root's credentials);
    /// one that names none, or the root's, has the root's.
    #[test]
    fn a_memory_under_a_root_may_put_its_index_only_where_the_root_says() {
        let mut root = Config::default();
        root.index.uri = "s3://operator/memories".into();
        let mut own = Config::default();
        own.index.uri = "s3://someone-else/x".into();
        let refused = allowed(&root, "alice", &own).unwrap_err().to_string();
        assert!(refused.contains("[index] uri"), "{refused}");
        for uri in ["", "s3://operator/memories"] {
            let mut own = Config::default();
            own.index.uri = uri.into();
            allowed(&root, "alice", &own).unwrap();
            bind_index(&root, &mut own);
            assert_eq!(own.index.uri, root.index.uri);
        }
    }
}
