//! `memd.toml`: every knob, its default, and `MEMD_*` environment overrides.
//!
//! Every key has a default, so the file is optional. An unknown key or a
//! value of the wrong type is an error that names the key: a typo must not
//! silently fall back to a default. Each key `K` of section `S` can be
//! overridden by the environment variable `MEMD_S_K` (upper case), for
//! example `MEMD_CONSOLIDATION_MIN_HOURS=0`; `MEMD_MODEL_DIR` is a short
//! alias for `MEMD_EMBEDDER_MODEL_DIR`.

use std::path::Path;

use crate::atomic;
use crate::error::{Context, Result, bail, err};
use crate::index::store;
use crate::layout::rel;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    pub consolidation: Consolidation,
    pub promotion: Promotion,
    pub search: Search,
    pub llm: Llm,
    pub embedder: Embedder,
    pub server: Server,
    pub sync: Sync,
    pub index: Index,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Consolidation {
    pub min_hours: f64,
    pub min_facts: u32,
    pub interval_seconds: u64,
    pub neighbor_k: u32,
    pub min_similarity: f64,
    pub cluster_max: u32,
    pub max_retries: u32,
    pub remove_budget: u32,
    pub concurrency: u32,
    pub check_updates: bool,
    /// The shape of a judge request: see [`Request`].
    pub request: Request,
    /// Whether a run applies its ops or proposes them: see [`Review`].
    pub review: Review,
}

/// Whether a run's ops are applied (`auto`) or proposed for a person to
/// accept or reject (`manual`: `consolidated/REVIEW.md`, [`crate::review`]).
#[derive(
    Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Review {
    /// Every op is applied as the judge decides it.
    #[default]
    Auto,
    /// A run writes its ops to `consolidated/REVIEW.md` and applies none;
    /// `memd review apply`, or the next run, carries out what the person
    /// decided there.
    Manual,
}

/// How the LLM judge is asked about a cluster.
#[derive(
    Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// `prompts/consolidate.md`: a list of ops (ADD, REPLACE, KEEP,
    /// REMOVE), facts and entries named in them; the model writes the
    /// texts and may fold two entries into one.
    Ops,
    /// `prompts/decide.md`: one decision per fact, in order (new, the
    /// same as an entry or an earlier fact, or an update of an entry), its
    /// schema listing every fact, so no fact can be left out; the model
    /// writes no text. No REMOVE. The default: with Qwen2.5-Coder-1.5B on
    /// the dev Letta sets it kept 12 of 16 updates as history against 8
    /// for `ops`, with 3 invalid replies in 27 calls against 6, and no
    /// other entry touched (EVALUATION.md).
    #[default]
    PerFact,
}

