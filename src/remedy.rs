//! What a caller can do about something memd reports (an error, a `check`
//! finding, an entry an undo left): an operation of memd's request
//! vocabulary with its arguments, never a command line. The text beside a
//! remedy names no surface; each surface says the remedy in its own words
//! ([`Remedy::said`]): the command line as a `memd` command, HTTP as its
//! route, MCP as its tool, or, where MCP has no tool for it, as something
//! to ask the person.
//!
//! Over HTTP a remedy is also data: an error reply carries it as `remedy`
//! (`{"op": "unforget", "id": "e-1"}`) beside `next`, its words; a finding
//! or a left entry carries it as `remedy`. So a CLI that went through the
//! daemon still says the command line's words.
//!
//! The routes below are the server's (`/v1/…`; a daemon serving many
//! memories puts them under `/v1/m/{name}`): the test
//! `api::every_remedy_names_a_route_the_binary_serves` holds them to it.

use std::fmt::Display;

use serde::{Deserialize, Serialize};

/// One operation a caller can do next, with what it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Remedy {
    /// Forget an entry or a pending fact.
    Forget { id: String },
    /// Bring back a forgotten entry or fact.
    Unforget { id: String },
    /// Erase an entry or fact (again, to finish an erasure that stopped).
    Erase { id: String },
    /// Sync with the git remote (finishes a merge, registers memd's merge
    /// drivers).
    Sync,
    /// Give the memory a git remote (the person's, where the memory lives).
    SetRemote,
    /// Bring the index up to date with the files.
    Reindex,
    /// Fetch the embedding model, on the machine memd runs on.
    Setup,
    /// List the review proposals, with their ids.
    ReviewItems,
}

/// Who is asking, so the remedy is said in words it can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Surface {
    Cli,
    Http,
    Mcp,
}

impl Remedy {
    /// One remedy of each operation, those that take an id with `id`
    /// (for the tests that hold every surface's words to the surface).
    pub fn each(id: &str) -> Vec<Remedy> {
        let id = id.to_string();
        vec![
            Remedy::Forget { id: id.clone() },
            Remedy::Unforget { id: id.clone() },
            Remedy::Erase { id },
            Remedy::Sync,
            Remedy::SetRemote,
            Remedy::Reindex,
            Remedy::Setup,
            Remedy::ReviewItems,
        ]
    }

    /// The remedy as `surface`'s caller can act on it: "run `memd forget
    /// --undo e-1` to bring e-1 back", "POST /v1/entries/e-1/unforget to
    /// bring e-1 back", "ask the person to bring e-1 back".
    pub fn said(&self, surface: Surface) -> String {
        let purpose = self.purpose();
        match surface {
            Surface::Cli => format!("run `memd {}` to {purpose}", self.command()),
            Surface::Http => self.said_over_http("/v1"),
            Surface::Mcp => match self.tool() {
                Some((tool, Some(id))) => format!("call `{tool}` with id {id} to {purpose}"),
                Some((tool, None)) => format!("call `{tool}` to {purpose}"),
                None => format!("ask the person to {purpose}"),
            },
        }
    }

    /// The remedy for an HTTP caller of the routes under `base` (`/v1`,
    /// or `/v1/m/{name}` on a daemon serving many memories).
    pub fn said_over_http(&self, base: &str) -> String {
        let purpose = self.purpose();
        match self.route_under(base) {
            Some(route) => format!("{route} to {purpose}"),
            None => format!("ask whoever runs the daemon to {purpose}"),
        }
    }

    /// What it does, as an infinitive.
    fn purpose(&self) -> String {
        match self {
            Remedy::Forget { id } => format!("forget {id}"),
            Remedy::Unforget { id } => format!("bring {id} back"),
            Remedy::Erase { id } => format!("erase {id} (again, to finish it)"),
            Remedy::Sync => "sync with the git remote".into(),
            Remedy::SetRemote => "give this memory a git remote".into(),
            Remedy::Reindex => "bring the index up to date".into(),
            Remedy::Setup => "fetch the embedding model".into(),
            Remedy::ReviewItems => "list the proposals with their ids".into(),
        }
    }

    /// The command line's words, after `memd `.
    fn command(&self) -> String {
        match self {
            Remedy::Forget { id } => format!("forget {id}"),
            Remedy::Unforget { id } => format!("forget --undo {id}"),
            Remedy::Erase { id } => format!("forget --erase {id}"),
            Remedy::Sync => "sync".into(),
            Remedy::SetRemote => "sync --remote URL".into(),
            Remedy::Reindex => "reindex".into(),
            Remedy::Setup => "setup".into(),
            Remedy::ReviewItems => "review".into(),
        }
    }

    /// The HTTP route under `/v1`, when the API has one.
    pub fn route(&self) -> Option<String> {
        self.route_under("/v1")
    }

    fn route_under(&self, base: &str) -> Option<String> {
        let (method, path) = match self {
            Remedy::Forget { id } => ("DELETE", format!("/entries/{}", path_id(id))),
            Remedy::Unforget { id } => ("POST", format!("/entries/{}/unforget", path_id(id))),
            Remedy::Erase { id } => ("POST", format!("/entries/{}/erase", path_id(id))),
            Remedy::Reindex => ("POST", "/reindex".into()),
            Remedy::ReviewItems => ("GET", "/review".into()),
            // Git runs with the person's credentials, where the memory
            // lives: no route.
            Remedy::Sync | Remedy::SetRemote | Remedy::Setup => return None,
        };
        Some(format!("{method} {base}{path}"))
    }

    /// The MCP tool, with the id it takes, when there is one.
    fn tool(&self) -> Option<(&'static str, Option<&str>)> {
        Some(match self {
            Remedy::Forget { id } => ("forget", Some(id)),
            Remedy::Erase { id } => ("erase", Some(id)),
            Remedy::ReviewItems => ("review_items", None),
            _ => return None,
        })
    }
}

/// An id as it goes in a route's path: a fact id's `#` escaped.
fn path_id(id: &str) -> String {
    id.replace('%', "%25").replace('#', "%23")
}

/// A text and what to do about it, said for one surface: "{text}; {said}".
pub fn with(text: impl Display, remedy: Option<&Remedy>, surface: Surface) -> String {
    match remedy {
        Some(r) => format!("{text}; {}", r.said(surface)),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_surface_but_the_command_line_is_told_a_command_line() {
        for r in &Remedy::each("e-1") {
            assert!(r.said(Surface::Cli).contains("`memd "), "{r:?}");
            for s in [Surface::Http, Surface::Mcp] {
                let said = r.said(s);
                assert!(!said.contains("memd "), "{r:?} over {s:?}: {said}");
                assert!(!said.contains("--"), "{r:?} over {s:?}: {said}");
            }
        }
        assert_eq!(
            Remedy::Unforget { id: "e-1".into() }.said(Surface::Http),
            "POST /v1/entries/e-1/unforget to bring e-1 back"
        );
        assert_eq!(
            Remedy::Unforget { id: "e-1".into() }.said(Surface::Mcp),
            "ask the person to bring e-1 back"
        );
    }

    #[test]
    fn a_remedy_is_data_a_client_reads_back() {
        let r = Remedy::Erase {
            id: "2026-11-01#ab".into(),
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"op": "erase", "id": "2026-11-01#ab"})
        );
        assert_eq!(serde_json::from_value::<Remedy>(json).unwrap(), r);
    }
}
