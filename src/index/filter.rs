//! What narrows a search, given as typed values: the index reads the
//! files it needs (the archive, the entries, MEMORY.md) to know which
//! rows may come back, and the search then ranks every row before
//! narrowing, so that a row left out never hides one let through.

use std::collections::HashSet;

use chrono::NaiveDate;

use crate::core_md::{CoreMd, Line};
use crate::entries::Document;
use crate::error::Result;
use crate::ids::RowId;
use crate::tombstones::Tombstones;
use crate::{Layout, archive, entry_view};

/// A search narrowed to the facts of a category, of a session or said
/// from a day on, the entries holding one and their MEMORY.md lines; or
/// with what MEMORY.md holds left out. The default narrows nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub category: Option<String>,
    pub session: Option<String>,
    /// Facts stated on this day or later, entries (and MEMORY.md lines)
    /// updated then or later.
    pub since: Option<NaiveDate>,
    /// Leave out what MEMORY.md already holds (its lines, the entries it
    /// has a line for and their facts), for an agent that keeps MEMORY.md
    /// in its prompt.
    pub exclude_core: bool,
}

/// The rows a [`Filter`] lets come back and those it leaves out.
#[derive(Debug, Default)]
pub(super) struct Rows {
    /// The only rows that may come back, when the filter names a
    /// category, a session or a day.
    pub(super) only: Option<HashSet<String>>,
    /// Rows never to give (and MEMORY.md's lines then).
    pub(super) leave_out: Option<HashSet<String>>,
}

impl Filter {
    /// Whether it narrows to a category, a session or a day.
    pub fn narrows(&self) -> bool {
        self.category.is_some() || self.session.is_some() || self.since.is_some()
    }

    /// The rows of the files in `layout` it lets come back or leaves out.
    pub(super) fn rows(&self, layout: &Layout) -> Result<Rows> {
        Ok(Rows {
            only: match self.narrows() {
                true => Some(self.only(layout)?),
                false => None,
            },
            leave_out: match self.exclude_core {
                true => Some(in_core(layout)?),
                false => None,
            },
        })
    }

    /// The facts of the category, session and day asked, the entries
    /// holding one, and their MEMORY.md lines.
    fn only(&self, layout: &Layout) -> Result<HashSet<String>> {
        let since = self.since.map(|d| d.format("%Y-%m-%d").to_string());
        let same = |want: &Option<String>, is: &Option<String>| want.is_none() || want == is;
        let (facts, _) = archive::read_all(layout)?;
        let doc = Document::read(&layout.entries_file())?;
        let stones = Tombstones::load(&layout.tombstones_file())?;
        let mut out: HashSet<String> = facts
            .iter()
            .filter(|f| same(&self.category, &f.category) && same(&self.session, &f.session))
            .filter(|f| since.as_ref().is_none_or(|d| f.day >= *d))
            .map(|f| f.id.to_string())
            .collect();
        // A line of MEMORY.md shows the day it was last promoted with, which
        // the day asked for holds to as well.
        let lines = CoreMd::read(&layout.memory_md())?.lines();
        let dated =
            |l: &&Line| (since.as_ref()).is_none_or(|d| l.date.as_ref().is_some_and(|ld| ld >= d));
        let (category, session) = (self.category.as_deref(), self.session.as_deref());
        let views = entry_view::views_of(&doc, &stones, &facts);
        for v in views
            .iter()
            .filter(|v| v.is_of(category, session, since.as_deref()))
        {
            let line = lines.iter().find(|l| l.entry_id == v.id);
            if let Some(l) = line.filter(dated) {
                out.insert(RowId::core(&l.entry_id).to_string());
            }
            out.insert(v.id.to_string());
        }
        Ok(out)
    }
}

/// The rows MEMORY.md holds: the entries it has a generated line for,
/// and the facts those entries hold (a fact restating a line says what
/// the prompt already says).
fn in_core(layout: &Layout) -> Result<HashSet<String>> {
    let md = CoreMd::read(&layout.memory_md())?;
    let doc = Document::read(&layout.entries_file())?;
    let mut out = HashSet::new();
    for line in md.lines() {
        if let Some(m) = doc
            .get(line.entry_id.as_str())
            .and_then(|e| e.meta.as_ref())
        {
            out.extend(m.sources.iter().map(|f| f.to_string()));
        }
        out.insert(line.entry_id.to_string());
    }
    Ok(out)
}
