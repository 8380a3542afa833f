//! `memd mcp`: a Model Context Protocol server over stdio, so an agent
//! (Claude Desktop, Cursor, any MCP client) can use memd as tools.
//!
//! The protocol part is small enough to keep here rather than take a
//! framework: newline-delimited JSON-RPC 2.0 on stdin/stdout, the methods
//! `initialize`, `ping`, `tools/list`, `tools/call`, `resources/list` and
//! `resources/read`, notifications ignored. Logs go to stderr, never
//! stdout. The tools ([`tools`]) are requests of [`crate::request`], so
//! they go through the daemon when one runs; without one, the server opens
//! the index once and holds it for its life, syncing it before each use
//! as a CLI command would.
//!
//! Why not the official Rust SDK (`rmcp`): it builds from crates.io, but
//! its stdio transport drops a line that is not JSON without an answer and
//! reads lines of any length, where memd answers every unreadable line
//! with JSON-RPC's parse error (-32700) and must bound what one line can
//! cost; those are the properties the front end has to guarantee, and
//! this loop is where they are kept.
//!
//! Started as `memd --dir ROOT mcp --memory NAME` ([`Scope::many`]), it
//! serves the memories under ROOT (the layout of `memd serve --root`),
//! through the same [`Memories`] a daemon uses: each tool also takes
//! `memory`, NAME by default, and `remember` makes a memory that does not
//! exist yet. Resource: `memd://MEMORY.md`, the core memory (the same text
//! as `core_memory`), for clients that attach resources to the prompt.

mod tools;

use std::sync::Arc;

use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::core_md::CoreMd;
use crate::error::{Kind, Result, bail};
use crate::limits::MAX_BODY;
use crate::remedy::{self, Surface};
use crate::request::{Core, Holder, Lazy, Target};
use crate::server::memories::{self, Memories};
use crate::{Error, Memory};

/// The protocol version answered when the client asks for none we know.
const PROTOCOL_VERSION: &str = "2025-06-18";
const KNOWN_VERSIONS: &[&str] = &["2024-11-05", "2025-03-26", "2025-06-18"];

/// The one resource: MEMORY.md.
const CORE_URI: &str = "memd://MEMORY.md";

/// JSON-RPC's code for a request that failed inside the server.
const INTERNAL_ERROR: i64 = -32603;

/// MCP's error code for a resource that does not exist.
const RESOURCE_NOT_FOUND: i64 = -32002;

/// JSON-RPC's code for parameters that name nothing (a prompt not offered).
const INVALID_PARAMS: i64 = -32602;

/// The one MCP prompt: how to use the memory, with the core memory in it.
const USE_MEMORY: &str = "use_memory";

/// How many memories `memd mcp --memory` keeps open at once.
const MAX_OPEN: usize = 64;

/// What a server answers for: one memory directory, or (`memd mcp --memory
/// NAME`) every memory under a root, NAME unless a tool names another.
pub enum Scope {
    One(Arc<Lazy>),
    Many {
        memories: Box<Memories>,
        default: String,
    },
}

impl Scope {
    pub fn one(memory: Memory) -> Scope {
        Scope::One(Arc::new(Lazy::new(memory)))
    }

    /// The memories under `root`, `default` unless a tool names another.
    pub fn many(root: &std::path::Path, default: &str) -> Result<Scope> {
        memories::check_name(default)?;
        Ok(Scope::Many {
            memories: Box::new(Memories::root(root, MAX_OPEN, None)),
            default: default.to_string(),
        })
    }

    /// Before the server exits: the syncs running in it end and the rows
    /// held back from the table are committed (a `remember` is answered
    /// before its table write, [`crate::index::Writer::sync_shown`]).
    pub(crate) async fn idle(&self) {
        match self {
            Scope::One(o) => o.idle().await,
            Scope::Many { memories, .. } => {
                for o in memories.held() {
                    o.idle().await;
                }
            }
        }
    }

    /// Where a call goes: the memory its `memory` argument names (or the
    /// default), made on a write (`create`) if it does not exist; through
    /// the daemon that serves it, if one does.
    async fn target(&self, asked: Option<&Value>, create: bool) -> Result<Target> {
        let asked = match asked {
            None => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(other) => bail!("argument \"memory\" must be a string, not {other}"),
        };
        match (self, asked) {
            (Scope::One(o), None) => Ok(Target::routed(o.memory().clone(), o.clone())),
            (Scope::One(_), Some(_)) => bail!(
                "this server serves one memory directory and takes no \"memory\" argument; ask the person to start it over a directory of memories (its --memory option) to choose among them"
            ),
            (Scope::Many { memories, default }, asked) => {
                let opened = memories.get(asked.unwrap_or(default), create).await?;
                Ok(Target::routed(opened.memory().clone(), opened))
            }
        }
    }
}

