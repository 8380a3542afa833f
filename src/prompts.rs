//! The prompts memd sends to an LLM: `decide.md` (a cluster's facts, one
//! decision each: `request = "per-fact"`, the default), `consolidate.md`
//! (a cluster's ops: `request = "ops"`),
//! `update.md` (the second look at an ADD: does it update an entry?) and
//! `promote.md`.
//!
//! The texts live in the repository's `prompts/` folder and are built into
//! the binary, so memd works wherever it is installed. A file of the same
//! name in the memory directory's `prompts/` folder replaces the built-in
//! one, read at every run, so a prompt can be tuned without a rebuild.
//! Placeholders are `{{name}}`.

use crate::error::{Context, Result};
use crate::{Layout, atomic};

pub(crate) const CONSOLIDATE: &str = "consolidate.md";
pub(crate) const DECIDE: &str = "decide.md";
pub(crate) const UPDATE: &str = "update.md";
pub(crate) const PROMOTE: &str = "promote.md";

fn built_in(name: &str) -> Option<&'static str> {
    match name {
        CONSOLIDATE => Some(include_str!("../prompts/consolidate.md")),
        DECIDE => Some(include_str!("../prompts/decide.md")),
        UPDATE => Some(include_str!("../prompts/update.md")),
        PROMOTE => Some(include_str!("../prompts/promote.md")),
        _ => None,
    }
}

/// The template `name`: the memory directory's copy if it has one, else the
/// built-in one.
pub fn load(layout: &Layout, name: &str) -> Result<String> {
    let path = layout.prompt_file(name);
    let read = atomic::read_if_exists(&path);
    match read.with_context(|| format!("reading {}", path.display()))? {
        Some(b) => String::from_utf8(b).with_context(|| format!("{}: not UTF-8", path.display())),
        None => built_in(name)
            .map(String::from)
            .with_context(|| format!("no built-in prompt {name}")),
    }
}

/// `template` with each `{{key}}` replaced by its value. Values are inserted
/// once, left to right, so a value that itself contains `{{…}}` (a fact can
/// say anything) is never expanded.
pub fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let key = after[..end].trim();
                match vars.iter().find(|(k, _)| *k == key) {
                    Some((_, v)) => out.push_str(v),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}
