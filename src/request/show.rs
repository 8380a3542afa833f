//! [`Show`]: the entries file and MEMORY.md's generated lines, now or as
//! they were at a past time ([`crate::versions`]).

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::entries::Document;
use crate::error::{Error, Result};
use crate::ids::EntryId;
use crate::tombstones::Tombstones;
use crate::versions::{self, Then};

/// `consolidated/memory.md` and MEMORY.md's generated lines as of a time
/// (default: now), rebuilt byte for byte from their versions; where memd
/// cannot know (a hand edit it never saw, an erased text), it says so.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Show {
    /// The time: RFC 3339, a local time (`2026-11-24T14:03`) or a day
    /// (`2026-11-24`: its end). Default: now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub as_of: Option<String>,
}

/// Both files as of [`Shown::as_of`].
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shown {
    /// The time asked, as RFC 3339.
    pub as_of: String,
    /// `consolidated/memory.md`, whole.
    pub memory: Then,
    /// MEMORY.md's generated lines (between its markers).
    pub core: Then,
    /// Entries `memory` holds that were forgotten since: shown as the file
    /// was (as `history` shows them); search and MEMORY.md leave them out.
    /// `memd forget --erase` takes a text out of every version.
    pub forgotten_since: Vec<EntryId>,
}

impl Request for Show {
    type Reply = Shown;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/show",
        summary: "The entries file and MEMORY.md's generated lines, now or as of a past time",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Shown> {
        let at = match &self.as_of {
            Some(t) => versions::parse_time(t)?,
            None => target.memory.clock.now(),
        };
        let layout = target.memory.layout.clone();
        let (memory, core, forgotten_since) = blocking(move || {
            let (memory, core) = versions::as_of(&layout, at)?;
            let stones = Tombstones::load(&layout.tombstones_file())?;
            let doc = Document::parse(memory.text().unwrap_or_default());
            let forgotten = doc
                .entries()
                .filter_map(|e| e.id())
                .filter(|id| stones.names_entry(id.as_str()))
                .cloned()
                .collect();
            Ok::<_, Error>((memory, core, forgotten))
        })
        .await?;
        Ok(Shown {
            as_of: versions::stamp(&at),
            memory,
            core,
            forgotten_since,
        })
    }
}
