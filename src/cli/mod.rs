//! The `memd` command line: one file per command, each with its clap
//! `Args` and a `run` (after jj's `cli/src/commands/`). Commands print;
//! the library returns data.

/// `println!` and `print!` for the commands: a write error is returned
/// (standard output closed by its reader as [`out::Closed`]), never a
/// panic.
macro_rules! outln {
    ($($t:tt)*) => {
        $crate::cli::out::print(format_args!("{}\n", format_args!($($t)*)))
    };
}
macro_rules! out {
    ($($t:tt)*) => {
        $crate::cli::out::print(format_args!($($t)*))
    };
}

mod add;
#[cfg(feature = "lab")]
mod bench;
mod check;
mod completions;
mod consolidate;
mod core;
mod edit;
mod entries;
#[cfg(feature = "lab")]
mod eval;
mod forget;
mod history;
mod init;
mod log;
mod mcp;
pub mod out;
mod reindex;
mod review;
mod runs;
mod search;
mod serve;
mod setup;
mod show;
mod status;
mod sync;
mod undo;
mod watch;

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Parser, Subcommand};

use memd::request::{Request, Target};

#[derive(Parser)]
#[command(
    name = "memd",
    version,
    about = "Long-term memory for AI agents, kept as plain markdown",
    after_long_help = EXIT_CODES
)]
pub struct Cli {
    /// The memory directory (default: $MEMD_DIR, else the current directory).
    #[arg(long, global = true, env = "MEMD_DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    verbosity: log::Verbosity,
    #[command(subcommand)]
    command: Command,
}

/// The exit codes of every command (main's `exit_code` applies them), as
/// `memd --help` and the man page list them.
const EXIT_CODES: &str = "Exit codes (the same whether memd or a daemon ran the command):
  0  done
  1  a failure (I/O, the index, an LLM or embedder)
  2  a request that cannot succeed as given (an invalid fact, not a memory directory, a usage error)
  3  busy: another consolidation, forget or daemon holds the lock; try again later
  4  no entry or fact has that id
  5  a file memd will not guess about (broken MEMORY.md markers): fix it by hand
  6  done in part: the judge gave no usable reply for some facts; they stay pending";

#[derive(Subcommand)]
enum Command {
    /// Create a memory directory (default: --dir, else the current directory).
    Init(init::Args),
    /// Append a fact to today's archive and print its id.
    Add(add::Args),
    /// Hybrid search (vector + full text) over facts, entries and MEMORY.md.
    /// Syncs files that changed first.
    Search(search::Args),
    /// Fold pending archive facts into consolidated/memory.md and refresh
    /// MEMORY.md (gated by time and volume; --force skips the gate).
    Consolidate(consolidate::Args),
    /// List the entries of consolidated/memory.md (by category, session,
    /// date or mark), or print one by id.
    Entries(entries::Args),
    /// Change one entry's text, pin or category, safely against hand edits;
    /// journaled, so `memd undo RUN` takes it back.
    Edit(edit::Args),
    /// Forget an entry (or a pending fact) for good: it is removed and
    /// tombstoned, so neither a reindex nor a restatement brings it back.
    Forget(forget::Args),
    /// Print an entry's lineage from the journal (entries merged into it
    /// included).
    History(history::Args),
    /// Print consolidated/memory.md and MEMORY.md's generated lines, now
    /// or as they were at a past time (--as-of).
    Show(show::Args),
    /// List runs from the journal: when, judge, ops by kind, facts.
    Runs(runs::Args),
    /// Undo a run: entries back as the run found them, its facts pending
    /// again (or, with --keep-out, forgotten). Journaled, so it can be undone.
    Undo(undo::Args),
    /// List the ops consolidation proposed for review (`[consolidation]
    /// review = "manual"`), accept or reject them, or carry out the
    /// decisions made in consolidated/REVIEW.md.
    Review(review::Args),
    /// Bring the index in step with the files; --clear rebuilds it from scratch.
    Reindex(reindex::Args),
    /// Keep the index in step with the files until interrupted (file events
    /// plus a periodic reconcile).
    Watch(watch::Args),
    /// Print MEMORY.md, the core memory an agent keeps in every prompt.
    Core(core::Args),
    /// Fetch the embedding model this memory's configuration names (from
    /// PyPI, as ./scripts/fetch-model.sh does), if it is not in place.
    Setup(setup::Args),
    /// Show the state of the memory directory and the configuration in force.
    Status(status::Args),
    /// Verify memd's invariants (every fact accounted for, unique ids, one
    /// pair of MEMORY.md markers, parsable logs, the index equal to the
    /// files); exits non-zero on a problem. --fix rebuilds the index only.
    Check(check::Args),
    /// Sync with a git remote: commit this memory's changes, fetch, merge
    /// with memd's merge drivers (no fact lost, nothing forgotten back),
    /// push. --remote URL sets the remote (the first time).
    Sync(sync::Args),
    /// The merge git runs for a memory's files (registered by `memd sync`;
    /// not for people).
    #[command(hide = true)]
    MergeDriver(sync::DriverArgs),
    /// Run the daemon for this directory: watcher, consolidation loop,
    /// index upkeep and the HTTP API (until SIGINT or SIGTERM).
    Serve(serve::Args),
    /// A Model Context Protocol server on stdin/stdout (tools: remember,
    /// recall, forget, erase, core_memory, list_entries, get_entry,
    /// edit_entry, review_items, review, consolidate).
    Mcp(mcp::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell).
    Completions(completions::Args),
    /// Print the man page (roff).
    Man,
    /// Measure memory quality on the public evaluation data.
    #[cfg(feature = "lab")]
    Eval(eval::Args),
    /// Measure memd's own speed.
    #[cfg(feature = "lab")]
    Bench(bench::Args),
}

