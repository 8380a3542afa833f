//! memd's one error type (after jj-lib's thiserror enums). Callers branch
//! on [`Error::kind`]: the HTTP API maps it to a status code, the command
//! line to an exit code; neither ever looks at message text. `anyhow` stays
//! at the edges (the binary, the evaluations and the benchmarks).
//!
//! [`Context`] adds what memd was doing to any error, as `anyhow`'s does;
//! the kind of a wrapped error is still found ([`Error::kind`] looks
//! through the wrapping), and its text is the whole chain, outermost first
//! ("reading a.md: permission denied"), whatever the formatter.

use std::fmt::Display;
use std::path::PathBuf;

use crate::remedy::Remedy;

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Any other error, kept whole for its message and source.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Another process holds a lock this needs; try again later.
    #[error("{what} is already running (pid {}); try again when it has finished", pid_text(.pid))]
    Busy { what: String, pid: Option<u32> },
    /// Another daemon serves this memory directory.
    #[error(
        "a memd daemon already serves {} (pid {}, listening on {}); stop it first",
        .dir.display(), pid_text(.pid), .listen.as_deref().unwrap_or("?")
    )]
    DaemonRunning {
        dir: PathBuf,
        pid: Option<u32>,
        listen: Option<String>,
    },
    /// A memory of a root that is being moved to another node, or was
    /// ([`crate::server::moves`]): nothing was done, and the same request
    /// sent again (through the load balancer, which is pointed at its new
    /// node) is served there.
    #[error("{}", moved_text(.name, *.handed_over))]
    Moved { name: String, handed_over: bool },
    /// No entry or archive fact has this id. Said in no surface's words:
    /// each surface adds how its caller finds ids (the CLI `memd forget
    /// --match`, MCP `recall`).
    #[error("no entry or archive fact has the id {id:?}")]
    NotFound { id: String },
    /// Something else named that does not exist (a run, a memory).
    #[error("there is no {what}")]
    NoSuch { what: String },
    /// The directory is not a memory directory (or does not exist).
    #[error("{}", not_memory_dir(.path, .exists))]
    NotMemoryDir { path: PathBuf, exists: bool },
    /// Input that an append refuses before writing anything.
    #[error(transparent)]
    InvalidFact(#[from] InvalidFact),
    /// A request that cannot succeed as given (an argument, a setting).
    #[error("{0}")]
    Invalid(String),
    /// A file memd will not guess about; the user must fix it by hand.
    #[error("{}{}: {message}", .path.display(), .line.map(|l| format!(":{l}")).unwrap_or_default())]
    Corrupt {
        path: PathBuf,
        /// 1-based, when the problem has one.
        line: Option<usize>,
        message: String,
    },
    /// The daemon answered a request with an error: said as the daemon
    /// said it (the same words memd run here would say), of the kind the
    /// daemon named (else the one its status implies).
    #[error("{message}")]
    Daemon {
        status: u16,
        kind: Option<Kind>,
        message: String,
    },
    /// Reading or writing a file (or a socket) failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The index (LanceDB, Arrow) failed.
    #[error("index: {0}")]
    Index(BoxError),
    /// Embedding failed (the model, its tokenizer, or an embedding service).
    #[error("embedding: {0}")]
    Embed(BoxError),
    /// An HTTP service (the LLM, an embedding server) failed, or answered
    /// what memd cannot use.
    #[error("{0}")]
    Service(String),
    /// JSON that does not parse as what it should be.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Anything else, said in words.
    #[error("{0}")]
    Message(String),
    /// An LLM call not made: it could pass the day's token budget
    /// (`[llm] max_tokens_per_day`, [`crate::usage`]).
    #[error(
        "the day's LLM budget is spent: {spent} of {limit} tokens, and a call may take {asked} more ([llm] max_tokens_per_day); the facts wait for tomorrow"
    )]
    OverBudget { spent: u64, limit: u64, asked: u64 },
    /// Done in part: what was left undone is said, and waits for another
    /// try (a consolidation whose judge failed on some clusters).
    #[error("{0}")]
    Unfinished(String),
    /// What memd was doing when `source` happened.
    #[error("{context}: {cause}")]
    Context { context: String, cause: Box<Error> },
    /// `cause`, and what the caller can do about it, which each surface
    /// says in its own words ([`crate::remedy`]); the text is the cause's.
    #[error("{cause}")]
    Remedied { cause: Box<Error>, remedy: Remedy },
}

