//! [`Add`]: append facts to today's archive, and (when asked) look up the
//! existing entries most like each one.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::similar::Similar;
use super::target::{Request, Target, blocking};
use crate::archive::{self, Appended};
use crate::entries::Document;
use crate::error::{Error, Result};
use crate::ids::{EntryId, FactId, RowId};
use crate::index::search::SimilarEntry;
use crate::text::normalize;
use crate::tombstones::Tombstones;
use crate::{Layout, steps};

/// Facts to append: `text`, or a batch in `texts`. A file write, durable
/// before the reply; the similar entries are information only, looked up
/// after the write by whoever owns the index.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct Add {
    /// One fact, one line (leave it out for a batch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A batch of facts; with `key`, the N-th fact's key is `KEY#N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub texts: Option<Vec<String>>,
    /// A category for every fact, kept on its archive line (letters,
    /// digits, `-`, `_`): a filter, not a folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, short)]
    pub category: Option<String>,
    /// The agent session the facts come from (kept on their archive
    /// lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, short)]
    pub session: Option<String>,
    /// Idempotency key: a retried append with the same key writes
    /// nothing. In a batch, the N-th fact's key is `KEY#N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub key: Option<String>,
    /// Also look up the existing entries most like each fact (at most 20
    /// facts; never blocks the write).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[arg(
        long = "no-similar",
        action = clap::ArgAction::SetFalse,
        help = "Do not look up similar existing entries after the write"
    )]
    pub similar: bool,
    /// What this fact makes no longer true (the user moved, changed jobs,
    /// changed their mind), by any id memd shows: an entry's (`e-…`), a
    /// MEMORY.md line's (`core:e-…`) or a fact's (`2026-11-29#…`, pending
    /// or already in an entry); one or several. Each must be live in this
    /// memory. The next run replaces the entries with the fact and folds
    /// the pending facts into it, keeping what they said as history ("new
    /// (previously: old)"), whichever judge runs. One fact (`text`), not a
    /// batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[arg(long, value_name = "ID")]
    pub supersedes: Vec<RowId>,
}

/// What an add did.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Added {
    /// Each fact's id, in order.
    pub ids: Vec<FactId>,
    pub facts: Vec<AddedFact>,
}

/// One appended fact, and (when asked) the existing entries most like it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AddedFact {
    #[serde(flatten)]
    pub fact: Appended,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similar: Option<Vec<SimilarEntry>>,
}

/// Past this many facts in one add, no similar entries are looked up (a
/// bulk import is not read fact by fact).
use crate::limits::MAX_FACT_BYTES;

const SIMILAR_MAX_FACTS: usize = super::similar::SIMILAR_MAX_TEXTS;

impl Add {
    /// The texts, and whether they came as a batch.
    fn texts(&self) -> Result<(Vec<String>, bool)> {
        match (&self.text, &self.texts) {
            (Some(t), None) => Ok((vec![t.clone()], false)),
            (None, Some(ts)) if !ts.is_empty() => Ok((ts.clone(), true)),
            _ => Err(Error::Invalid(
                "give either \"text\" or a non-empty \"texts\"".into(),
            )),
        }
        .and_then(|(texts, many)| {
            let bytes: usize = texts.iter().map(String::len).sum();
            match bytes > MAX_FACT_BYTES {
                true => Err(Error::Invalid(format!(
                    "{bytes} bytes of facts in one add; at most {MAX_FACT_BYTES}"
                ))),
                false => Ok((texts, many)),
            }
        })
    }
}

/// What a fact's `supersedes` names, resolved: live entries, and pending
/// facts.
#[derive(Debug, Default, PartialEq)]
struct Superseded {
    entries: Vec<EntryId>,
    facts: Vec<FactId>,
}

