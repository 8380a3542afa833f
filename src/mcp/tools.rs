//! The MCP tools: each is a request of [`crate::request`] under the name
//! an agent knows it by, its input schema generated from the request type
//! (less the fields the tool fixes), its reply given twice: as text a
//! model reads, and as MCP structured content (the reply's JSON, an object)
//! with an output schema generated from the reply type, for a program.

use std::future::Future;
use std::pin::Pin;

use serde_json::{Map, Value, json};

use crate::consolidate;
use crate::erase::{Erasure, NOT_WRITTEN_AGAIN};
use crate::error::{Context, Result};
use crate::forget::Candidate;
use crate::index::rows::Hit;
use crate::request::{
    self, Add, Consolidate, Core, EditEntry, Entries, EntryView, Erase, Forget, GetEntry, Search,
    Target,
};

type Answer<'a> = Pin<Box<dyn Future<Output = Result<Answered>> + Send + 'a>>;

/// A tool's result: the text a model reads and the same reply as JSON.
pub(super) struct Answered {
    pub text: String,
    /// Fits the tool's output schema: the request's reply, or a list of
    /// them under one field (an MCP result is an object).
    pub structured: Value,
}

impl Answered {
    fn new(text: String, reply: &impl serde::Serialize) -> Result<Answered> {
        let structured = serde_json::to_value(reply).context("the reply as JSON")?;
        Ok(Answered { text, structured })
    }
}

/// One tool.
pub(super) struct Tool {
    pub name: &'static str,
    pub description: &'static str,
    /// The request's JSON Schema, without the fields the tool fixes.
    schema: fn() -> Value,
    /// The JSON Schema of its structured content (an object).
    output: fn() -> Value,
    /// Read the arguments into the request, run it at the target, render
    /// its reply.
    call: for<'a> fn(&'a Target, Map<String, Value>) -> Answer<'a>,
    /// What a client may assume of the tool (MCP tool annotations).
    hints: Hints,
}

/// MCP's tool annotations. Every tool works on the local memory alone
/// (`openWorldHint` false).
#[derive(Clone, Copy)]
struct Hints {
    /// Changes nothing the user keeps (a search's recall log aside).
    read_only: bool,
    /// May take away or rewrite what the memory holds.
    destructive: bool,
    /// Calling it again with the same arguments changes nothing more.
    idempotent: bool,
}

impl Hints {
    fn json(self, name: &str) -> Value {
        json!({
            "title": name.replace('_', " "),
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": false,
        })
    }
}

const READ: Hints = Hints {
    read_only: true,
    destructive: false,
    idempotent: true,
};

