//! `memd mcp`: a Model Context Protocol server over stdio, so an agent
//! (Claude Desktop, Cursor, any MCP client) can use memd as tools.
//!
//! The protocol part is small enough to keep here rather than take a
//! framework: newline-delimited JSON-RPC 2.0 on stdin/stdout, the methods
//! `initialize`, `ping`, `tools/list`, `tools/call`, `resources/list` and
//! `resources/read`, notifications ignored. Logs go to stderr, never
//! stdout. The tools call [`crate::service`], so they go through the
//! daemon when one runs; without one, the server opens the index once and
//! holds it for its life ([`Held`]), syncing it before each use as a CLI
//! command would.
//!
//! Why not the official Rust SDK (`rmcp`): it builds from crates.io, but
//! its stdio transport drops a line that is not JSON without an answer and
//! reads lines of any length, where memd answers every unreadable line
//! with JSON-RPC's parse error (-32700) and must bound what one line can
//! cost; those are the properties the front end has to guarantee, and
//! this loop is where they are kept.
//!
//! Tools: `remember` {text, category?, session?}, `recall` {query, k?},
//! `forget` {id}, `core_memory` {}, `consolidate` {force?}. Started as
//! `memd --dir ROOT mcp --memory NAME` ([`Scope::many`]), it serves the
//! memories under ROOT (the layout of `memd serve --root`): each tool also
//! takes `memory`, NAME by default, and `remember` makes a memory that
//! does not exist yet. Resource:
//! `memd://MEMORY.md`, the always-in-prompt memory (the same text as
//! `core_memory`), for clients that attach resources to the prompt.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::archive;
use crate::config::Config;
use crate::error::{Context, Result, bail};
use crate::index::Index;
use crate::service::Backend;
use crate::{Layout, consolidate};

/// The protocol version answered when the client asks for none we know.
const PROTOCOL_VERSION: &str = "2025-06-18";
const KNOWN_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18"];

/// The one resource: MEMORY.md.
const CORE_URI: &str = "memd://MEMORY.md";

/// JSON-RPC's code for a request that failed inside the server.
const INTERNAL_ERROR: i64 = -32603;

/// MCP's error code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// The tools; with `many`, each takes an optional `memory` argument.
fn tools(many: bool) -> Value {
    let mut tools = json!([
        {
            "name": "remember",
            "description": "Store a fact about the user or the work in long-term memory (appended to today's archive). One self-contained sentence per fact.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "The fact, one line"},
                    "category": {"type": "string", "description": "Optional category, e.g. preference"},
                    "session": {"type": "string", "description": "Optional session id"}
                },
                "required": ["text"],
                "additionalProperties": false
            }
        },
        {
            "name": "recall",
            "description": "Search long-term memory (facts and consolidated entries) by meaning and keywords.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "k": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many results (default 8)"}
                },
                "required": ["query"],
                "additionalProperties": false
            }
        },
        {
            "name": "forget",
            "description": "Forget an entry (e-…) or a pending fact (DAY#HASH) for good; it will not come back.",
            "inputSchema": {
                "type": "object",
                "properties": {"id": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": false
            }
        },
        {
            "name": "core_memory",
            "description": "The always-relevant memory (MEMORY.md) to keep in mind for this conversation.",
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": false}
        },
        {
            "name": "consolidate",
            "description": "Fold recently remembered facts into the consolidated memory now.",
            "inputSchema": {
                "type": "object",
                "properties": {"force": {"type": "boolean", "description": "Skip the time and volume gate"}},
                "additionalProperties": false
            }
        }
    ]);
    if many {
        let memory = json!({"type": "string", "description": "Which memory (a name under the server's root; default: the one it was started with)"});
        for t in tools.as_array_mut().into_iter().flatten() {
            t["inputSchema"]["properties"]["memory"] = memory.clone();
        }
    }
    tools
}

fn str_arg<'a>(args: &'a Value, name: &str) -> Result<&'a str> {
    args.get(name)
        .and_then(Value::as_str)
        .with_context(|| format!("argument {name:?} (a string) is required"))
}