/// Resolve the ids `supersedes` names for a fact saying `text`, before
/// any write: a `MEMORY.md` line's id names its entry, a fact already in
/// an entry names that entry, a pending fact names itself. An id nothing
/// live in this memory has (unknown, forgotten, erased, another
/// memory's) is refused as not found; a pending fact that says what the
/// fact says (a fact superseding itself) as invalid. Nothing is written
/// either way. (An entry that already says it is a restatement: the run
/// keeps the fact into it.)
fn resolve(layout: &Layout, ids: &[RowId], text: &str) -> Result<Superseded> {
    let doc = Document::read(&layout.entries_file())?;
    let stones = Tombstones::load(&layout.tombstones_file())?;
    let facts = match ids.iter().any(|id| FactId::looks_like(id.as_str())) {
        true => archive::read_all(layout)?.0,
        false => Vec::new(),
    };
    let gone = |id: &RowId| Error::NoSuch {
        what: format!(
            "live entry or fact {id} in this memory to supersede (it is unknown, forgotten or erased; nothing was written)"
        ),
    };
    let mut out = Superseded::default();
    for id in ids {
        let entry = match id.core_entry() {
            Some(e) => e,
            None if FactId::looks_like(id.as_str()) => {
                let f = facts.iter().find(|f| f.id.as_str() == id.as_str());
                let f = f.filter(|f| !stones.covers(f.id.as_str(), &f.text));
                let f = f.ok_or_else(|| gone(id))?;
                match doc.holder(&f.id) {
                    Some(e) => e.clone(),
                    None => {
                        refuse_self(id, &f.text, text)?;
                        push_new(&mut out.facts, f.id.clone());
                        continue;
                    }
                }
            }
            None => EntryId::stored(id),
        };
        let e = doc
            .get(entry.as_str())
            .filter(|_| !stones.names_entry(entry.as_str()));
        e.ok_or_else(|| gone(id))?;
        push_new(&mut out.entries, entry);
    }
    Ok(out)
}

fn push_new<T: PartialEq>(list: &mut Vec<T>, item: T) {
    if !list.contains(&item) {
        list.push(item);
    }
}

/// A fact cannot supersede a pending fact that says what it says: that is
/// the fact itself, stated again (the run would keep it as its own
/// history).
fn refuse_self(id: &RowId, target: &str, text: &str) -> Result<()> {
    match normalize(target) == normalize(text) {
        true => Err(Error::Invalid(format!(
            "supersedes {id}: it says what this fact says, and a fact cannot supersede itself (nothing was written)"
        ))),
        false => Ok(()),
    }
}

impl Request for Add {
    type Reply = Added;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/facts",
        summary: "Append facts to today's archive (`text` or `texts`)",
    };

    const NEEDS: &'static [&'static [&'static str]] = &[&["text", "texts"]];

    fn needs_index(&self) -> bool {
        false
    }

    fn creates(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Added> {
        let (texts, many) = self.texts()?;
        let mut facts = archive::new_facts(texts, self.category, self.session, self.key, many);
        let layout = target.memory.layout.clone();
        if !self.supersedes.is_empty() {
            if many {
                return Err(Error::Invalid(
                    "supersedes goes with one fact (text), not a batch".into(),
                ));
            }
            let (l, ids, text) = (layout.clone(), self.supersedes, facts[0].text.clone());
            let found = blocking(move || resolve(&l, &ids, &text)).await?;
            facts[0].supersedes = found.entries;
            facts[0].supersedes_facts = found.facts;
        }
        let now = target.memory.clock.now();
        let appended = blocking(move || archive::append_unless_erased(&layout, now, &facts));
        let appended = steps::timed("append", appended).await?;
        // The similar entries' lookup syncs the index first; without it,
        // the index starts catching up now.
        let similar = match self.similar {
            true => Some(similar(target, &appended).await),
            false => {
                target.index_soon();
                None
            }
        };
        let ids = appended.iter().map(|a| a.id.clone()).collect();
        let facts = appended
            .into_iter()
            .enumerate()
            .map(|(i, fact)| AddedFact {
                fact,
                similar: similar
                    .as_ref()
                    .map(|s| s.get(i).cloned().unwrap_or_default()),
            })
            .collect();
        Ok(Added { ids, facts })
    }
}

/// The entries most like each appended fact; nothing when the batch is
/// large or the lookup fails (the facts are written: a warning, never an
/// error).
async fn similar(target: &Target, appended: &[Appended]) -> Vec<Vec<SimilarEntry>> {
    if appended.len() > SIMILAR_MAX_FACTS {
        target.index_soon();
        return Vec::new();
    }
    // An erased text is not looked up (its embedding would be cached).
    let texts: Vec<String> = appended
        .iter()
        .filter(|a| !a.erased)
        .map(|a| a.text.clone())
        .collect();
    if texts.is_empty() {
        return appended.iter().map(|_| Vec::new()).collect();
    }
    match target.run(Similar { texts }).await {
        Ok(found) => {
            let mut found = found.into_iter();
            let each = |a: &Appended| match a.erased {
                true => Vec::new(),
                false => found.next().unwrap_or_default(),
            };
            appended.iter().map(each).collect()
        }
        Err(e) => {
            tracing::warn!("similar entries not shown: {e:#}");
            Vec::new()
        }
    }
}
