//! `.memd/cache/embeddings-<embedder>.bin`: embeddings by text hash, so a
//! rebuild never re-embeds a text it embedded before.
//!
//! Append-only records: 16 bytes of SHA-256 of the text, a u32 dimension,
//! then the f32 values (little endian). A torn last record (a crash during
//! an append) is ignored on load. The cache is derived data: deleting it
//! costs only time.
//!
//! The file is read whole only when it pays ([`Cached::embed`]): a call
//! with many texts to embed (a sync of many rows, a rebuild), or a small
//! file. A search's one query against a large cache embeds the query
//! instead: reading the file took far longer than embedding it. At
//! 100,000 facts a one-shot `memd search` that leaves the file unread
//! takes less time and memory, and so does a daemon over a run of
//! searches and appends (measured in BENCHMARKS.md, "The sync after an
//! append at 10k, and memory at 100k"). What this process embeds or finds
//! stays in memory either way, and goes into the file as before; a query
//! asked again by another process is appended again, which loading reads
//! as one entry (the last of a key wins; all are equal). An erasure reads
//! the file whole before it rewrites it ([`Cached::retain`]).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use super::Embedder;
use crate::progress::Progress;
use crate::{Result, atomic};

/// Texts embedded per call: the unit of progress shown and of work kept if
/// embedding fails part-way (about a third of a second on ONNX Runtime:
/// `memd bench embed`).
const CHUNK: usize = 256;

type Key = [u8; 16];

pub struct Cached {
    inner: Arc<dyn Embedder>,
    path: PathBuf,
    map: tokio::sync::Mutex<Known>,
    /// The texts a call of this process is embedding now, each with the
    /// receiving end of a channel its call closes when done: a call asking
    /// for one of them waits for it instead of embedding it a second time
    /// beside it. A search for a fact just appended, with the fact's own
    /// text, was embedding it again while the sync did (the peers
    /// harness, `../shared/tools/peers/`: BENCHMARKS.md).
    flying: Flying,
}

/// The texts being embedded now ([`Cached::flying`]).
type Flying = std::sync::Mutex<HashMap<Key, tokio::sync::watch::Receiver<()>>>;

/// One chunk of texts being embedded ([`Cached::flying`]); dropped when
/// done, its keys are let go and the calls waiting for them go on.
struct Flight<'a> {
    flying: &'a Flying,
    keys: Vec<Key>,
    mine: tokio::sync::watch::Receiver<()>,
    _done: tokio::sync::watch::Sender<()>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        let mut flying = self.flying.lock().unwrap_or_else(|e| e.into_inner());
        for k in &self.keys {
            if flying.get(k).is_some_and(|r| r.same_channel(&self.mine)) {
                flying.remove(k);
            }
        }
    }
}

/// The embeddings this process holds: those it embedded or read, and
/// whether it has read the whole file.
#[derive(Default)]
struct Known {
    map: HashMap<Key, Vec<f32>>,
    whole: bool,
}

/// A call with more texts than this missing from memory reads the whole
/// file first ([`Cached::embed`]): embedding them could cost more than
/// reading it.
const READ_WHOLE_FOR: usize = 64;

/// A file this small is read whole at the first call, whatever it asks:
/// about 6 ms for its 2,700 vectors of MiniLM (149 MB took about 220 ms),
/// which a query found there repays by not loading the embedder at all.
const READ_WHOLE_BELOW: u64 = 4 << 20;

fn key(text: &str) -> Key {
    let d = Sha256::digest(text.as_bytes());
    let mut k = [0u8; 16];
    k.copy_from_slice(&d[..16]);
    k
}