fn opt_str(args: &Value, name: &str) -> Option<String> {
    args.get(name).and_then(Value::as_str).map(String::from)
}

/// The index `memd mcp` holds for its whole life when no daemon runs,
/// opened by the first tool that needs it: an MCP server is a long-running
/// process, and opening the table and loading the model on every call cost
/// most of a recall.
pub(crate) type Held = tokio::sync::OnceCell<Arc<Index>>;

/// One memory directory a server answers for.
pub struct Target {
    layout: Layout,
    config: Config,
    held: Held,
}

impl Target {
    fn new(layout: Layout, config: Config) -> Arc<Target> {
        Arc::new(Target {
            layout,
            config,
            held: Held::new(),
        })
    }

    /// Where a tool call goes: the daemon when one runs, else this process
    /// with its held index.
    async fn backend(&self) -> Result<Backend> {
        let backend = Backend::for_dir(&self.layout);
        if !matches!(backend, Backend::InProcess(_)) {
            return Ok(backend);
        }
        let index = self
            .held
            .get_or_try_init(|| async {
                let index = Index::open(&self.layout, &self.config).await?;
                Ok::<_, crate::Error>(Arc::new(index))
            })
            .await?;
        Ok(Backend::InProcess(Some(index.clone())))
    }
}

/// What a server answers for: one memory directory, or (`memd mcp --memory
/// NAME`) every memory under a root, NAME unless a tool names another.
pub enum Scope {
    One(Arc<Target>),
    Many {
        root: std::path::PathBuf,
        default: String,
        open: std::sync::Mutex<std::collections::HashMap<String, Arc<Target>>>,
    },
}

impl Scope {
    pub fn one(layout: Layout, config: Config) -> Scope {
        Scope::One(Target::new(layout, config))
    }

    /// The memories under `root`, `default` unless a tool names another.
    pub fn many(root: &std::path::Path, default: &str) -> Result<Scope> {
        crate::memories::check_name(default)?;
        Ok(Scope::Many {
            root: root.to_path_buf(),
            default: default.to_string(),
            open: Default::default(),
        })
    }

    /// The memory a call's `memory` argument names (or the default);
    /// made on a write (`create`) if it does not exist.
    fn pick(&self, args: &Value, create: bool) -> Result<Arc<Target>> {
        let asked = args.get("memory").and_then(Value::as_str);
        let (root, default, open) = match self {
            Scope::One(t) if asked.is_none() => return Ok(t.clone()),
            Scope::One(_) => bail!(
                "this server serves one memory directory: start it with `memd --dir ROOT mcp --memory NAME` to choose among the memories under ROOT"
            ),
            Scope::Many {
                root,
                default,
                open,
            } => (root, default, open),
        };
        let name = asked.unwrap_or(default);
        if let Some(t) = open.lock().expect("not poisoned").get(name) {
            return Ok(t.clone());
        }
        let layout = crate::memories::layout_of(root, name, create)?;
        let config = Config::load(&layout.root)?;
        let t = Target::new(layout, config);
        open.lock()
            .expect("not poisoned")
            .insert(name.to_string(), t.clone());
        Ok(t)
    }
}

