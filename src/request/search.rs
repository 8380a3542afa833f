//! [`Search`]: hybrid search over facts, entries and MEMORY.md, logged as
//! recall.

use serde::{Deserialize, Serialize};

use super::route::{Method, Route};
use super::target::{Request, Target};
use crate::error::{Error, Result};
use crate::index::search::Hit;
use crate::index::{Filter, Query, Searched, rows_as_of};
use crate::{current, versions};

/// A search. The index is brought in step with the files first, so every
/// fact acknowledged before it is searched; with `wait` false the index
/// answers at once as it is, and says which files it does not cover yet.
#[derive(Debug, Clone, Default, Serialize, Deserialize, schemars::JsonSchema, clap::Args)]
pub struct Search {
    /// What to search for, in words (`q` in a URL).
    #[serde(alias = "q", default, skip_serializing_if = "Option::is_none")]
    #[arg(required = true)]
    pub query: Option<String>,
    /// How many results, 1 to 100 (default: `[search] default_k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(short, long)]
    pub k: Option<usize>,
    /// `false`: answer from the index as it is, without waiting for it to
    /// take in files that changed (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(skip)]
    pub wait: Option<bool>,
    /// Leave out what MEMORY.md already holds (its lines, the entries it
    /// has a line for and their facts), for an agent that keeps MEMORY.md
    /// in its prompt; the other hits fill the `k` places (default: false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, action = clap::ArgAction::SetTrue)]
    pub exclude_core: Option<bool>,
    /// Leave out hits scoring less than this, 0 to 1 (see the hits'
    /// `score`; default `[search] min_score`). 0 keeps every hit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub min_score: Option<f32>,
    /// Only facts of this category, and entries (and their MEMORY.md
    /// lines) holding one or set to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub category: Option<String>,
    /// Only facts of this session, and entries holding one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub session: Option<String>,
    /// Only facts stated on this day (`YYYY-MM-DD`) or later, and entries
    /// updated then or later.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub since: Option<String>,
    /// Search the memory as it was at this time: the facts written by
    /// then, and the entries and MEMORY.md lines as they were then (RFC
    /// 3339, a local time `2026-11-24T14:03`, or a day: its end). What
    /// was forgotten since stays out. Refused, saying why, when memd
    /// cannot know the entries then (see `show`); not with `category`,
    /// `session`, `since` or `exclude_core`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long, conflicts_with_all = ["category", "session", "since", "exclude_core"])]
    pub as_of: Option<String>,
}

/// The hits, best first, and what the index does not cover yet: one shape
/// whether the search waited for the index or not.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Found {
    pub hits: Vec<Hit>,
    /// `{"files_behind": [...]}` while files wait to be indexed (only
    /// without waiting); null when the hits cover every file.
    pub indexing: Option<serde_json::Value>,
}

impl Found {
    /// The hits of a search that covers every file.
    fn all(hits: Vec<Hit>) -> Found {
        Found {
            hits,
            indexing: None,
        }
    }

    /// The hits.
    pub fn hits(self) -> Vec<Hit> {
        self.hits
    }
}

/// The most results one search gives.
const MAX_K: usize = 100;

impl Request for Search {
    type Reply = Found;

    const ROUTE: Route = Route {
        method: Method::Get,
        path: "/search",
        summary: "Hybrid search (vector and full text) over facts, entries and MEMORY.md",
    };

    const NEEDS: &'static [&'static [&'static str]] = &[&["query"]];

    fn needs_index(&self) -> bool {
        true
    }

    async fn apply(self, target: &Target) -> Result<Found> {
        if self.as_of.is_some() {
            return self.in_the_past(target).await;
        }
        let filter = self.filter()?;
        let (text, k, min_score) = self.asked(target)?;
        let wait = self.wait.unwrap_or(true);
        let query = Query::new(&text, k).logged().waiting(wait);
        let query = query.above(min_score).filtered(filter);
        let Searched { mut hits, behind } = target.index().await?.search(&query).await?;
        current::declared_below(&target.memory.layout, &mut hits)?;
        if wait {
            return Ok(Found::all(hits));
        }
        let indexing = (!behind.is_empty()).then(|| serde_json::json!({ "files_behind": behind }));
        Ok(Found { hits, indexing })
    }
}

impl Search {
    /// The query, `k` and the score cutoff, checked.
    fn asked(&self, target: &Target) -> Result<(String, usize, f32)> {
        let text = self.query.clone().filter(|t| !t.trim().is_empty());
        let text = text.ok_or_else(|| {
            Error::Invalid("q is required: the text to search for (`q` or `query`)".into())
        })?;
        let default = target.memory.config.search.default_k as usize;
        if let Some(k) = self.k.filter(|k| !(1..=MAX_K).contains(k)) {
            return Err(Error::Invalid(format!(
                "k is how many hits to return: 1 to {MAX_K} (asked for {k})"
            )));
        }
        let k = self.k.unwrap_or(default).clamp(1, MAX_K);
        let min_score = self
            .min_score
            .unwrap_or(target.memory.config.search.min_score);
        if !(0.0..=1.0).contains(&min_score) {
            return Err(Error::Invalid(format!(
                "min_score is a score from 0 to 1 (got {min_score})"
            )));
        }
        Ok((text, k, min_score))
    }

    /// A search of the past ([`crate::index`]'s `past`): never logged as
    /// a recall.
    async fn in_the_past(self, target: &Target) -> Result<Found> {
        if self.category.is_some() || self.session.is_some() || self.since.is_some() {
            return Err(Error::Invalid(
                "as_of searches every fact and entry of then: category, session and since are not taken with it".into(),
            ));
        }
        if self.exclude_core == Some(true) {
            return Err(Error::Invalid(
                "as_of searches the memory as it was: exclude_core (today's MEMORY.md) is not taken with it".into(),
            ));
        }
        let (text, k, min_score) = self.asked(target)?;
        let at = versions::parse_time(self.as_of.as_deref().unwrap_or_default())?;
        let layout = target.memory.layout.clone();
        let rows = super::target::blocking(move || rows_as_of(&layout, at)).await?;
        let index = target.index().await?;
        let query = Query::new(&text, k).above(min_score).over(rows);
        let hits = index.search(&query).await?.hits;
        Ok(Found::all(hits))
    }

    /// What narrows the search, typed: the index reads the files it
    /// needs to know which rows may come back ([`Filter`]).
    fn filter(&self) -> Result<Filter> {
        let since = match &self.since {
            Some(day) => Some(super::entries::valid_day(day)?),
            None => None,
        };
        Ok(Filter {
            category: self.category.clone(),
            session: self.session.clone(),
            since,
            exclude_core: self.exclude_core.unwrap_or(false),
        })
    }
}
