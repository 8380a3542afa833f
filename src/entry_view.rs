//! An entry as the API, the page and `memd check` show it: its text and
//! marks with the categories and sessions of the facts it holds (its
//! sources), read from the archive each time, so that they are kept
//! through every consolidation, merge and update without being written
//! anywhere else, and a hand edit of the entry's text keeps them.

use std::collections::{BTreeSet, HashMap};

use serde::{Deserialize, Serialize};

use crate::Layout;
use crate::archive::{self, Fact};
use crate::entries::{Document, Entry, Meta};
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::tombstones::Tombstones;

/// One entry as the API shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryView {
    /// `e-…`: what `forget`, `history` and `GET /v1/entries/{id}` take.
    pub id: EntryId,
    /// The entry's text as the file holds it now.
    pub text: String,
    /// The day of its first fact (`YYYY-MM-DD`).
    pub first_seen: String,
    /// The day it last changed (`YYYY-MM-DD`).
    pub updated: String,
    /// Protected from consolidation's REPLACE and REMOVE.
    pub pinned: bool,
    /// Added word for word after the judge failed; the next run looks again.
    pub unreviewed: bool,
    /// Its text is not what memd last wrote: a person edited it.
    pub edited: bool,
    /// Its own category when one was set (`memd edit --category`), else
    /// the categories of the facts it holds, sorted.
    pub categories: Vec<String>,
    /// The sessions of the facts it holds, sorted.
    pub sessions: Vec<String>,
    /// The archive facts it holds.
    pub sources: Vec<FactId>,
}

impl EntryView {
    /// Whether it is of `category` and `session` (one of its own) and was
    /// updated on day `since` (`YYYY-MM-DD`) or later; `None` asks nothing.
    pub fn is_of(
        &self,
        category: Option<&str>,
        session: Option<&str>,
        since: Option<&str>,
    ) -> bool {
        let has =
            |list: &[String], want: Option<&str>| want.is_none_or(|w| list.iter().any(|x| x == w));
        has(&self.categories, category)
            && has(&self.sessions, session)
            && since.is_none_or(|d| self.updated.as_str() >= d)
    }
}

/// Every live entry of the file, in file order, as the API shows it.
pub fn views(layout: &Layout) -> Result<Vec<EntryView>> {
    let doc = Document::read(&layout.entries_file())?;
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let (facts, _) = archive::read_all(layout)?;
    Ok(views_of(&doc, &tombstones, &facts))
}

/// [`views`] of files already read.
pub fn views_of<'f>(
    doc: &Document,
    tombstones: &Tombstones,
    facts: impl IntoIterator<Item = &'f Fact>,
) -> Vec<EntryView> {
    let by_id: HashMap<&str, &Fact> = facts.into_iter().map(|f| (f.id.as_str(), f)).collect();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for e in doc.entries() {
        let Some(meta) = &e.meta else { continue };
        if tombstones.names_entry(meta.id.as_str()) || !seen.insert(meta.id.clone()) {
            continue;
        }
        out.push(view(e, meta, &by_id));
    }
    out
}

fn view(e: &Entry, meta: &Meta, facts: &HashMap<&str, &Fact>) -> EntryView {
    let mut categories = BTreeSet::new();
    let mut sessions = BTreeSet::new();
    for f in meta.sources.iter().filter_map(|id| facts.get(id.as_str())) {
        categories.extend(f.category.clone());
        sessions.extend(f.session.clone());
    }
    if let Some(own) = &meta.category {
        categories = BTreeSet::from([own.clone()]);
    }
    EntryView {
        id: meta.id.clone(),
        text: e.text.clone(),
        first_seen: meta.first_seen.clone(),
        updated: meta.updated.clone(),
        pinned: meta.pinned,
        unreviewed: meta.unreviewed,
        edited: e.edited_by_hand(),
        categories: categories.into_iter().collect(),
        sessions: sessions.into_iter().collect(),
        sources: meta.sources.clone(),
    }
}