/// Every tool, in the order `tools/list` gives them.
pub(super) const TOOLS: &[Tool] = &[
    Tool {
        name: "remember",
        description: "Store a fact about the user or the work in long-term memory (appended to today's archive). One self-contained sentence per fact. When the fact makes something remembered no longer true (the user moved, changed jobs, changed their mind), pass its id in `supersedes` (any id recall or remember showed: an entry's, a core line's `core:e-…`, or a fact's): memd then keeps the old text as history instead of two facts that disagree. The reply lists similar entries with their ids.",
        schema: || schema::<Add>(&["similar"]),
        output: object::<request::Added>,
        call: |t, args| Box::pin(remember(t, args)),
        // A retry with the same `key` writes nothing; without one it is a
        // second fact.
        hints: Hints {
            read_only: false,
            destructive: false,
            idempotent: false,
        },
    },
    Tool {
        name: "recall",
        description: "Search long-term memory (facts and consolidated entries) by meaning and keywords. Each hit has its id and the day it was stated; with exclude_core: true, what core_memory already shows is left out.",
        schema: || schema::<Search>(&["wait"]),
        output: || list_of::<Hit>("hits"),
        call: |t, args| Box::pin(recall(t, args)),
        hints: READ,
    },
    Tool {
        name: "forget",
        description: "Forget an entry (e-…) or a pending fact (DAY#HASH) for good; it will not come back.",
        schema: || schema::<Forget>(&[]),
        output: object::<Candidate>,
        call: |t, args| Box::pin(forget(t, args)),
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    },
    Tool {
        name: "erase",
        description: "Erase an entry (e-…) or a pending fact (DAY#HASH): forgotten for good and its text taken out of every file memd keeps (the archive, history, index). Only when the user asks that something be deleted for good (a secret, personal data); it cannot be undone.",
        schema: || schema::<Erase>(&[]),
        output: object::<Erasure>,
        call: |t, args| Box::pin(erase(t, args)),
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    },
    Tool {
        name: "core_memory",
        description: "The always-relevant memory (MEMORY.md) to keep in mind for this conversation: the person's notes, then one line per entry with the day it was last stated and its id in brackets (for forget and supersedes).",
        schema: || schema::<Core>(&["compact"]),
        output: core_schema,
        call: |t, args| Box::pin(core_memory(t, args)),
        hints: READ,
    },
    Tool {
        name: "list_entries",
        description: "List the consolidated memory's entries (id, dates, text), optionally only those of a category or session, updated since a day, or marked unreviewed or edited by a person.",
        schema: || schema::<Entries>(&[]),
        output: || list_of::<EntryView>("entries"),
        call: |t, args| Box::pin(list_entries(t, args)),
        hints: READ,
    },
    Tool {
        name: "get_entry",
        description: "One consolidated entry by id (e-…, or core:e-… as recall shows a MEMORY.md line): its text, dates, categories and the facts it holds.",
        schema: || schema::<GetEntry>(&[]),
        output: object::<EntryView>,
        call: |t, args| Box::pin(get_entry(t, args)),
        hints: READ,
    },
    Tool {
        name: "edit_entry",
        description: "Correct one consolidated entry by id: its text, its pin (pinned entries are never replaced or merged away) or its category. The old text stays in its history, and the edit can be undone as a run.",
        schema: || schema::<EditEntry>(&[]),
        output: object::<request::Edited>,
        call: |t, args| Box::pin(edit_entry(t, args)),
        // It rewrites an entry (journaled, undoable); the same edit again
        // changes nothing.
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: true,
        },
    },
    Tool {
        name: "review_items",
        description: "The consolidation ops waiting for the user's review (memd.toml `[consolidation] review = \"manual\"`): each proposal's id (p-…), the op in words, and whether it is open, accepted or gone. Show them to the user and ask before deciding.",
        schema: || schema::<request::ReviewItems>(&[]),
        output: object::<request::ReviewList>,
        call: |t, args| Box::pin(review_items(t, args)),
        hints: READ,
    },
    Tool {
        name: "review",
        description: "Carry out the user's decision on proposed consolidation ops: action accept or reject with ids (p-…) or all, and apply: true to carry it out now; or action apply to carry out what consolidated/REVIEW.md says. A rejected op's facts are kept word for word. Only on the user's word.",
        schema: || schema::<request::Review>(&[]),
        output: object::<request::Reviewed>,
        call: |t, args| Box::pin(review(t, args)),
        // It applies ops a person accepted (journaled, undoable as a run).
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
    },
    Tool {
        name: "consolidate",
        description: "Fold recently remembered facts into the consolidated memory. Without force it runs only when enough time and facts have gathered since the last run, and its report's skipped says why it did not; force: true runs it now.",
        schema: || schema::<Consolidate>(&[]),
        output: object::<consolidate::Report>,
        call: |t, args| Box::pin(consolidate(t, args)),
        // It merges and replaces entries (history and sources kept).
        hints: Hints {
            read_only: false,
            destructive: true,
            idempotent: false,
        },
    },
];

impl Tool {
    /// The tool as `tools/list` gives it; with `memory`, its schema also
    /// takes the memory to use.
    pub(super) fn listed(&self, memory: Option<&Value>) -> Value {
        let mut schema = (self.schema)();
        if let Some(m) = memory {
            schema["properties"]["memory"] = m.clone();
        }
        json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": schema,
            "outputSchema": (self.output)(),
            "annotations": self.hints.json(self.name),
        })
    }

    pub(super) async fn call(&self, target: &Target, args: Map<String, Value>) -> Result<Answered> {
        (self.call)(target, args).await
    }
}