impl Default for Consolidation {
    fn default() -> Self {
        Consolidation {
            min_hours: 6.0,
            min_facts: 10,
            interval_seconds: 300,
            neighbor_k: 8,
            min_similarity: 0.2,
            cluster_max: 12,
            max_retries: 2,
            remove_budget: 20,
            concurrency: 2,
            check_updates: false,
            request: Request::PerFact,
            review: Review::Auto,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Promotion {
    pub max_lines: u32,
}

impl Default for Promotion {
    fn default() -> Self {
        Promotion { max_lines: 30 }
    }
}

/// The default `[search] min_score`: see EVALUATION.md, "Search scores and
/// the cutoff". `memd eval locomo --conversations 5 --sessions 40
/// --min-scores …` with MiniLM: at 0.45 the evidence of 511 of 623
/// questions is still in the top 10 (514 with no cutoff), while questions
/// about somebody else get 0.46 hits instead of 10 (84% get none); at 0.5,
/// 506 and 0.14.
pub const MIN_SCORE: f32 = 0.45;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Search {
    pub default_k: u32,
    pub recency_half_life_days: f64,
    /// Hits scoring less (0 to 1) are left out of a search; measured in
    /// EVALUATION.md ("Search scores and the cutoff").
    pub min_score: f32,
}

impl Default for Search {
    fn default() -> Self {
        Search {
            default_k: 8,
            recency_half_life_days: 0.0,
            min_score: MIN_SCORE,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Llm {
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub timeout_seconds: u64,
    pub max_attempts: u32,
    pub json_mode: bool,
    /// Tokens this memory's LLM calls may spend in a day (its local day);
    /// 0: no limit ([`crate::usage`]).
    pub max_tokens_per_day: u64,
}

impl Default for Llm {
    fn default() -> Self {
        Llm {
            base_url: String::new(),
            model: String::new(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_seconds: 120,
            max_attempts: 3,
            json_mode: true,
            max_tokens_per_day: 0,
        }
    }
}

impl Llm {
    /// The day's token budget, if one is set.
    pub fn daily_budget(&self) -> Option<u64> {
        (self.max_tokens_per_day > 0).then_some(self.max_tokens_per_day)
    }

    /// An LLM is configured when it has an endpoint; otherwise the built-in
    /// judge decides.
    pub fn configured(&self) -> bool {
        !self.base_url.trim().is_empty()
    }
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    Minilm,
    Openai,
    Lexical,
}

/// What runs the minilm model: ONNX Runtime. The key stays so that a
/// configuration written before candle was removed still loads: its
/// `candle` is read as `auto` (the same model, the same vectors, so the
/// index and the embedding cache are kept).
#[derive(
    Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Runtime {
    /// ONNX Runtime.
    #[default]
    #[serde(alias = "candle")]
    Auto,
    /// ONNX Runtime's CPU kernels, from the library `memd setup` installs
    /// beside the model.
    Onnx,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Embedder {
    pub kind: EmbedderKind,
    /// For `kind = "minilm"`.
    pub runtime: Runtime,
    pub model_dir: String,
    pub base_url: String,
    pub model: String,
    pub api_key_env: String,
    pub batch_size: u32,
    pub timeout_seconds: u64,
    pub max_attempts: u32,
}

impl Default for Embedder {
    fn default() -> Self {
        Embedder {
            kind: EmbedderKind::Minilm,
            runtime: Runtime::Auto,
            model_dir: String::new(),
            base_url: String::new(),
            model: String::new(),
            api_key_env: "OPENAI_API_KEY".into(),
            batch_size: 64,
            timeout_seconds: 30,
            max_attempts: 3,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Server {
    pub listen: String,
    /// Web origins (`http://localhost:3000`) whose pages may call the API;
    /// requests from any other page are refused.
    pub allowed_origins: Vec<String>,
    /// Under `serve --root` (read from the root's `memd.toml` only): the
    /// endpoints a memory's own `memd.toml` may name besides the root's.
    pub tenant_endpoints: Vec<String>,
    /// Under `serve --root`: the environment variables a memory's own
    /// `memd.toml` may name as its API key besides the root's.
    pub tenant_key_envs: Vec<String>,
}

impl Default for Server {
    fn default() -> Self {
        Server {
            listen: "127.0.0.1:7437".into(),
            allowed_origins: Vec::new(),
            tenant_endpoints: Vec::new(),
            tenant_key_envs: Vec::new(),
        }
    }
}

/// `memd sync` run by the daemon of one memory ([`crate::sync`]); a
/// daemon serving a root never syncs its memories (git would run with the
/// configuration of a repository its tenant writes).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Sync {
    /// Seconds between syncs; 0 (the default): no timer.
    pub interval_seconds: u64,
    /// Sync after each consolidation run that changed something.
    pub after_consolidation: bool,
}

/// Where the index's table lives ([`crate::index::store`]).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Index {
    /// Empty (the default): in the memory, `.memd/index/lance`.
    /// `s3://BUCKET[/PREFIX]`: on object storage, the memory in directory
    /// `NAME` at `URI/NAME`; credentials and endpoint from the `AWS_*`
    /// environment variables. Under `serve --root`, the root's.
    pub uri: String,
}

/// One line of documentation per key, shown in the generated `memd.toml`.
const DOCS: &[(&str, &str, &str)] = &[
    (
        "consolidation",
        "min_hours",
        "hours since the last run before the loop runs again",
    ),
    (
        "consolidation",
        "min_facts",
        "pending facts needed before the loop runs (`--force` skips both)",
    ),
    (
        "consolidation",
        "interval_seconds",
        "how often the daemon checks the gate",
    ),
    (
        "consolidation",
        "neighbor_k",
        "neighbours gathered per pending fact (entries and facts)",
    ),
    (
        "consolidation",
        "min_similarity",
        "weakest similarity (cosine, or share of rare words) that links two items into one cluster",
    ),
    (
        "consolidation",
        "cluster_max",
        "most facts and entries shown to the LLM at once",
    ),
    (
        "consolidation",
        "max_retries",
        "retries of an invalid LLM reply before facts are added verbatim",
    ),
    (
        "consolidation",
        "remove_budget",
        "most REMOVE (merge) ops applied in one run",
    ),
    (
        "consolidation",
        "concurrency",
        "LLM calls in flight at once",
    ),
    (
        "consolidation",
        "check_updates",
        "ask the LLM once more for each ADD beside entries: does it update one? (one short call per such fact; off: a 1.5B model mostly named the wrong entry)",
    ),
    (
        "consolidation",
        "request",
        "shape of an LLM judge request: ops (a list of ADD/REPLACE/KEEP/REMOVE) or per-fact (one decision per fact, for small models)",
    ),
    (
        "consolidation",
        "review",
        "auto (a run applies its ops) or manual (a run proposes them in consolidated/REVIEW.md, and applies only those a person accepts)",
    ),
    (
        "promotion",
        "max_lines",
        "cap on the generated part of MEMORY.md",
    ),
    ("search", "default_k", "hits returned when -k is not given"),
    (
        "search",
        "recency_half_life_days",
        "recency weighting of search scores; 0 turns it off",
    ),
    (
        "search",
        "min_score",
        "hits scoring less (0 to 1) are left out; 0 keeps every hit",
    ),
    (
        "llm",
        "base_url",
        "OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1; empty = built-in judge",
    ),
    ("llm", "model", "model name sent to the endpoint"),
    (
        "llm",
        "api_key_env",
        "environment variable holding the API key (unset = no key)",
    ),
    ("llm", "timeout_seconds", "timeout of one LLM request"),
    (
        "llm",
        "max_attempts",
        "attempts per request on network errors and 5xx",
    ),
    (
        "llm",
        "json_mode",
        "ask for structured replies: response_format json_schema (a schema per cluster), then json_object, then plain text, as the endpoint takes them",
    ),
    (
        "llm",
        "max_tokens_per_day",
        "tokens the LLM calls may spend in a day (prompt and reply); a call that could pass it is not made and its facts wait; 0 = no limit",
    ),
    (
        "embedder",
        "kind",
        "minilm (in process, offline), openai (HTTP) or lexical (no model, weaker)",
    ),
    (
        "embedder",
        "runtime",
        "auto or onnx: minilm runs on ONNX Runtime (`candle`, from before candle was removed, is read as auto)",
    ),
    (
        "embedder",
        "model_dir",
        "all-MiniLM-L6-v2 files; empty = ~/.cache/memd/all-MiniLM-L6-v2 (MEMD_MODEL_DIR)",
    ),
    (
        "embedder",
        "base_url",
        "OpenAI-compatible endpoint for kind = openai",
    ),
    (
        "embedder",
        "model",
        "embedding model name for kind = openai",
    ),
    (
        "embedder",
        "api_key_env",
        "environment variable holding the API key",
    ),
    ("embedder", "batch_size", "texts per embedding request"),
    (
        "embedder",
        "timeout_seconds",
        "timeout of one embedding request",
    ),
    (
        "embedder",
        "max_attempts",
        "attempts per request on network errors and 5xx",
    ),
    (
        "sync",
        "interval_seconds",
        "seconds between the daemon's syncs with the git remote (`memd sync --remote URL` sets it); 0: none",
    ),
    (
        "sync",
        "after_consolidation",
        "the daemon syncs after each consolidation run that changed something",
    ),
    (
        "server",
        "listen",
        "address of the HTTP API (non-loopback needs MEMD_TOKEN)",
    ),
    (
        "server",
        "allowed_origins",
        "web origins whose pages may call the API, e.g. [\"http://localhost:3000\"] (comma-separated in MEMD_SERVER_ALLOWED_ORIGINS); other pages are refused",
    ),
    (
        "server",
        "tenant_endpoints",
        "serve --root, in the root's memd.toml: endpoints a memory's own memd.toml may name besides the root's (no other is called)",
    ),
    (
        "server",
        "tenant_key_envs",
        "serve --root, in the root's memd.toml: environment variables a memory's own memd.toml may name as its API key besides the root's",
    ),
    (
        "index",
        "uri",
        "where the index's table lives: empty for the memory's .memd/index, or s3://BUCKET[/PREFIX] (the memory in directory NAME at URI/NAME; credentials and endpoint from AWS_* variables; under serve --root, the root's)",
    ),
];

/// The text `memd init` writes: every key with its default, commented out.
pub fn default_file_text() -> String {
    let table = default_table();
    let mut out = String::from(
        "# memd configuration. Every key is optional; the values shown are the\n\
         # defaults. Uncomment a line to change it. Any key can also be set with\n\
         # an environment variable MEMD_<SECTION>_<KEY>, e.g. MEMD_LLM_MODEL.\n",
    );
    for (section, keys) in &table {
        out.push_str(&format!("\n[{section}]\n"));
        let keys = keys.as_table().expect("sections are tables");
        for (key, value) in keys {
            let doc = DOCS
                .iter()
                .find(|(s, k, _)| s == section && k == key)
                .map(|(_, _, d)| *d)
                .unwrap_or("");
            out.push_str(&format!("# {doc}\n# {key} = {value}\n"));
        }
    }
    out
}

fn default_table() -> toml::Table {
    toml::Table::try_from(Config::default()).expect("default config serialises")
}

impl Config {
    /// Load `memd.toml` from `dir` (absent = defaults), then apply `MEMD_*`
    /// environment overrides.
    pub fn load(dir: &Path) -> Result<Config> {
        let path = dir.join(rel::CONFIG);
        let bytes = atomic::read_if_exists(&path)
            .with_context(|| format!("reading {}", path.display()))?
            .unwrap_or_default();
        let text = String::from_utf8(bytes)
            .with_context(|| format!("reading {}: not UTF-8", path.display()))?;
        Config::parse(&text, |k| std::env::var(k).ok())
            .with_context(|| format!("invalid configuration in {}", path.display()))
    }

    /// Parse config text and apply overrides looked up through `env`.
    pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Config> {
        // Parse straight into the typed struct first: toml's errors then point
        // at the offending key and line.
        let from_file: Config = toml::from_str(text).map_err(|e| err!("{e}"))?;
        let mut table = toml::Table::try_from(from_file).map_err(|e| err!("{e}"))?;
        let defaults = default_table();
        for (section, keys) in &defaults {
            for (key, default) in keys.as_table().expect("sections are tables") {
                let var = format!("MEMD_{}_{}", section.to_uppercase(), key.to_uppercase());
                let mut raw = env(&var);
                if raw.is_none() && section == "embedder" && key == "model_dir" {
                    raw = env("MEMD_MODEL_DIR");
                }
                let Some(raw) = raw else { continue };
                let value = typed_like(default, &raw)
                    .with_context(|| format!("environment variable {var}={raw:?}"))?;
                table
                    .get_mut(section)
                    .and_then(|s| s.as_table_mut())
                    .expect("section present")
                    .insert(key.clone(), value);
            }
        }
        let config: Config = toml::Value::Table(table)
            .try_into()
            .map_err(|e| err!("after environment overrides: {e}"))?;
        store::check_uri(&config.index.uri)?;
        Ok(config)
    }

    /// The configuration in force, as TOML (for `memd status`).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("config serialises")
    }
}

/// Parse an environment string as a value of the same TOML type as `default`.
fn typed_like(default: &toml::Value, raw: &str) -> Result<toml::Value> {
    Ok(match default {
        toml::Value::String(_) => toml::Value::String(raw.to_string()),
        toml::Value::Integer(_) => toml::Value::Integer(
            raw.trim()
                .parse()
                .map_err(|_| err!("expected a whole number"))?,
        ),
        toml::Value::Float(_) => {
            toml::Value::Float(raw.trim().parse().map_err(|_| err!("expected a number"))?)
        }
        toml::Value::Boolean(_) => toml::Value::Boolean(
            raw.trim()
                .parse()
                .map_err(|_| err!("expected true or false"))?,
        ),
        toml::Value::Array(_) => toml::Value::Array(
            raw.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(|s| toml::Value::String(s.to_string()))
                .collect(),
        ),
        other => bail!(
            "cannot override a {} from the environment",
            other.type_str()
        ),
    })
}
