//! The one request vocabulary (after mini-redis' `src/cmd/`): every
//! operation memd offers is one type, with its parameters and its reply
//! type, in a file of its own here. The command line builds them from its
//! arguments, the HTTP API from a route's path, query and body, MCP from a
//! tool's arguments, and a test or an evaluation directly; each is applied
//! once, by [`Target::run`], wherever it is made.
//!
//! | request        | HTTP                               | CLI                  | MCP tool      |
//! |----------------|------------------------------------|----------------------|---------------|
//! | [`Add`]        | `POST /v1/facts`                   | `memd add`           | `remember`    |
//! | [`Search`]     | `GET /v1/search`                   | `memd search`        | `recall`      |
//! | [`Similar`]    | `POST /v1/similar`                 | (after `memd add`)   |               |
//! | [`Consolidate`]| `POST /v1/consolidate`             | `memd consolidate`   | `consolidate` |
//! | [`Reindex`]    | `POST /v1/reindex`                 | `memd reindex`       |               |
//! | [`Entries`]    | `GET /v1/entries`                  | `memd entries`       | `list_entries`|
//! | [`GetEntry`]   | `GET /v1/entries/{id}`             | `memd entries ID`    | `get_entry`   |
//! | [`EditEntry`]  | `PATCH /v1/entries/{id}`           | `memd edit ID`       | `edit_entry`  |
//! | [`Forget`]     | `DELETE /v1/entries/{id}`          | `memd forget ID`     | `forget`      |
//! | [`Candidates`] | `GET /v1/candidates`               | `memd forget --match`|               |
//! | [`Unforget`]   | `POST /v1/entries/{id}/unforget`   | `memd forget --undo` |               |
//! | [`Erase`]      | `POST /v1/entries/{id}/erase`      | `memd forget --erase`| `erase`       |
//! | [`History`]    | `GET /v1/entries/{id}/history`     | `memd history`       |               |
//! | [`Runs`]       | `GET /v1/runs`                     | `memd runs`          |               |
//! | [`Undo`]       | `POST /v1/runs/{run}/undo`         | `memd undo`          |               |
//! | [`ReviewItems`]| `GET /v1/review`                   | `memd review`        | `review_items`|
//! | [`Review`]     | `POST /v1/review`                  | `memd review accept\|reject\|apply` | `review` |
//! | [`Core`]       | `GET /v1/memory`                   | `memd core`          | `core_memory` |
//! | [`Status`]     | `GET /v1/status`                   | `memd status`        |               |
//! | [`Check`]      | `POST /v1/check`                   | `memd check`         |               |
//! | [`Sync`]       | (none: see below)                  | `memd sync`          |               |
//!
//! [`Sync`] has no HTTP route and no MCP tool: git runs with the
//! repository's own configuration (hooks, ssh commands), which whoever
//! writes the directory controls, so only the command line and the
//! daemon of one memory (on its timer) run it, never a request from afar.
//!
//! Where a request runs is one rule, in [`Target::run`]: a request that
//! needs the index goes to the daemon when one serves the directory (it
//! owns the index); everything else, and everything when no daemon runs,
//! is applied in this process. Files are the truth and any process may
//! write them under their locks; after a write, the index catches up
//! where it is owned ([`Target::settle`]).
//!
//! Adding an operation is one file here: the type, its reply, its
//! [`Route`] and its `apply`; then one line in [`each`]. The HTTP API,
//! its OpenAPI description and the client that calls a daemon follow from
//! that; a CLI command or an MCP tool is a few lines of presentation.

mod add;
mod check;
pub mod client;
mod consolidate;
mod core;
mod entries;
mod forget;
mod history;
mod reindex;
mod review;
mod route;
mod runs;
mod search;
mod show;
mod similar;
mod status;
mod sync;
mod target;

pub use self::add::{Add, Added, AddedFact};
pub use self::check::Check;
pub use self::consolidate::Consolidate;
pub use self::core::{Core, CoreText};
pub use self::entries::{EditEntry, Edited, Entries, EntryView, GetEntry};
pub use self::forget::{Candidates, Erase, Forget, Unforget};
pub use self::history::History;
pub use self::reindex::{Reindex, Reindexed};
pub use self::review::{
    Action as ReviewAction, Items as ReviewList, Review, ReviewItems, Reviewed,
};
pub use self::route::{Method, Route};
pub use self::runs::{Runs, Undo};
pub use self::search::{Found, Search};
pub use self::show::{Show, Shown};
pub use self::similar::{SIMILAR_MAX_TEXTS, SIMILAR_SHOWN, Similar};
pub use self::status::Status;
pub use self::sync::Sync;
pub use self::target::{Holder, Lazy, Owner, Request, Target, name_of, schema_of};

/// Something done once for each request type: mounting its route,
/// describing it (see [`each`]).
pub trait Each {
    fn one<R: Request>(&mut self);
}

/// Visit every request of the one-memory API, in the order the API lists
/// them. One line per operation: the router, its description and the tests
/// that hold the two together all read this list.
pub fn each(v: &mut impl Each) {
    v.one::<Add>();
    v.one::<Search>();
    v.one::<Similar>();
    v.one::<Consolidate>();
    v.one::<Reindex>();
    v.one::<Entries>();
    v.one::<GetEntry>();
    v.one::<EditEntry>();
    v.one::<Forget>();
    v.one::<Candidates>();
    v.one::<Unforget>();
    v.one::<Erase>();
    v.one::<History>();
    v.one::<Runs>();
    v.one::<Undo>();
    v.one::<ReviewItems>();
    v.one::<Review>();
    v.one::<Core>();
    v.one::<Show>();
    v.one::<Status>();
    v.one::<Check>();
}