/// `R`'s schema without the `fixed` fields.
fn schema<R: request::Request>(fixed: &[&str]) -> Value {
    let mut s = request::schema_of::<R>();
    if let Some(p) = s.get_mut("properties").and_then(|v| v.as_object_mut()) {
        for f in fixed {
            p.remove(*f);
        }
    }
    if let Some(o) = s.as_object_mut() {
        o.remove("title");
        o.remove("description");
    }
    s
}

/// `T`'s schema as an output schema (an object's).
fn object<T: schemars::JsonSchema>() -> Value {
    let mut s = request::schema_of::<T>();
    if let Some(o) = s.as_object_mut() {
        o.remove("title");
    }
    s
}

/// The schema of an object with one field, `field`, a list of `T`.
fn list_of<T: schemars::JsonSchema>(field: &str) -> Value {
    let list = object::<Vec<T>>();
    json!({"type": "object", "properties": {field: list}, "required": [field]})
}

/// `core_memory`'s structured content: the compact text.
fn core_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"text": {"type": "string", "description": "MEMORY.md compact: the person's notes, then one dated line per entry with its id"}},
        "required": ["text"]
    })
}

/// The arguments as request `R`, checked by type.
fn read<R: request::Request>(args: Map<String, Value>) -> Result<R> {
    serde_json::from_value(Value::Object(args)).context("invalid arguments")
}

async fn remember(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let mut req: Add = read(args)?;
    req.similar = true;
    let req_declared = req.supersedes.clone();
    let added = target.run(req).await?;
    let mut out = String::new();
    for f in &added.facts {
        if !out.is_empty() {
            out.push('\n');
        }
        if f.fact.erased {
            out.push_str(&format!(
                "not remembered as {}: {}",
                f.fact.id, NOT_WRITTEN_AGAIN
            ));
            continue;
        }
        out.push_str(&format!("remembered as {}", f.fact.id));
        for s in f.similar.iter().flatten() {
            let how = match s.same {
                true => "same as entry",
                false => "similar entry",
            };
            let text = s.hit.text.replace('\n', " ");
            out.push_str(&format!("\n{how} {}: {text}", s.hit.id));
        }
        if f.similar.iter().flatten().any(|s| !s.same) && req_declared.is_empty() {
            out.push_str("\nif this fact replaces one of these, remember it again with supersedes: [its id] (the same text is not written twice)");
        }
    }
    Answered::new(out, &added)
}

async fn recall(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let req: Search = read(args)?;
    let hits = target.run(req).await?.hits();
    let structured = json!({ "hits": hits });
    if hits.is_empty() {
        return Ok(Answered {
            text: "nothing found".into(),
            structured,
        });
    }
    let lines: Vec<String> = hits
        .iter()
        .map(|h| {
            let day = h
                .day
                .as_deref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            format!("- [{}] {}{day}", h.id, h.text.replace('\n', " "))
        })
        .collect();
    Ok(Answered {
        text: lines.join("\n"),
        structured,
    })
}

async fn forget(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let gone = target.run(read::<Forget>(args)?).await?;
    let text = format!("forgot {} {}: {}", gone.kind, gone.id, gone.text);
    Answered::new(text, &gone)
}

async fn erase(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let gone = target.run(read::<Erase>(args)?).await?;
    let text = format!(
        "erased {}: its text is out of every file (entries: {}, facts: {})",
        gone.id,
        gone.entries.len(),
        gone.facts.len()
    );
    Answered::new(text, &gone)
}

/// MEMORY.md compact ([`crate::core_md::CoreMd::compact`]): the person's
/// notes and one dated line per entry with its id, no markup. The
/// `MEMORY.md` resource gives the file as it is.
async fn core_memory(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let mut req = read::<Core>(args)?;
    req.compact = true;
    let text = target.run(req).await?.text(&target.memory.layout)?;
    let structured = json!({ "text": text });
    Ok(Answered { text, structured })
}

