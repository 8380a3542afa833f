//! `memd bench …`: memd's own speed (built with the `lab` feature).
//! Each prints one JSON line per measured size.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;

use memd::bench;
use memd::config::Config;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

#[derive(Subcommand)]
enum What {
    /// Index build, search latency and add-to-searchable at given sizes, and
    /// incremental sync versus re-embedding the whole day file.
    Index {
        /// Table sizes (facts).
        #[arg(long, value_delimiter = ',', default_value = "1000,10000,100000")]
        rows: Vec<usize>,
        /// Appends in the incremental-versus-whole-file comparison (0 skips it).
        #[arg(long, default_value_t = 1000)]
        appends: usize,
        /// Rewrite the whole file after every N-th append only and count
        /// each rewrite N times (a real model needs hours for the full
        /// whole-file side; see `bench::reembed`).
        #[arg(long, default_value_t = 1)]
        whole_file_every: usize,
        /// Embedder (default: lexical, so large tables build in minutes).
        #[arg(long, default_value = "lexical")]
        embedder: String,
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
    },
    /// Embedding throughput (uncached) and single-text latency.
    Embed {
        #[arg(long, default_value_t = 2000)]
        texts: usize,
        /// Texts per embedder call.
        #[arg(long, default_value_t = 32)]
        batch: usize,
        #[arg(long, default_value = "minilm")]
        embedder: String,
    },
    /// Consolidation time outside the LLM (a scripted one that answers at
    /// once), LLM calls per run and prompt tokens per fact.
    Consolidate {
        #[arg(long, default_value_t = 10000)]
        entries: usize,
        /// Pending facts per run.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        facts: Vec<usize>,
        /// Embedder (default: lexical).
        #[arg(long, default_value = "lexical")]
        embedder: String,
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
    },
    /// Load a real daemon from this process: concurrent clients posting
    /// facts and searching; requests/s, latencies, and no fact lost.
    Serve {
        #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
        clients: Vec<usize>,
        #[arg(long, default_value_t = 30)]
        seconds: u64,
        #[arg(long, default_value = "lexical")]
        embedder: String,
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
    },
    /// One daemon over many memories (`memd serve --root`, a child
    /// process): its RSS and open files, a cold memory's first search, a
    /// warm one's searches, posts/s across memories, no fact lost.
    ServeMany {
        #[command(flatten)]
        load: ManyLoad,
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
    },
    /// Search and append-to-searchable as the archive's day files grow,
    /// the facts the same: one daemon per day count, all at once, each
    /// request sent to each in turn.
    Days {
        /// Day-file counts, the first the one the others are compared with.
        #[arg(long, value_delimiter = ',', default_value = "10,3000")]
        days: Vec<usize>,
        /// Facts in every archive, spread over its day files.
        #[arg(long, default_value_t = 3000)]
        facts: usize,
        /// How many times each other request (status, check, a gated
        /// consolidation, the similar-entries lookup) is sent to each.
        #[arg(long, default_value_t = 5)]
        others: usize,
        #[command(flatten)]
        requests: Requests,
    },
    /// One search and one append → searchable broken into their steps as
    /// the daemon runs them (served from this process, over HTTP), at each
    /// table size; the median append → searchable also as a timeline of
    /// what ran when (`append_timeline`).
    SearchPath {
        /// Table sizes (facts), grown in one memory.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        sizes: Vec<usize>,
        /// Facts to a day file.
        #[arg(long, default_value_t = 100)]
        per_day: usize,
        /// `http`: to a daemon served from this process; `mcp`: to `memd
        /// mcp`'s handler in this process (its index opened beside other
        /// writers, as `memd mcp` opens it; no stdio hop).
        #[arg(long, value_enum, default_value_t = bench::Via::Http)]
        via: bench::Via,
        #[command(flatten)]
        requests: Requests,
    },
    /// What recording versions (for `show --as-of`) costs a writer of
    /// the entries file at each size: bytes a one-entry write adds, and
    /// the lock with versions recorded beside the save it records.
    Versions {
        /// Entries in the file.
        #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
        entries: Vec<usize>,
        /// One-entry writes at each size.
        #[arg(long, default_value_t = 50)]
        edits: usize,
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
    },
    /// Append latency (fsync'd single facts) and batch throughput.
    Append {
        #[arg(long, default_value_t = 1000)]
        singles: usize,
        #[arg(long, default_value_t = 10000)]
        batch_size: usize,
        #[arg(long, default_value_t = 5)]
        batches: usize,
        /// Where to create the scratch directory (its file system is what
        /// fsync measures).
        #[arg(long, default_value = ".")]
        r#in: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// The requests `bench days` and `bench search-path` send to each daemon.
#[derive(clap::Args)]
struct Requests {
    /// Searches (at each size, to each daemon).
    #[arg(long, default_value_t = 200)]
    searches: usize,
    /// Posts, each followed by a search that must find it.
    #[arg(long, default_value_t = 50)]
    appends: usize,
    /// The embedder (the peers' MiniLM by default).
    #[arg(long, default_value = "minilm")]
    embedder: String,
    /// Where to create the scratch memories.
    #[arg(long, default_value = ".")]
    r#in: PathBuf,
}

impl Requests {
    fn load(&self) -> Result<bench::Requests<'_>> {
        super::embedder_kind(&self.embedder)?;
        Ok(bench::Requests {
            searches: self.searches,
            appends: self.appends,
            embedder: &self.embedder,
        })
    }
}

/// Each figure set on a line of its own.
fn print_lines<T: serde::Serialize>(all: Vec<T>) -> Result<()> {
    all.iter().try_for_each(print_line)
}

/// The load of `bench serve-many`.
#[derive(clap::Args)]
struct ManyLoad {
    #[arg(long, default_value_t = 1000)]
    memories: usize,
    /// Facts in each memory's archive before the daemon starts.
    #[arg(long, default_value_t = 100)]
    facts: usize,
    #[arg(long, default_value_t = 64)]
    max_open: usize,
    /// Memories whose first search is timed one by one.
    #[arg(long, default_value_t = 30)]
    cold: usize,
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// How long the clients post.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    #[arg(long, default_value = "minilm")]
    embedder: String,
}

impl From<ManyLoad> for bench::Load {
    fn from(m: ManyLoad) -> bench::Load {
        bench::Load {
            memories: m.memories,
            facts: m.facts,
            max_open: m.max_open,
            cold: m.cold,
            clients: m.clients,
            seconds: m.seconds.min(600),
            embedder: m.embedder,
        }
    }
}

/// The directory's configuration with the embedder named on the command line.
fn with_embedder(dir: &Path, name: &str) -> Result<Config> {
    let mut config = Config::load(dir)?;
    config.embedder.kind = super::embedder_kind(name)?;
    Ok(config)
}

fn print_line(r: &impl serde::Serialize) -> Result<()> {
    outln!("{}", serde_json::to_string(r)?)?;
    Ok(())
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    let rt = super::runtime()?;
    match args.what {
        What::Index {
            rows,
            appends,
            whole_file_every,
            embedder,
            r#in,
        } => rt.block_on(index(
            dir,
            &embedder,
            &r#in,
            &rows,
            (appends, whole_file_every),
        )),
        What::Embed {
            texts,
            batch,
            embedder,
        } => rt.block_on(embed(dir, texts, batch, &embedder)),
        What::Consolidate {
            entries,
            facts,
            embedder,
            r#in,
        } => rt.block_on(consolidate(dir, &embedder, &r#in, entries, &facts)),
        What::Serve {
            clients,
            seconds,
            embedder,
            r#in,
        } => {
            super::embedder_kind(&embedder)?;
            rt.block_on(serve(&embedder, &r#in, &clients, seconds.min(600)))
        }
        What::ServeMany { load, r#in } => {
            super::embedder_kind(&load.embedder)?;
            print_line(&rt.block_on(bench::serve_many(&r#in, &load.into()))?)
        }
        What::Days {
            days,
            facts,
            others,
            requests,
        } => day_counts(&rt, (&days, facts), others, requests),
        What::SearchPath {
            sizes,
            per_day,
            via,
            requests,
        } => search_path(&rt, (&sizes, per_day), via, requests),
        What::Versions {
            entries,
            edits,
            r#in,
        } => print_lines(
            entries
                .into_iter()
                .map(|n| bench::versions(&r#in, n, edits))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        What::Append {
            singles,
            batch_size,
            batches,
            r#in,
            json,
        } => append(&r#in, singles, batch_size, batches, json),
    }
}

/// `bench days`: search, append and the other requests at each count of
/// day files.
fn day_counts(
    rt: &tokio::runtime::Runtime,
    (days, facts): (&[usize], usize),
    others: usize,
    requests: Requests,
) -> Result<()> {
    let load = bench::DaysLoad {
        days,
        facts,
        requests: requests.load()?,
        others,
    };
    print_lines(rt.block_on(bench::days(&requests.r#in, &load))?)
}

/// `bench search-path`: one search and one append broken into their
/// steps at each table size (of `per_day` facts a day file).
fn search_path(
    rt: &tokio::runtime::Runtime,
    (sizes, per_day): (&[usize], usize),
    via: bench::Via,
    requests: Requests,
) -> Result<()> {
    let load = bench::PathLoad {
        sizes,
        per_day,
        requests: requests.load()?,
        via,
    };
    print_lines(rt.block_on(bench::search_path(&requests.r#in, &load))?)
}

/// `bench consolidate`: a run over `entries` entries for each count of
/// pending facts.
async fn consolidate(
    dir: &Path,
    embedder: &str,
    at: &Path,
    entries: usize,
    facts: &[usize],
) -> Result<()> {
    let config = with_embedder(dir, embedder)?;
    for &n in facts {
        print_line(&bench::consolidate(at, entries, n, config.clone()).await?)?;
    }
    Ok(())
}

/// `bench serve`: the daemon under each number of clients.
async fn serve(embedder: &str, at: &Path, clients: &[usize], seconds: u64) -> Result<()> {
    for &n in clients {
        print_line(&bench::serve(at, n, seconds, embedder).await?)?;
    }
    Ok(())
}

/// `bench index`: each table size, then (with `appends`) incremental sync
/// against re-embedding the whole day file.
async fn index(
    dir: &Path,
    embedder: &str,
    at: &Path,
    rows: &[usize],
    (appends, whole_file_every): (usize, usize),
) -> Result<()> {
    let config = with_embedder(dir, embedder)?;
    let embedder = memd::embed::from_config(&config.embedder)?;
    for &n in rows {
        print_line(&bench::index(at, n, embedder.clone()).await?)?;
    }
    if appends > 0 {
        let r = bench::reembed(at, appends, whole_file_every, embedder.clone());
        print_line(&r.await?)?;
    }
    Ok(())
}

fn append(at: &Path, singles: usize, batch_size: usize, batches: usize, json: bool) -> Result<()> {
    let r = bench::append(at, singles, batch_size, batches)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    outln!("append benchmark in {}", r.dir)?;
    outln!(
        "single fact (lock, write, fsync): n={} p50={:.3} ms p99={:.3} ms max={:.3} ms",
        r.single_appends,
        r.single_p50_ms,
        r.single_p99_ms,
        r.single_max_ms
    )?;
    outln!(
        "batch ({} x {} facts, one fsync each): {:.0} facts/s",
        r.batches,
        r.batch_size,
        r.batch_facts_per_second
    )?;
    Ok(())
}

/// `bench embed`: the embedder `embedder` names, on the benchmark's texts.
async fn embed(dir: &Path, texts: usize, batch: usize, embedder: &str) -> Result<()> {
    let config = with_embedder(dir, embedder)?;
    let embedder = memd::embed::from_config(&config.embedder)?;
    let mut r = bench::embed(texts, batch, embedder).await?;
    if config.embedder.kind == memd::config::EmbedderKind::Minilm {
        r.runtime = Some("onnx".into());
    }
    print_line(&r)
}