fn moved_text(name: &str, handed_over: bool) -> String {
    match handed_over {
        false => format!(
            "memory {name:?} is being moved to another node; nothing was done: send it again in a moment"
        ),
        true => format!(
            "memory {name:?} was moved to another node; nothing was done here: send it again, through the load balancer, which sends it to the node that serves it now"
        ),
    }
}

fn pid_text(pid: &Option<u32>) -> String {
    pid.map_or("?".into(), |p| p.to_string())
}

fn not_memory_dir(path: &std::path::Path, exists: &bool) -> String {
    let p = path.display();
    if *exists {
        format!(
            "{p} is not a memory directory (it has no archive/ folder); create one with `memd init {p}` or pick another with --dir / MEMD_DIR"
        )
    } else {
        format!(
            "{p} does not exist or is not a directory; create a memory directory with `memd init {p}`"
        )
    }
}

/// A fact an append refuses before writing anything (the number is the
/// fact's position in the batch, from 1).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InvalidFact {
    #[error("fact {0}: text is empty")]
    Empty(usize),
    #[error("fact {0}: a fact is one line; split multi-line text into several facts")]
    MultiLine(usize),
    #[error(
        "fact {0}: text may not contain `<!-- key:` or `<!-- supersedes:` (reserved for memd's own marks)"
    )]
    ReservedMarker(usize),
    #[error("fact {0}: category {1:?} must be letters, digits, '-' or '_' (at most 40)")]
    Category(usize, String),
    #[error("fact {0}: session {1:?} must be one line without '·'")]
    Session(usize, String),
    #[error("fact {0}: key {1:?} must be 1-200 characters without spaces or `-->`")]
    Key(usize, String),
}

/// What kind of failure a caller is looking at, for exit and status codes
/// (and, as `kind` in the daemon's error replies, for its clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Busy,
    NotFound,
    /// The request itself is wrong (bad fact, not a memory directory).
    Invalid,
    /// A file needs a person's attention.
    Corrupt,
    /// Done in part; the rest waits for another try.
    Unfinished,
    /// Anything else: I/O, the index, an LLM or embedder, a bug.
    Other,
}

impl Error {
    pub fn kind(&self) -> Kind {
        match self {
            Error::Busy { .. } | Error::DaemonRunning { .. } | Error::Moved { .. } => Kind::Busy,
            Error::NotFound { .. } | Error::NoSuch { .. } => Kind::NotFound,
            Error::NotMemoryDir { .. } | Error::InvalidFact(_) | Error::Invalid(_) => Kind::Invalid,
            Error::Corrupt { .. } => Kind::Corrupt,
            Error::Unfinished(_) => Kind::Unfinished,
            Error::Daemon {
                kind: Some(kind), ..
            } => *kind,
            Error::Daemon { status, .. } => match status {
                409 => Kind::Busy,
                404 => Kind::NotFound,
                400 | 413 | 422 => Kind::Invalid,
                _ => Kind::Other,
            },
            Error::Context { cause, .. } | Error::Remedied { cause, .. } => cause.kind(),
            _ => Kind::Other,
        }
    }

    /// The same error again, for a second caller of one piece of work (the
    /// syncs the index's owner does as one): its words and its kind, the
    /// sources behind it said in words.
    pub fn again(&self) -> Error {
        let said = || self.to_string();
        match self {
            Error::Corrupt {
                path,
                line,
                message,
            } => Error::Corrupt {
                path: path.clone(),
                line: *line,
                message: message.clone(),
            },
            Error::Invalid(m) => Error::Invalid(m.clone()),
            Error::NotFound { id } => Error::NotFound { id: id.clone() },
            Error::NoSuch { what } => Error::NoSuch { what: what.clone() },
            Error::Unfinished(m) => Error::Unfinished(m.clone()),
            Error::Index(e) => Error::Index(e.to_string().into()),
            Error::Embed(e) => Error::Embed(e.to_string().into()),
            Error::Service(m) => Error::Service(m.clone()),
            Error::Io(e) => Error::Io(std::io::Error::new(e.kind(), e.to_string())),
            Error::Context { context, cause } => Error::Context {
                context: context.clone(),
                cause: Box::new(cause.again()),
            },
            Error::Remedied { cause, remedy } => Error::Remedied {
                cause: Box::new(cause.again()),
                remedy: remedy.clone(),
            },
            _ => Error::Message(said()),
        }
    }

