//! [`Core`]: the core memory, `MEMORY.md`, as the agent's prompt.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::core_md::CoreMd;
use crate::error::{Context, Error, Result};
use crate::text::first_bad_byte;
use crate::{Layout, atomic};

/// `MEMORY.md` byte for byte (a missing file is empty), or compact.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Core {
    /// Compact: the person's notes without `memd init`'s boilerplate or
    /// the markers, then one line per entry, `- text · day [id]` (what
    /// MCP's `core_memory` gives, about half the bytes of the file).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[arg(long)]
    pub compact: bool,
}

/// The bytes of `MEMORY.md`. Only a file that is UTF-8 is text: a byte
/// that is not is kept as it is, never dropped or replaced.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreText(pub Vec<u8>);

impl CoreText {
    /// The text, or a clear error naming the line where it is not UTF-8
    /// (for front ends that carry text only, such as MCP).
    pub fn text(self, layout: &Layout) -> Result<String> {
        if let Some((at, line)) = first_bad_byte(&self.0) {
            return Err(Error::Corrupt {
                path: layout.memory_md(),
                line: Some(line),
                message: format!(
                    "not UTF-8 (byte {at}); fix the file by hand (only the file as it is is given byte for byte)"
                ),
            });
        }
        Ok(String::from_utf8(self.0).expect("checked above"))
    }
}

pub(super) const MEDIA: &str = "text/markdown";

impl Request for Core {
    type Reply = CoreText;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/memory",
        summary: "MEMORY.md, the core memory, as the agent's prompt (markdown)",
    };

    const MEDIA: Option<&'static str> = Some(MEDIA);

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<CoreText> {
        let path = target.memory.layout.memory_md();
        let bytes = blocking(move || {
            let read = atomic::read_if_exists(&path);
            read.with_context(|| format!("reading {}", path.display()))
        })
        .await?;
        let bytes = bytes.unwrap_or_default();
        if !self.compact {
            return Ok(CoreText(bytes));
        }
        let text = CoreText(bytes).text(&target.memory.layout)?;
        let compact = CoreMd::parse(text.as_bytes())?.compact();
        Ok(CoreText(compact.into_bytes()))
    }

    fn raw(reply: &CoreText) -> Vec<u8> {
        reply.0.clone()
    }
}
