//! [`Add`]: append facts to today's archive, and (when asked) look up the
//! existing entries most like each one.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::similar::Similar;
use super::target::{Request, Target, blocking};
use crate::archive::{self, Appended};
use crate::error::Result;
use crate::ids::{EntryId, FactId};
use crate::index::search::SimilarEntry;

/// Facts to append: `text`, or a batch in `texts`. A file write, durable
/// before the reply; the similar entries are information only, looked up
/// after the write by whoever owns the index.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Add {
    /// One fact, one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// A batch of facts; with `key`, the N-th fact's key is `KEY#N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub texts: Option<Vec<String>>,
    /// A tag for every fact (letters, digits, `-`, `_`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    /// The session the facts come from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// Idempotency key: a retried append with the same key writes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Also look up the existing entries most like each fact (at most 20
    /// facts; never blocks the write).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub similar: bool,
    /// Entries (`e-…`) this fact makes no longer true: the user moved,
    /// changed jobs, changed their mind. Each must be a live entry. The
    /// next run replaces them with the fact and keeps what they said as
    /// history ("new (previously: old)"), whichever judge runs. One fact
    /// (`text`), not a batch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supersedes: Vec<EntryId>,
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
            _ => Err(crate::Error::Invalid(
                "give either \"text\" or a non-empty \"texts\"".into(),
            )),
        }
        .and_then(|(texts, many)| {
            let bytes: usize = texts.iter().map(String::len).sum();
            match bytes > MAX_FACT_BYTES {
                true => Err(crate::Error::Invalid(format!(
                    "{bytes} bytes of facts in one add; at most {MAX_FACT_BYTES}"
                ))),
                false => Ok((texts, many)),
            }
        })
    }
}

/// Every id in `ids` names a live entry: in the entries file and
/// forgotten by no tombstone (a clear error otherwise, before any write).
fn live_entries(layout: &crate::Layout, ids: &[EntryId]) -> Result<()> {
    let doc = crate::entries::Document::read(&layout.entries_file())?;
    let stones = crate::tombstones::Tombstones::load(&layout.tombstones_file())?;
    for id in ids {
        if doc.get(id.as_str()).is_none() || stones.names_entry(id.as_str()) {
            return Err(crate::Error::Invalid(format!(
                "supersedes {id}: no live entry has that id (`memd search` shows entries' ids; nothing was written)"
            )));
        }
    }
    Ok(())
}

impl Request for Add {
    type Reply = Added;

    const ROUTE: Route = Route {
        method: Method::Post,
        path: "/facts",
        summary: "Append facts to today's archive (`text` or `texts`)",
    };

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
                return Err(crate::Error::Invalid(
                    "supersedes goes with one fact (text), not a batch".into(),
                ));
            }
            let (l, ids) = (layout.clone(), self.supersedes.clone());
            blocking(move || live_entries(&l, &ids)).await?;
            facts[0].supersedes = self.supersedes;
        }
        let now = target.memory.clock.now();
        let appended = blocking(move || archive::append_unless_erased(&layout, now, &facts));
        let appended = crate::steps::timed("append", appended).await?;
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