/// Run one tool; its text result.
async fn call_tool(scope: &Scope, name: &str, args: &Value) -> Result<String> {
    let target = scope.pick(args, name == "remember")?;
    let (layout, config) = (&target.layout, &target.config);
    if name == "core_memory" {
        return core_memory(layout);
    }
    let backend = target.backend().await?;
    match name {
        "remember" => {
            let facts = archive::new_facts(
                vec![str_arg(args, "text")?.to_string()],
                opt_str(args, "category"),
                opt_str(args, "session"),
                None,
                false,
            );
            let added = backend.add(layout, config, &facts, true).await?;
            let mut out = format!("remembered as {}", added[0].fact.id);
            for s in &added[0].similar {
                let how = if s.same {
                    "same as entry"
                } else {
                    "similar entry"
                };
                out.push_str(&format!(
                    "\n{how} {}: {}",
                    s.hit.id,
                    s.hit.text.replace('\n', " ")
                ));
            }
            Ok(out)
        }
        "recall" => {
            let q = str_arg(args, "query")?;
            let k = args
                .get("k")
                .and_then(Value::as_u64)
                .unwrap_or(config.search.default_k as u64)
                .clamp(1, 50) as usize;
            let hits = backend.search(layout, config, q, k).await?;
            if hits.is_empty() {
                return Ok("nothing found".into());
            }
            Ok(hits
                .iter()
                .map(|h| {
                    let day = h
                        .day
                        .as_deref()
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default();
                    format!("- [{}] {}{day}", h.id, h.text.replace('\n', " "))
                })
                .collect::<Vec<_>>()
                .join("\n"))
        }
        "forget" => {
            let gone = backend.forget(layout, config, str_arg(args, "id")?).await?;
            Ok(format!("forgot {} {}: {}", gone.kind, gone.id, gone.text))
        }
        "consolidate" => {
            let force = args.get("force").and_then(Value::as_bool).unwrap_or(false);
            let r = backend
                .consolidate(
                    layout,
                    config,
                    consolidate::Options {
                        force,
                        dry_run: false,
                    },
                )
                .await?;
            Ok(run_summary(&r))
        }
        other => bail!("unknown tool {other:?}"),
    }
}

/// The `consolidate` tool's answer: what the run did, for a model to read.
fn run_summary(r: &consolidate::Report) -> String {
    if let Some(why) = &r.skipped {
        return format!("not run: {why} (call with force: true to run anyway)");
    }
    let a = &r.applied;
    let mut out = format!(
        "run {}: {} pending facts -> {} added, {} replaced, {} merged away, {} restated; MEMORY.md has {} lines",
        r.run_id, r.pending_facts, a.add, a.replace, a.remove, a.keep, r.promoted_lines
    );
    let held = r.skipped_hand_edited + r.failed_clusters;
    if held > 0 {
        out.push_str(&format!(
            "; {held} ops or clusters held back, their facts stay pending"
        ));
    }
    for w in &r.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    out
}