impl Cached {
    pub fn open(inner: Arc<dyn Embedder>, dir: &Path) -> Result<Cached> {
        std::fs::create_dir_all(dir)?;
        let safe: String = inner
            .id()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("embeddings-{safe}.bin"));
        Ok(Cached {
            inner,
            path,
            map: tokio::sync::Mutex::default(),
            flying: std::sync::Mutex::default(),
        })
    }

    /// Wait until no call of this process is embedding any of `keys`.
    async fn after_flights(&self, keys: &[Key]) {
        let waits: Vec<tokio::sync::watch::Receiver<()>> = {
            let flying = self.flying.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter().filter_map(|k| flying.get(k).cloned()).collect()
        };
        for mut done in waits {
            // Closed when that call is done, whether it succeeded or not.
            let _ = done.changed().await;
        }
    }

    /// Mark `keys` as being embedded by the caller, until the flight drops.
    fn fly(&self, keys: Vec<Key>) -> Flight<'_> {
        let (done, mine) = tokio::sync::watch::channel(());
        let mut flying = self.flying.lock().unwrap_or_else(|e| e.into_inner());
        for k in &keys {
            flying.insert(*k, mine.clone());
        }
        Flight {
            flying: &self.flying,
            keys,
            mine,
            _done: done,
        }
    }

    /// Read the whole file into `known`, once; what this process holds
    /// already stays (it equals what the file holds).
    async fn read_whole(&self, known: &mut Known) -> Result<()> {
        if known.whole {
            return Ok(());
        }
        let path = self.path.clone();
        let file = tokio::task::spawn_blocking(move || load(&path)).await?;
        for (k, v) in file {
            known.map.entry(k).or_insert(v);
        }
        known.whole = true;
        Ok(())
    }

    /// Whether a call missing `missing` texts from memory reads the whole
    /// file first.
    fn reads_whole(&self, known: &Known, missing: usize) -> bool {
        if known.whole || missing == 0 {
            return false;
        }
        missing > READ_WHOLE_FOR
            || std::fs::metadata(&self.path).map_or(true, |m| m.len() < READ_WHOLE_BELOW)
    }

    #[cfg(feature = "lab")]
    pub(crate) fn inner(&self) -> &Arc<dyn Embedder> {
        &self.inner
    }

    /// Embed `texts`, computing only those not cached, [`CHUNK`] at a time
    /// with progress shown ([`crate::progress`]); each chunk is cached as
    /// it is done, so a failure part-way loses no finished work. A text
    /// another call is embedding now is waited for, not embedded again.
    pub async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let keys: Vec<Key> = texts.iter().map(|t| key(t)).collect();
        self.after_flights(&keys).await;
        let missing = {
            let mut known = self.map.lock().await;
            let missing = missing(&known.map, &keys);
            match self.reads_whole(&known, missing.len()) {
                true => {
                    self.read_whole(&mut known).await?;
                    self::missing(&known.map, &keys)
                }
                false => missing,
            }
        };
        let mut progress = Progress::new("texts embedded", missing.len() as u64);
        for chunk in missing.chunks(CHUNK) {
            let todo: Vec<String> = chunk.iter().map(|&i| texts[i].clone()).collect();
            let _flight = self.fly(chunk.iter().map(|&i| keys[i]).collect());
            let vecs = self.inner.embed(&todo).await?;
            let mut buf = Vec::new();
            let map = &mut self.map.lock().await.map;
            for (&i, v) in chunk.iter().zip(vecs) {
                buf.extend_from_slice(&keys[i]);
                buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
                for x in &v {
                    buf.extend_from_slice(&x.to_le_bytes());
                }
                map.insert(keys[i], v);
            }
            progress.inc(chunk.len() as u64);
            // A failed cache write only costs a re-embedding later.
            // Whole records only, also with several processes (and into the
            // file the path names: an erasure renames a new one over it).
            if let Err(e) = atomic::open_locked(&self.path).and_then(|mut f| f.write_all(&buf)) {
                tracing::warn!(file = %self.path.display(), error = %e, "cannot write the embedding cache");
            }
        }
        let map = &self.map.lock().await.map;
        Ok(keys.iter().map(|k| map[k].clone()).collect())
    }
}

impl Cached {
    /// Keep only the embeddings of `texts`, in memory and in the file
    /// (rewritten whole and atomically, under the file's lock): an
    /// erasure's, so that no embedding of an erased text stays on disk.
    pub async fn retain(&self, texts: &[String]) -> Result<()> {
        let keep: std::collections::HashSet<Key> = texts.iter().map(|t| key(t)).collect();
        let mut known = self.map.lock().await;
        self.read_whole(&mut known).await?;
        let map = &mut known.map;
        map.retain(|k, _| keep.contains(k));
        let mut buf = Vec::new();
        for (k, v) in map.iter() {
            buf.extend_from_slice(k);
            buf.extend_from_slice(&(v.len() as u32).to_le_bytes());
            for x in v {
                buf.extend_from_slice(&x.to_le_bytes());
            }
        }
        let _lock = atomic::open_locked(&self.path)?;
        atomic::write(&self.path, &buf)?;
        // Another embedder's cache may hold the erased texts' vectors too:
        // it is derived, and goes (made again if that embedder comes back).
        let dir = self.path.parent().unwrap_or(Path::new("."));
        for e in std::fs::read_dir(dir)?.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("embeddings-") && name.ends_with(".bin") && e.path() != self.path {
                std::fs::remove_file(e.path())?;
            }
        }
        Ok(())
    }
}

/// The positions of the texts whose `keys` are not in `map`, each key once.
fn missing(map: &HashMap<Key, Vec<f32>>, keys: &[Key]) -> Vec<usize> {
    let mut queued = std::collections::HashSet::new();
    (0..keys.len())
        .filter(|&i| !map.contains_key(&keys[i]) && queued.insert(keys[i]))
        .collect()
}

fn load(path: &Path) -> HashMap<Key, Vec<f32>> {
    let mut map = HashMap::new();
    let Ok(bytes) = std::fs::read(path) else {
        return map;
    };
    let mut at = 0;
    while at + 20 <= bytes.len() {
        let mut k = [0u8; 16];
        k.copy_from_slice(&bytes[at..at + 16]);
        let dim = u32::from_le_bytes(bytes[at + 16..at + 20].try_into().unwrap()) as usize;
        let end = at + 20 + dim * 4;
        if dim > 65536 || end > bytes.len() {
            break;
        }
        let v = bytes[at + 20..end]
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        map.insert(k, v);
        at = end;
    }
    map
}