/// Run tool `name` with `args`; its result.
async fn call_tool(scope: &Scope, name: &str, args: &Value) -> Result<tools::Answered> {
    let Some(tool) = tools::TOOLS.iter().find(|t| t.name == name) else {
        bail!("unknown tool {name:?}");
    };
    let mut args: Map<String, Value> = match args {
        Value::Object(o) => o.clone(),
        Value::Null => Map::new(),
        other => bail!("the arguments must be an object, not {other}"),
    };
    let memory = args.remove("memory");
    let target = scope.target(memory.as_ref(), name == "remember").await?;
    tool.call(&target, args).await
}

/// The tools as `tools/list` gives them.
fn tool_list(scope: &Scope) -> Value {
    let memory = match scope {
        Scope::One(_) => None,
        Scope::Many { .. } => Some(
            json!({"type": "string", "description": "Which memory (a name under the server's root; default: the one it was started with)"}),
        ),
    };
    let tools: Vec<Value> = tools::TOOLS
        .iter()
        .map(|t| t.listed(memory.as_ref()))
        .collect();
    Value::Array(tools)
}

/// MEMORY.md's text, for the resource.
async fn core_memory(scope: &Scope) -> Result<String> {
    let target = scope.target(None, false).await?;
    let text = target.run(Core::default()).await?;
    text.text(&target.memory.layout)
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

/// What one connection agreed on: the protocol version `initialize`
/// negotiated (batches are part of 2025-03-26 only).
#[derive(Default)]
pub(crate) struct Session {
    version: std::sync::Mutex<Option<String>>,
}

impl Session {
    fn batches(&self) -> bool {
        self.version.lock().expect("not poisoned").as_deref() == Some(BATCH_VERSION)
    }
}

/// The one protocol version whose JSON-RPC allows batches.
const BATCH_VERSION: &str = "2025-03-26";

/// JSON-RPC's code for a message that is JSON but not a request.
const INVALID_REQUEST: i64 = -32600;

/// The reply to one line: a message, or (2025-03-26) a batch of them.
/// `None` when nothing needs an answer (a notification, a response).
/// Every other line is answered: JSON that is not a request (`[]`, a
/// scalar, an object without a method) gets JSON-RPC's "invalid request",
/// and a batch under a version without batches is refused as one.
pub(crate) async fn handle(scope: &Scope, session: &Session, line: &str) -> Option<Value> {
    let msg: Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => return Some(error(Value::Null, PARSE_ERROR, format!("parse error: {e}"))),
    };
    let Value::Array(batch) = msg else {
        return one(scope, session, msg).await;
    };
    if batch.is_empty() {
        return Some(error(
            Value::Null,
            INVALID_REQUEST,
            "invalid request: an empty batch",
        ));
    }
    if !session.batches() {
        let msg = "invalid request: JSON-RPC batches are not part of the protocol version this session negotiated";
        return Some(error(Value::Null, INVALID_REQUEST, msg));
    }
    let mut replies = Vec::new();
    for msg in batch {
        replies.extend(Box::pin(one(scope, session, msg)).await);
    }
    (!replies.is_empty()).then_some(Value::Array(replies))
}

/// The reply to one message of a line or a batch.
async fn one(scope: &Scope, session: &Session, msg: Value) -> Option<Value> {
    let (id, method, params) = match parse(msg) {
        Ok(Some(call)) => call,
        Ok(None) => return None,
        Err(reply) => return Some(reply),
    };
    match answer(scope, session, &method, params).await {
        Ok(result) => Some(json!({"jsonrpc": "2.0", "id": id, "result": result})),
        Err((code, msg)) => Some(error(id, code, msg)),
    }
}

/// A message as a call to answer: its id, method and params; `None` for a
/// notification or a response (nothing to say); `Err` with the error reply
/// for a message that is not a JSON-RPC 2.0 request.
fn parse(msg: Value) -> std::result::Result<Option<(Value, String, Value)>, Value> {
    let invalid = |id: Option<Value>, why: &str| {
        error(
            id.unwrap_or(Value::Null),
            INVALID_REQUEST,
            format!("invalid request: {why}"),
        )
    };
    let Value::Object(mut msg) = msg else {
        return Err(invalid(None, "not an object"));
    };
    let id = msg.remove("id");
    let method = match msg.remove("method") {
        Some(Value::String(m)) => m,
        // A response to a request of ours (we send none): nothing to say.
        None if msg.contains_key("result") || msg.contains_key("error") => return Ok(None),
        _ => return Err(invalid(id, "no method")),
    };
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "jsonrpc must be \"2.0\""));
    }
    let Some(id) = id else {
        return Ok(None); // a notification (initialized, cancelled, …)
    };
    let params = msg.remove("params").unwrap_or(json!({}));
    Ok(Some((id, method, params)))
}

/// A JSON-RPC error: its code and message.
type Refusal = (i64, String);

