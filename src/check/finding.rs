//! One finding of `memd check`: what kind, where, what, and what fixes it.

use serde::Serialize;

use super::kind::Kind;
use crate::remedy::Remedy;

/// One finding: what kind, where, and what.
#[derive(Debug, Clone, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub kind: Kind,
    /// Relative to the memory directory.
    pub file: String,
    /// 1-based, when the finding has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Said in no surface's words: the remedy, if any, is below.
    pub what: String,
    /// What fixes it, which each surface says in its own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remedy: Option<Remedy>,
}

impl Finding {
    /// `self`, with what fixes it.
    pub(super) fn fixed_by(mut self, remedy: Remedy) -> Finding {
        self.remedy = Some(remedy);
        self
    }

    pub(super) fn new(
        kind: Kind,
        file: &str,
        line: Option<usize>,
        what: impl Into<String>,
    ) -> Finding {
        Finding {
            kind,
            file: file.into(),
            line,
            what: what.into(),
            remedy: None,
        }
    }
}
