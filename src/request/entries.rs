//! [`Entries`] and [`GetEntry`]: the entries of `consolidated/memory.md`
//! as a resource, read by id or listed by category, session, date and
//! mark.
//!
//! An entry's categories and sessions are those of the facts it holds
//! (its sources), read from the archive each time: so they are kept
//! through every consolidation, merge and update without being written
//! anywhere else, and a hand edit of the entry's text keeps them.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target, blocking};
use crate::edit::{self, Change};
pub use crate::entry_view::EntryView;
use crate::entry_view::views;
use crate::error::{Error, Result};
use crate::ids::{ItemId, RunId};

/// The live entries (not forgotten, not an unsaved hand-written block),
/// in file order, that pass every filter given.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Entries {
    /// Only entries holding a fact of this category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub category: Option<String>,
    /// Only entries holding a fact of this session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub session: Option<String>,
    /// Only entries updated on this day (`YYYY-MM-DD`) or later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub since: Option<String>,
    /// Only entries added word for word after a failed judge (`true`), or
    /// only the others (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub unreviewed: Option<bool>,
    /// Only entries a person edited (`true`), or only the others (`false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub edited: Option<bool>,
}

impl Request for Entries {
    type Reply = Vec<EntryView>;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/entries",
        summary: "The live entries of consolidated/memory.md, filtered by category, session, date and mark",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Vec<EntryView>> {
        if let Some(day) = &self.since {
            valid_day(day)?;
        }
        let layout = target.memory.layout.clone();
        blocking(move || {
            let all = views(&layout)?;
            Ok(all.into_iter().filter(|v| self.keeps(v)).collect())
        })
        .await
    }
}

impl Entries {
    pub(super) fn keeps(&self, v: &EntryView) -> bool {
        let mark = |is: bool, want: Option<bool>| want.is_none_or(|w| w == is);
        let (category, session) = (self.category.as_deref(), self.session.as_deref());
        v.is_of(category, session, self.since.as_deref())
            && mark(v.unreviewed, self.unreviewed)
            && mark(v.edited, self.edited)
    }
}

/// One live entry by id (`e-…`, or `core:e-…` as a MEMORY.md hit names it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GetEntry {
    #[schemars(with = "String")]
    pub id: ItemId,
}

impl Request for GetEntry {
    type Reply = EntryView;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/entries/{id}",
        summary: "One live entry by id",
    };

    fn needs_index(&self) -> bool {
        false
    }

    /// An entry that is not in the file, or is forgotten, is not found.
    async fn apply(self, target: &Target) -> Result<EntryView> {
        let layout = target.memory.layout.clone();
        blocking(move || {
            let id = self.id.as_str();
            views(&layout)?
                .into_iter()
                .find(|v| v.id.as_str() == id)
                .ok_or_else(|| Error::NotFound { id: id.to_string() })
        })
        .await
    }
}

/// Change one live entry's text, pin or category (see [`crate::edit`]):
/// journaled as a run of its own, which `memd undo` takes back. Fields
/// left out stay as they are.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct EditEntry {
    /// The entry: `e-…`, or `core:e-…` as search shows a MEMORY.md line.
    #[schemars(with = "String")]
    pub id: ItemId,
    /// Its new text (one block: blank lines are taken out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub text: Option<String>,
    /// Protect it from consolidation's REPLACE and REMOVE, or stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub pinned: Option<bool>,
    /// Its own category, in place of its facts' (empty, "", clears it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub category: Option<String>,
}

/// An entry after an edit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Edited {
    /// The run the edit is journaled under (`memd undo RUN` takes it
    /// back); absent when the entry already was as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunId>,
    pub entry: EntryView,
}

impl Request for EditEntry {
    type Reply = Edited;

    const ROUTE: Route = Route {
        method: Method::Patch,
        path: "/entries/{id}",
        summary: "Change one live entry's text, pin or category (journaled; undone with its run)",
    };

    fn needs_index(&self) -> bool {
        false
    }

    async fn apply(self, target: &Target) -> Result<Edited> {
        let memory = target.memory.clone();
        let layout = memory.layout.clone();
        let change = Change {
            text: self.text,
            pinned: self.pinned,
            category: self.category,
        };
        // A fact is no entry to edit: named as given, it is not found.
        let ItemId::Entry(id) = self.id else {
            let id = self.id.to_string();
            return Err(Error::NotFound { id });
        };
        let (run, entry) = blocking(move || {
            let run = edit::edit(&memory, &id, &change)?;
            let entry = views(&layout)?.into_iter().find(|v| v.id == id);
            let id = id.to_string();
            Ok((run, entry.ok_or(Error::NotFound { id })?))
        })
        .await?;
        target.settle().await;
        Ok(Edited { run, entry })
    }
}

/// `day` read as a day (`YYYY-MM-DD`), or an error naming `since`.
pub(super) fn valid_day(day: &str) -> Result<chrono::NaiveDate> {
    match chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d") {
        Ok(d) => Ok(d),
        Err(_) => Err(Error::Invalid(format!(
            "since must be a day, YYYY-MM-DD (got {day:?})"
        ))),
    }
}