async fn list_entries(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let all = target.run(read::<Entries>(args)?).await?;
    let text = match all.is_empty() {
        true => "no entries".into(),
        false => all.iter().map(entry_line).collect::<Vec<_>>().join("\n"),
    };
    let structured = json!({ "entries": all });
    Ok(Answered { text, structured })
}

async fn get_entry(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let e = target.run(read::<GetEntry>(args)?).await?;
    let mut out = entry_line(&e);
    for (name, list) in [("categories", &e.categories), ("sessions", &e.sessions)] {
        if !list.is_empty() {
            out.push_str(&format!("\n{name}: {}", list.join(", ")));
        }
    }
    let facts: Vec<&str> = e.sources.iter().map(|f| f.as_str()).collect();
    out.push_str(&format!("\nfacts: {}", facts.join(", ")));
    Answered::new(out, &e)
}

async fn edit_entry(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let edited = target.run(read::<EditEntry>(args)?).await?;
    let what = match &edited.run {
        Some(run) => format!("edited (run {run})"),
        None => "already as asked, nothing changed".into(),
    };
    let text = format!("{what}\n{}", entry_line(&edited.entry));
    Answered::new(text, &edited)
}

/// An entry as one line: `- [id] text (updated DAY; marks)`.
fn entry_line(e: &EntryView) -> String {
    let mut marks = vec![format!("updated {}", e.updated)];
    for (on, name) in [
        (e.pinned, "pinned"),
        (e.unreviewed, "unreviewed"),
        (e.edited, "edited by hand"),
    ] {
        if on {
            marks.push(name.to_string());
        }
    }
    format!(
        "- [{}] {} ({})",
        e.id,
        e.text.replace('\n', " "),
        marks.join("; ")
    )
}

async fn review_items(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let items = target.run(read::<request::ReviewItems>(args)?).await?;
    let mut text: Vec<String> = items
        .open
        .iter()
        .map(|o| format!("{} [{}] {}", o.item, o.state, o.says.replace('\n', " ")))
        .collect();
    if text.is_empty() {
        text.push("nothing to review".into());
    }
    for u in &items.unreadable {
        text.push(format!(
            "REVIEW.md line {} is not an item memd can read",
            u.line
        ));
    }
    Answered::new(text.join("\n"), &items)
}

async fn review(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let done = target.run(read::<request::Review>(args)?).await?;
    let mut text = format!("REVIEW.md changed for {} proposals", done.changed.len());
    if let Some(c) = &done.carried {
        text.push_str(&format!("; {}", c.summary("\n")));
    }
    Answered::new(text, &done)
}

async fn consolidate(target: &Target, args: Map<String, Value>) -> Result<Answered> {
    let report = target.run(read::<Consolidate>(args)?).await?;
    Answered::new(run_summary(&report), &report)
}

/// The `consolidate` tool's answer: what the run did, for a model to read.
fn run_summary(r: &consolidate::Report) -> String {
    if let Some(why) = &r.skipped {
        return format!("not run: {why} (call with force: true to run anyway)");
    }
    let a = &r.applied;
    let mut out = match r.dry_run {
        true => format!(
            "dry run {} (nothing written): {} pending facts -> would add {}, replace {}, merge away {}, restate {}",
            r.run_id, r.pending_facts, a.add, a.replace, a.remove, a.keep
        ),
        false => format!(
            "run {}: {} pending facts -> {} added, {} replaced, {} merged away, {} restated; MEMORY.md has {} lines",
            r.run_id, r.pending_facts, a.add, a.replace, a.remove, a.keep, r.promoted_lines
        ),
    };
    let held = r.skipped_hand_edited + r.failed_clusters;
    if held > 0 {
        out.push_str(&format!(
            "; {held} ops or clusters held back, their facts stay pending"
        ));
    }
    if !r.failed_facts.is_empty() {
        let facts: Vec<&str> = r.failed_facts.iter().map(|f| f.as_str()).collect();
        out.push_str(&format!(
            "\nthe judge gave no usable reply for these facts (pending, tried again next run): {}",
            facts.join(", ")
        ));
    }
    for w in &r.warnings {
        out.push_str(&format!("\nwarning: {w}"));
    }
    out
}