    /// Whether this is (or wraps) [`Error::Moved`]: nothing was done, and
    /// the request may be sent again at once.
    pub fn is_moved(&self) -> bool {
        match self {
            Error::Moved { .. } => true,
            Error::Context { cause, .. } | Error::Remedied { cause, .. } => cause.is_moved(),
            _ => false,
        }
    }

    /// Whether this is (or wraps) [`Error::OverBudget`].
    pub fn is_over_budget(&self) -> bool {
        match self {
            Error::OverBudget { .. } => true,
            Error::Context { cause, .. } | Error::Remedied { cause, .. } => cause.is_over_budget(),
            _ => false,
        }
    }

    /// What the caller can do about this error, if memd knows (the
    /// outermost remedy, through any context).
    pub fn remedy(&self) -> Option<&Remedy> {
        match self {
            Error::Remedied { remedy, .. } => Some(remedy),
            Error::Context { cause, .. } => cause.remedy(),
            _ => None,
        }
    }

    /// `self`, with what the caller can do about it.
    pub fn remedied(self, remedy: Remedy) -> Error {
        Error::Remedied {
            cause: Box::new(self),
            remedy,
        }
    }

    /// An error said in words.
    pub fn msg(m: impl Display) -> Error {
        Error::Message(m.to_string())
    }

    /// `self`, with what memd was doing.
    pub fn context(self, c: impl Display) -> Error {
        Error::Context {
            context: c.to_string(),
            cause: Box::new(self),
        }
    }
}

impl From<lancedb::Error> for Error {
    fn from(e: lancedb::Error) -> Error {
        Error::Index(Box::new(e))
    }
}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Error {
        Error::Index(Box::new(e))
    }
}

impl From<reqwest::Error> for Error {
    fn from(e: reqwest::Error) -> Error {
        Error::Service(e.to_string())
    }
}

impl From<BoxError> for Error {
    fn from(e: BoxError) -> Error {
        Error::Message(e.to_string())
    }
}

impl From<tokio::task::JoinError> for Error {
    fn from(e: tokio::task::JoinError) -> Error {
        Error::msg(format!("background task failed: {e}"))
    }
}

impl From<std::string::FromUtf8Error> for Error {
    fn from(e: std::string::FromUtf8Error) -> Error {
        Error::msg(e)
    }
}

/// Add what memd was doing to an error (as `anyhow::Context` does), or
/// turn a missing value into an error.
pub trait Context<T> {
    fn context<C: Display>(self, c: C) -> Result<T>;
    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context<C: Display>(self, c: C) -> Result<T> {
        self.map_err(|e| e.into().context(c))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
}

impl<T> Context<T> for Option<T> {
    fn context<C: Display>(self, c: C) -> Result<T> {
        self.ok_or_else(|| Error::msg(c))
    }

    fn with_context<C: Display, F: FnOnce() -> C>(self, f: F) -> Result<T> {
        self.ok_or_else(|| Error::msg(f()))
    }
}

/// Return early with an error said in words (`anyhow::bail!` for memd).
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::Error::Message(format!($($arg)*)))
    };
}
pub(crate) use bail;

/// An error said in words (`anyhow::anyhow!` for memd).
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::Error::Message(format!($($arg)*))
    };
}
pub(crate) use err;

#[cfg(test)]
mod tests {
    use super::*;

    /// The error a second caller of one piece of work gets says the same
    /// words and is of the same kind, wrapped or not.
    #[test]
    fn an_error_given_again_says_the_same_and_is_of_the_same_kind() {
        let corrupt = || Error::Corrupt {
            path: PathBuf::from("archive/2026-11-30.md"),
            line: Some(3),
            message: "not a list item".into(),
        };
        let io = std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left");
        let errors = [
            corrupt(),
            corrupt().context("syncing the index"),
            Error::Index("table gone".into()).context("searching"),
            Error::Embed("model missing".into()),
            Error::Io(io),
            Error::Invalid("k is 1 to 100".into()),
            Error::NotFound { id: "f-1".into() },
        ];
        for e in errors {
            let again = e.again();
            assert_eq!(again.to_string(), e.to_string());
            assert_eq!(again.kind(), e.kind(), "{e}");
        }
        let Error::Io(io) = Error::Io(std::io::ErrorKind::StorageFull.into()).again() else {
            panic!("an I/O error stays one");
        };
        assert_eq!(io.kind(), std::io::ErrorKind::StorageFull);
    }
}
