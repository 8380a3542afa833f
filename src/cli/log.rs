//! What the command line logs to stderr, and how: memd's own lines lead.
//!
//! - By default: warnings and errors, and progress lines when stderr is
//!   not a terminal (a terminal gets a progress bar instead).
//! - `-q`: errors only. `-v`: memd's info lines; `-vv`: memd's debug lines;
//!   `-vvv`: memd's trace lines and every library's debug lines. Without
//!   `-vvv` the libraries under memd (LanceDB, DataFusion, the HTTP stack)
//!   say only their warnings: their info lines are many and not the user's.
//! - `MEMD_LOG` replaces all of that. A bare level (`MEMD_LOG=info`) is
//!   memd's level, the libraries staying at warnings; a filter with a
//!   target (`MEMD_LOG=lance=debug,memd=trace`) is taken as written.
//! - Colour only on a terminal. `NO_COLOR` (any non-empty value) turns it
//!   off, and wins; `CLICOLOR_FORCE` (non-empty, not `0`) turns it on in
//!   a pipe or a file.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// The flags every command takes.
#[derive(clap::Args, Clone, Copy)]
pub struct Verbosity {
    /// More of memd's log lines on stderr (-v info, -vv debug, -vvv trace
    /// and every library's debug lines).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Only errors on stderr (results on stdout are unchanged).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
}

/// Start logging to stderr, once, before the command runs.
pub fn init(v: Verbosity) {
    let filter = std::env::var("MEMD_LOG")
        .ok()
        .filter(|s| !s.trim().is_empty())
        .map(|s| from_env(&s))
        .unwrap_or_else(|| EnvFilter::new(directives(v)));
    let colour = colour(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
        std::env::var_os("CLICOLOR_FORCE"),
    );
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .init();
}

/// The filter the flags ask for. `lance_io::object_store` warns on every
/// connection to a table on object storage that it "guesses" the store's
/// prefix (memd's S3 store is in the session's registry, not LanceDB's
/// global one it looks in: src/index/store.rs), which says nothing to a
/// user; its errors still show.
fn directives(v: Verbosity) -> &'static str {
    match (v.quiet, v.verbose) {
        (true, _) => "error",
        (false, 0) => "warn,memd::progress=info,lance_io::object_store=error",
        (false, 1) => "warn,memd=info,lance_io::object_store=error",
        (false, 2) => "warn,memd=debug,lance_io::object_store=error",
        (false, _) => "debug,memd=trace",
    }
}

/// `MEMD_LOG`: a bare level is memd's; anything else is a filter as
/// written (one that does not parse falls back to the default, with a
/// line saying so once logging is up).
fn from_env(s: &str) -> EnvFilter {
    let s = s.trim();
    let level = ["error", "warn", "info", "debug", "trace", "off"]
        .iter()
        .any(|l| s.eq_ignore_ascii_case(l));
    let written = match level {
        true => format!("warn,memd={s}"),
        false => s.to_string(),
    };
    EnvFilter::try_new(written).unwrap_or_else(|e| {
        eprintln!("memd: MEMD_LOG={s:?} is not a log filter ({e}); using the default");
        EnvFilter::new(directives(Verbosity {
            verbose: 0,
            quiet: false,
        }))
    })
}

/// Whether to write colour codes: see the module doc.
fn colour(
    terminal: bool,
    no_color: Option<std::ffi::OsString>,
    force: Option<std::ffi::OsString>,
) -> bool {
    let set = |v: &Option<std::ffi::OsString>| v.as_ref().is_some_and(|v| !v.is_empty());
    if set(&no_color) {
        return false;
    }
    if set(&force) && force.as_deref() != Some(std::ffi::OsStr::new("0")) {
        return true;
    }
    terminal
}