/// The result of `method` with `params`.
async fn answer(
    scope: &Scope,
    session: &Session,
    method: &str,
    params: Value,
) -> std::result::Result<Value, Refusal> {
    Ok(match method {
        "initialize" => initialize(session, &params),
        "ping" => json!({}),
        "tools/list" => json!({ "tools": tool_list(scope) }),
        "resources/list" => json!({ "resources": [{
            "uri": CORE_URI,
            "name": "MEMORY.md",
            "description": "The always-relevant memory to keep in mind for this conversation.",
            "mimeType": "text/markdown"
        }]}),
        "resources/read" => read_resource(scope, &params).await?,
        "prompts/list" => json!({ "prompts": [{
            "name": USE_MEMORY,
            "title": "Use memory",
            "description": "How to use this memory in a conversation, with the core memory as it is now.",
            "arguments": []
        }]}),
        "prompts/get" => get_prompt(scope, &params).await?,
        "tools/call" => call(scope, &params).await,
        "" => return Err((INVALID_REQUEST, "invalid request: no method".into())),
        other => return Err((-32601, format!("method not found: {other}"))),
    })
}

/// `initialize`: the version the client asked for if memd speaks it (else
/// memd's own), remembered for the session, and what memd serves.
fn initialize(session: &Session, params: &Value) -> Value {
    let asked = params["protocolVersion"].as_str().unwrap_or("");
    let version = if KNOWN_VERSIONS.contains(&asked) {
        asked
    } else {
        PROTOCOL_VERSION
    };
    *session.version.lock().expect("not poisoned") = Some(version.to_string());
    json!({
        "protocolVersion": version,
        "capabilities": {
            "tools": {"listChanged": false},
            "resources": {"listChanged": false, "subscribe": false},
            "prompts": {"listChanged": false}
        },
        "serverInfo": {"name": "memd", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Long-term memory. Call core_memory at the start of a conversation, recall before answering questions about the user or past work, and remember each new durable fact."
    })
}

/// `resources/read`: MEMORY.md, the one resource.
async fn read_resource(scope: &Scope, params: &Value) -> std::result::Result<Value, Refusal> {
    match params["uri"].as_str() {
        Some(CORE_URI) => {
            let text = core_memory(scope)
                .await
                .map_err(|e| (INTERNAL_ERROR, e.to_string()))?;
            Ok(
                json!({ "contents": [{"uri": CORE_URI, "mimeType": "text/markdown", "text": text}] }),
            )
        }
        other => Err((
            RESOURCE_NOT_FOUND,
            format!("no resource {}", other.unwrap_or("(no uri)")),
        )),
    }
}

/// `prompts/get`: how to use the memory, with MEMORY.md as it is now.
async fn get_prompt(scope: &Scope, params: &Value) -> std::result::Result<Value, Refusal> {
    match params["name"].as_str() {
        Some(USE_MEMORY) => {
            let core = core_memory(scope)
                .await
                .and_then(|t| Ok(CoreMd::parse(t.as_bytes())?.compact()))
                .map_err(|e| (INTERNAL_ERROR, e.to_string()))?;
            let text = include_str!("use_memory.md").replace("{{core}}", core.trim_end());
            Ok(json!({
                "description": "How to use this memory, with the core memory as it is now.",
                "messages": [{"role": "user", "content": {"type": "text", "text": text}}]
            }))
        }
        other => Err((
            INVALID_PARAMS,
            format!("no prompt {}", other.unwrap_or("(no name)")),
        )),
    }
}

/// `tools/call`: a failing tool is a result the model can read, not a
/// protocol error.
async fn call(scope: &Scope, params: &Value) -> Value {
    let name = params["name"].as_str().unwrap_or("");
    let args = params.get("arguments").cloned().unwrap_or(json!({}));
    match call_tool(scope, name, &args).await {
        // Structured content from 2025-06-18 on; the text as well, for
        // clients that read only text.
        Ok(a) => json!({
            "content": [{"type": "text", "text": a.text}],
            "structuredContent": a.structured,
            "isError": false
        }),
        Err(e) => {
            let said = remedy::with(format!("{e:#}"), e.remedy(), Surface::Mcp);
            let text = format!("{said}{}", found_by(&e));
            json!({"content": [{"type": "text", "text": text}], "isError": true})
        }
    }
}

/// Serve MCP on stdin/stdout until stdin closes.
pub async fn serve_stdio(scope: Scope) -> Result<()> {
    let mut input = BufReader::new(tokio::io::stdin());
    let mut out = tokio::io::stdout();
    let mut buf = Vec::new();
    let session = Session::default();
    loop {
        let reply = match read_line(&mut input, &mut buf).await? {
            Line::End => {
                scope.idle().await;
                return Ok(());
            }
            Line::TooLong => Some(error(Value::Null, PARSE_ERROR, too_long())),
            Line::Bytes => match std::str::from_utf8(&buf) {
                Ok(line) if line.trim().is_empty() => None,
                Ok(line) => handle(&scope, &session, line).await,
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
/// with a parse error, so one line cannot cost unbounded memory. The same
/// limit as the API's request bodies ([`crate::limits::MAX_BODY`]).
const MAX_LINE: usize = MAX_BODY;

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

/// How a model finds the id a failed call named, in this surface's words
/// (memd's errors name no surface's commands).
fn found_by(e: &Error) -> &'static str {
    match e.kind() == Kind::NotFound {
        true => " (recall finds entries and facts by their words, with their ids)",
        false => "",
    }
}