/// MEMORY.md's text, for the `core_memory` tool and the resource (a
/// missing file is empty). MCP carries text, so a file that is not UTF-8
/// is a clear error, never an empty answer or a lossy one.
fn core_memory(layout: &Layout) -> Result<String> {
    let path = layout.memory_md();
    let read = crate::atomic::read_if_exists(&path);
    let bytes = read.with_context(|| format!("reading {}", path.display()))?;
    let bytes = bytes.unwrap_or_default();
    if let Some((at, line)) = crate::text::first_bad_byte(&bytes) {
        return Err(crate::Error::Corrupt {
            path,
            line: Some(line),
            message: format!("not UTF-8 (byte {at}); MCP carries text only, fix the file by hand"),
        });
    }
    Ok(String::from_utf8(bytes).expect("checked above"))
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// The reply to one JSON-RPC message (`None` for a notification).
pub(crate) async fn handle(scope: &Scope, line: &str) -> Option<Value> {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, -32700, format!("parse error: {e}"))),
    };
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let Some(id) = id else {
        return None; // a notification (initialized, cancelled, …)
    };
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    let result = match method {
        "initialize" => {
            let asked = params["protocolVersion"].as_str().unwrap_or("");
            let version = if KNOWN_VERSIONS.contains(&asked) {
                asked
            } else {
                PROTOCOL_VERSION
            };
            json!({
                "protocolVersion": version,
                "capabilities": {
                    "tools": {"listChanged": false},
                    "resources": {"listChanged": false, "subscribe": false}
                },
                "serverInfo": {"name": "memd", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Long-term memory. Call core_memory at the start of a conversation, recall before answering questions about the user or past work, and remember each new durable fact."
            })
        }
        "ping" => json!({}),
        "tools/list" => json!({ "tools": tools(matches!(scope, Scope::Many { .. })) }),
        "resources/list" => json!({ "resources": [{
            "uri": CORE_URI,
            "name": "MEMORY.md",
            "description": "The always-relevant memory to keep in mind for this conversation.",
            "mimeType": "text/markdown"
        }]}),
        "resources/read" => match params["uri"].as_str() {
            Some(CORE_URI) => {
                let text = match scope
                    .pick(&json!({}), false)
                    .and_then(|t| core_memory(&t.layout))
                {
                    Ok(t) => t,
                    Err(e) => return Some(error(id, INTERNAL_ERROR, e.to_string())),
                };
                json!({ "contents": [{"uri": CORE_URI, "mimeType": "text/markdown", "text": text}] })
            }
            other => {
                let msg = format!("no resource {}", other.unwrap_or("(no uri)"));
                return Some(error(id, RESOURCE_NOT_FOUND, msg));
            }
        },
        "tools/call" => {
            let name = params["name"].as_str().unwrap_or("");
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            // A failing tool is a result the model can read, not a protocol error.
            match call_tool(scope, name, &args).await {
                Ok(text) => json!({"content": [{"type": "text", "text": text}], "isError": false}),
                Err(e) => {
                    json!({"content": [{"type": "text", "text": format!("{e:#}")}], "isError": true})
                }
            }
        }
        "" => return Some(error(id, -32600, "invalid request: no method")),
        other => return Some(error(id, -32601, format!("method not found: {other}"))),
    };
    Some(json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// Serve MCP on stdin/stdout until stdin closes.
pub async fn serve_stdio(scope: Scope) -> Result<()> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut out = tokio::io::stdout();
    let mut buf = Vec::new();
    loop {
        let reply = match read_line(&mut input, &mut buf).await? {
            Line::End => return Ok(()),
            Line::TooLong => Some(error(Value::Null, PARSE_ERROR, too_long())),
            Line::Bytes => match std::str::from_utf8(&buf) {
                Ok(line) if line.trim().is_empty() => None,
                Ok(line) => handle(&scope, line).await,
                Err(e) => Some(error(Value::Null, PARSE_ERROR, format!("parse error: {e}"))),
            },
        };
        if let Some(reply) = reply {
            let mut bytes = serde_json::to_vec(&reply)?;
            bytes.push(b'\n');
            out.write_all(&bytes).await?;
            out.flush().await?;
        }
    }
}

/// JSON-RPC's code for a message that cannot be read.
const PARSE_ERROR: i64 = -32700;

/// The longest message line read; a longer one is skipped and answered
/// with a parse error, so one line cannot cost unbounded memory.
const MAX_LINE: usize = 4 << 20;

fn too_long() -> String {
    format!("parse error: a message longer than {MAX_LINE} bytes is not read")
}

/// What one read of a line gave.
enum Line {
    /// A line (without its newline) is in the buffer.
    Bytes,
    /// A line longer than [`MAX_LINE`], skipped to its end.
    TooLong,
    /// The input is closed.
    End,
}

/// Read one line of raw bytes into `buf`, at most [`MAX_LINE`] of them.
async fn read_line(
    input: &mut BufReader<tokio::io::Stdin>,
    buf: &mut Vec<u8>,
) -> std::io::Result<Line> {
    use tokio::io::AsyncReadExt;
    buf.clear();
    let limit = MAX_LINE as u64 + 1;
    if (&mut *input).take(limit).read_until(b'\n', buf).await? == 0 {
        return Ok(Line::End);
    }
    if buf.ends_with(b"\n") {
        buf.pop();
        return Ok(Line::Bytes);
    }
    if buf.len() <= MAX_LINE {
        return Ok(Line::Bytes); // the last line, without a newline
    }
    // Skip the rest of the long line, a bounded chunk at a time.
    while {
        buf.clear();
        let n = (&mut *input).take(limit).read_until(b'\n', buf).await?;
        n > 0 && !buf.ends_with(b"\n")
    } {}
    Ok(Line::TooLong)
}