/// Run the parsed command.
pub fn run(cli: Cli) -> Result<()> {
    log::init(cli.verbosity);
    let dir = cli.dir.unwrap_or_else(|| PathBuf::from("."));
    match cli.command {
        Command::Init(args) => init::run(&dir, args),
        Command::Add(args) => add::run(&dir, args),
        Command::Search(args) => search::run(&dir, args),
        Command::Consolidate(args) => consolidate::run(&dir, args),
        Command::Entries(args) => entries::run(&dir, args),
        Command::Edit(args) => edit::run(&dir, args),
        Command::Forget(args) => forget::run(&dir, args),
        Command::History(args) => history::run(&dir, args),
        Command::Show(args) => show::run(&dir, args),
        Command::Runs(args) => runs::run(&dir, args),
        Command::Undo(args) => undo::run(&dir, args),
        Command::Review(args) => review::run(&dir, args),
        Command::Reindex(args) => reindex::run(&dir, args),
        Command::Watch(args) => watch::run(&dir, args),
        Command::Core(args) => core::run(&dir, args),
        Command::Setup(args) => setup::run(&dir, args),
        Command::Status(args) => status::run(&dir, args),
        Command::Check(args) => check::run(&dir, args),
        Command::Sync(args) => sync::run(&dir, args),
        Command::MergeDriver(args) => sync::driver(args),
        Command::Serve(args) => serve::run(&dir, args),
        Command::Mcp(args) => mcp::run(&dir, args),
        Command::Completions(args) => completions::run(args),
        Command::Man => completions::man(),
        #[cfg(feature = "lab")]
        Command::Eval(args) => eval::run(&dir, args),
        #[cfg(feature = "lab")]
        Command::Bench(args) => bench::run(&dir, args),
    }
}

/// Run `req` at the memory directory `dir` (through its daemon when one
/// serves it and the request needs the index), saying on stderr when it
/// went through the daemon if `say_where`.
fn run_at<R: Request>(dir: &Path, req: R, say_where: bool) -> Result<R::Reply> {
    let target = Target::open(dir)?;
    if say_where
        && req.needs_index()
        && let Some(via) = target.describe()
    {
        eprintln!("memd: {via}");
    }
    let ran = async {
        let reply = target.run(req).await;
        target.idle().await;
        reply
    };
    Ok(runtime()?.block_on(ran)?)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

/// `--embedder NAME`, read the way `[embedder] kind` is read.
#[cfg(feature = "lab")]
fn embedder_kind(name: &str) -> Result<memd::config::EmbedderKind> {
    use anyhow::Context;
    serde_json::from_value(serde_json::Value::String(name.to_string()))
        .context("--embedder takes minilm, openai or lexical")
}

/// Print `value` as pretty JSON with `--json`, else as `text` renders it.
fn emit<T: serde::Serialize>(json: bool, value: &T, text: impl FnOnce(&T) -> String) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(value)?)?;
    } else {
        out!("{}", text(value))?;
    }
    Ok(())
}

/// The plural ending of a count's noun: "1 op", "2 ops".
fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A text on one line, for listings.
fn one_line(text: &str) -> String {
    text.replace('\n', " ")
}
