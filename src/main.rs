//! The `memd` command line: parses arguments and calls the library.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use memd::archive;
use memd::config::Config;
use memd::index::Index;
use memd::service::Backend;
use memd::{Layout, bench, layout, status};

/// For each appended fact, the existing entries most like it.
fn similar_entries(
    layout: &Layout,
    appended: &[archive::Appended],
) -> Result<Vec<Vec<memd::index::search::Hit>>> {
    let config = Config::load(&layout.root)?;
    runtime()?.block_on(async {
        let index = Index::open(layout, &config).await?;
        // A running daemon owns the index (and syncs it): read only.
        if memd::daemon::running(layout).is_none() {
            index.sync().await?;
        }
        let mut out = Vec::new();
        for a in appended {
            out.push(index.similar_entries(&a.text, 3).await?);
        }
        anyhow::Ok(out)
    })
}

/// `--embedder NAME`, read the way `[embedder] kind` is read.
fn embedder_kind(name: &str) -> Result<memd::config::EmbedderKind> {
    serde_json::from_value(serde_json::Value::String(name.to_string()))
        .context("--embedder takes minilm, openai or lexical")
}

/// The configuration an evaluation runs with: the directory's, with the
/// command line's LLM and embedder choices on top.
fn eval_config(
    dir: &std::path::Path,
    llm_url: Option<String>,
    llm_model: Option<String>,
    embedder: Option<String>,
) -> Result<Config> {
    let mut config = Config::load(dir)?;
    if let Some(u) = llm_url {
        config.llm.base_url = u;
    }
    if let Some(m) = llm_model {
        config.llm.model = m;
    }
    if let Some(kind) = embedder {
        config.embedder.kind = embedder_kind(&kind)?;
    }
    Ok(config)
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

#[derive(Parser)]
#[command(
    name = "memd",
    version,
    about = "Long-term memory for AI agents, kept as plain markdown"
)]
struct Cli {
    /// The memory directory (default: $MEMD_DIR, else the current directory).
    #[arg(long, global = true, env = "MEMD_DIR")]
    dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Create a memory directory (default: --dir, else the current directory).
    Init { path: Option<PathBuf> },
    /// Append a fact to today's archive and print its id.
    Add {
        /// The fact (one line). Omit with --stdin.
        text: Option<String>,
        /// Read facts from standard input, one per line (blank lines skipped).
        #[arg(long, conflicts_with = "text")]
        stdin: bool,
        #[arg(long, short)]
        category: Option<String>,
        #[arg(long, short)]
        session: Option<String>,
        /// Idempotency key: a retried append with the same key writes nothing.
        /// With --stdin, line N gets the key `KEY#N`.
        #[arg(long)]
        key: Option<String>,
        /// Print one JSON object per fact.
        #[arg(long)]
        json: bool,
        /// Do not look up similar existing entries after the write.
        #[arg(long)]
        no_similar: bool,
    },
    /// Hybrid search (vector + full text) over facts, entries and MEMORY.md.
    /// Syncs files that changed first.
    Search {
        query: String,
        #[arg(short, long)]
        k: Option<usize>,
        #[arg(long)]
        json: bool,
    },
    /// Fold pending archive facts into consolidated/memory.md and refresh
    /// MEMORY.md (gated by time and volume; --force skips the gate).
    Consolidate {
        /// Run even if min_hours or min_facts say not yet (never while
        /// another run holds the lock).
        #[arg(long)]
        force: bool,
        /// Print the planned operations as a diff; write nothing.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
    /// Forget an entry (or a pending fact) for good: it is removed and
    /// tombstoned, so neither a reindex nor a restatement brings it back.
    Forget {
        /// Entry id (e-…) or archive fact id (DAY#HASH).
        id: Option<String>,
        /// List entries and pending facts containing TEXT instead.
        #[arg(long, value_name = "TEXT", conflicts_with = "id")]
        r#match: Option<String>,
        /// With --match: forget everything listed.
        #[arg(long, requires = "match")]
        yes: bool,
    },
    /// Print an entry's lineage from the journal (entries merged into it
    /// included).
    History {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Bring the index in step with the files; --clear rebuilds it from scratch.
    Reindex {
        #[arg(long)]
        clear: bool,
    },
    /// Keep the index in step with the files until interrupted (file events
    /// plus a periodic reconcile).
    Watch {
        #[arg(long, default_value_t = 30)]
        reconcile_seconds: u64,
    },
    /// Show the state of the memory directory and the configuration in force.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Run the daemon for this directory: watcher, consolidation loop,
    /// index upkeep and the HTTP API (until SIGINT or SIGTERM).
    Serve {
        /// Address to listen on (default: [server] listen, 127.0.0.1:7437).
        /// A non-loopback address needs MEMD_TOKEN.
        #[arg(long)]
        listen: Option<String>,
    },
    /// A Model Context Protocol server on stdin/stdout (tools: remember,
    /// recall, forget, core_memory, consolidate).
    Mcp,
    /// Measure memory quality on the public evaluation data.
    Eval {
        #[command(subcommand)]
        what: EvalCommand,
    },
    /// Measure memd's own speed.
    Bench {
        #[command(subcommand)]
        what: BenchCommand,
    },
}

#[derive(Subcommand)]
enum EvalCommand {
    /// LoCoMo conversations streamed session by session, consolidating
    /// after each: compression and evidence recall@10 of `memd search`.
    Locomo {
        #[arg(long, default_value = "../shared/evaldata")]
        data: PathBuf,
        #[arg(long, default_value_t = 1)]
        conversations: usize,
        /// Sessions per conversation (from the first).
        #[arg(long, default_value_t = 5)]
        sessions: usize,
        #[arg(long)]
        llm_url: Option<String>,
        #[arg(long)]
        llm_model: Option<String>,
        #[arg(long)]
        embedder: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Consolidation quality on the Letta fact sets, through the real
    /// pipeline with the configured judge (an LLM, or the built-in one):
    /// false merges, facts lost, updates kept as history, LLM cost.
    Consolidation {
        #[arg(long, default_value = "../shared/evaldata")]
        data: PathBuf,
        /// How many fact sets.
        #[arg(long, default_value_t = 5)]
        sets: usize,
        /// Most update rows per set.
        #[arg(long, default_value_t = 3)]
        updates: usize,
        /// Picks the sets.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// LLM endpoint (default: [llm] base_url; empty = built-in judge).
        #[arg(long)]
        llm_url: Option<String>,
        #[arg(long)]
        llm_model: Option<String>,
        /// Embedder (default: the configured one).
        #[arg(long)]
        embedder: Option<String>,
        /// Leave each set's memory directories here (set-S/base,
        /// set-S/update-R) instead of deleting them.
        #[arg(long)]
        keep: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Candidate recall: is a fact's true partner among its top-k neighbours?
    Neighbours {
        /// Directory of the evaluation data.
        #[arg(long, default_value = "../shared/evaldata")]
        data: PathBuf,
        /// Embedder to measure (default: the configured one).
        #[arg(long)]
        embedder: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
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

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("MEMD_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memd: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    let dir = cli.dir.unwrap_or_else(|| PathBuf::from("."));
    match cli.command {
        Command::Init { path } => {
            let root = path.unwrap_or(dir);
            let layout = layout::init(&root)?;
            println!("initialised memory directory {}", layout.root.display());
            Ok(())
        }
        Command::Add {
            text,
            stdin,
            category,
            session,
            key,
            json,
            no_similar,
        } => {
            let layout = Layout::open(&dir)?;
            let texts: Vec<String> = if stdin {
                let mut input = String::new();
                std::io::stdin()
                    .read_to_string(&mut input)
                    .context("reading standard input")?;
                input
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .map(String::from)
                    .collect()
            } else {
                match text {
                    Some(t) => vec![t],
                    None => bail!("give the fact as an argument, or use --stdin"),
                }
            };
            let facts = archive::new_facts(texts, category, session, key, stdin);
            let appended = archive::append_now(&layout, &facts)?;
            // The facts are durable now; similar entries are information only,
            // so a failure here is a warning, never an error.
            let similar = if no_similar || facts.len() > 20 {
                Vec::new()
            } else {
                match similar_entries(&layout, &appended) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!("similar entries not shown: {e:#}");
                        Vec::new()
                    }
                }
            };
            for (i, a) in appended.iter().enumerate() {
                let sim = similar.get(i).cloned().unwrap_or_default();
                if json {
                    let mut v = serde_json::to_value(a)?;
                    v["similar"] = serde_json::to_value(&sim)?;
                    println!("{v}");
                    continue;
                }
                if a.written {
                    println!("{}", a.id);
                } else {
                    println!("{} (already written under this key)", a.id);
                }
                for h in sim {
                    println!("  similar entry {}: {}", h.id, h.text.replace('\n', " "));
                }
            }
            Ok(())
        }
        Command::Search { query, k, json } => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            let k = k.unwrap_or(config.search.default_k as usize);
            let backend = Backend::for_dir(&layout);
            let hits = runtime()?.block_on(backend.search(&layout, &config, &query, k))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&hits)?);
            } else if hits.is_empty() {
                println!("no results");
            } else {
                for h in hits {
                    println!(
                        "{:.4}  {:<5}  {}  {}",
                        h.score,
                        h.kind,
                        h.id,
                        h.text.replace('\n', " ")
                    );
                }
            }
            Ok(())
        }
        Command::Consolidate {
            force,
            dry_run,
            json,
        } => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            let backend = Backend::for_dir(&layout);
            if let Some(via) = backend.describe() {
                eprintln!("memd: {via}");
            }
            let report = runtime()?.block_on(backend.consolidate(
                &layout,
                &config,
                memd::consolidate::Options { force, dry_run },
            ))?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(())
        }
        Command::Forget { id, r#match, yes } => {
            let layout = Layout::open(&dir)?;
            let ids: Vec<String> = match (id, r#match) {
                (Some(id), _) => vec![id],
                (None, Some(text)) => {
                    let found = memd::forget::candidates(&layout, &text)?;
                    if found.is_empty() {
                        println!("nothing matches {text:?}");
                        return Ok(());
                    }
                    for c in &found {
                        println!("{:<5}  {}  {}", c.kind, c.id, c.text.replace('\n', " "));
                    }
                    if !yes {
                        println!(
                            "\nnothing forgotten yet: `memd forget ID` forgets one, `--match {text:?} --yes` all of these"
                        );
                        return Ok(());
                    }
                    found.into_iter().map(|c| c.id).collect()
                }
                (None, None) => bail!("give an id to forget, or --match TEXT to list candidates"),
            };
            let config = Config::load(&layout.root)?;
            let backend = Backend::for_dir(&layout);
            let rt = runtime()?;
            for id in ids {
                let gone = rt.block_on(backend.forget(&layout, &config, &id))?;
                println!(
                    "forgot {} {}: {}",
                    gone.kind,
                    gone.id,
                    gone.text.replace('\n', " ")
                );
            }
            Ok(())
        }
        Command::History { id, json } => {
            let layout = Layout::open(&dir)?;
            let records = memd::forget::history(&layout, &id)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&records)?);
            } else if records.is_empty() {
                println!("no journal records for {id}");
            } else {
                for r in &records {
                    print!("{}", memd::forget::render_record(r));
                }
            }
            Ok(())
        }
        Command::Reindex { clear } => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            let backend = Backend::for_dir(&layout);
            if let Some(via) = backend.describe() {
                eprintln!("memd: {via}");
            }
            let report = runtime()?.block_on(backend.reindex(&layout, &config, clear))?;
            println!(
                "{} files checked, {} synced, {} rows added, {} deleted; {} rows in the index",
                report.0.files_checked,
                report.0.files_synced,
                report.0.rows_added,
                report.0.rows_deleted,
                report.1
            );
            Ok(())
        }
        Command::Serve { listen } => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            runtime()?.block_on(memd::daemon::serve(layout, config, listen))
        }
        Command::Mcp => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            runtime()?.block_on(memd::mcp::serve_stdio(layout, config))
        }
        Command::Watch { reconcile_seconds } => {
            let layout = Layout::open(&dir)?;
            if let Some(d) = memd::daemon::running(&layout) {
                bail!(
                    "the daemon (pid {}, {}) already watches this directory",
                    d.pid,
                    d.listen
                );
            }
            let config = Config::load(&layout.root)?;
            runtime()?.block_on(async {
                let index = Index::open(&layout, &config).await?;
                eprintln!("memd: watching {} (Ctrl-C to stop)", layout.root.display());
                memd::watch::run(
                    &layout,
                    &index,
                    std::time::Duration::from_secs(reconcile_seconds.max(1)),
                    async {
                        let _ = tokio::signal::ctrl_c().await;
                    },
                )
                .await
            })
        }
        Command::Status { json } => {
            let layout = Layout::open(&dir)?;
            let config = Config::load(&layout.root)?;
            let report = status::gather(&layout, &config)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", report.render());
            }
            Ok(())
        }
        Command::Eval { what } => match what {
            EvalCommand::Locomo {
                data,
                conversations,
                sessions,
                llm_url,
                llm_model,
                embedder,
                json,
            } => {
                let config = eval_config(&dir, llm_url, llm_model, embedder)?;
                let r = runtime()?.block_on(memd::eval::locomo::run(
                    &data,
                    config,
                    conversations,
                    sessions,
                ))?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&r)?);
                } else {
                    println!(
                        "LoCoMo: {} conversations, {} sessions, judge {}",
                        r.conversations, r.sessions, r.judge
                    );
                    println!(
                        "compression: {} facts -> {} entries ({:.2} facts per entry)",
                        r.facts, r.entries, r.compression
                    );
                    println!(
                        "evidence recall@10: {}/{} = {:.3} ({} questions without observation evidence skipped)",
                        r.found_at_10, r.questions, r.recall_at_10, r.questions_skipped
                    );
                    println!(
                        "LLM calls {}, prompt tokens {}, completion tokens {}, wall {:.1} s",
                        r.llm_calls, r.prompt_tokens, r.completion_tokens, r.wall_seconds
                    );
                }
                Ok(())
            }
            EvalCommand::Consolidation {
                data,
                sets,
                updates,
                seed,
                llm_url,
                llm_model,
                embedder,
                keep,
                json,
            } => {
                let config = eval_config(&dir, llm_url, llm_model, embedder)?;
                let r = runtime()?.block_on(memd::eval::letta::run(
                    &data,
                    config,
                    sets,
                    updates,
                    seed,
                    keep.as_deref(),
                ))?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&r)?);
                } else {
                    let u = &r.updates;
                    println!(
                        "consolidation on Letta sets {:?}, judge {}",
                        r.sets, r.judge
                    );
                    println!(
                        "ingest: {} facts -> {} entries; false merges {}",
                        r.facts, r.entries_after_ingest, r.false_merges
                    );
                    println!(
                        "updates ({} rows): kept as history {}, current only {}, added beside the stale entry {}, still pending {}, lost {}",
                        r.update_rows, u.history, u.current_only, u.beside, u.pending, u.lost
                    );
                    for line in &r.outcomes {
                        println!("  {line}");
                    }
                    println!(
                        "facts lost {}; other entries touched {}; entries with invented content {}",
                        r.facts_lost, r.others_touched, r.invented
                    );
                    println!(
                        "LLM calls {}, prompt tokens {}, completion tokens {}, wall {:.1} s",
                        r.llm_calls, r.prompt_tokens, r.completion_tokens, r.wall_seconds
                    );
                }
                Ok(())
            }
            EvalCommand::Neighbours {
                data,
                embedder,
                json,
            } => {
                // A memory directory is optional here: its config if there is one.
                let mut config = Config::load(&dir)?;
                if let Some(kind) = embedder {
                    config.embedder.kind = embedder_kind(&kind)?;
                }
                let embedder = memd::embed::from_config(&config.embedder)?;
                let name = embedder.id();
                let cache = std::env::temp_dir().join("memd-eval-cache");
                let reports =
                    runtime()?.block_on(memd::eval::neighbours(&data, embedder, &cache))?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&reports)?);
                } else {
                    println!("neighbour recall, embedder {name}");
                    println!(
                        "{:<30} {:>6} {:>7}  recall@1/5/8/20",
                        "source", "pool", "queries"
                    );
                    for r in reports {
                        let rec: Vec<String> =
                            r.recall.iter().map(|(_, v)| format!("{v:.3}")).collect();
                        println!(
                            "{:<30} {:>6} {:>7}  {}",
                            r.source,
                            r.pool,
                            r.queries,
                            rec.join(" / ")
                        );
                    }
                }
                Ok(())
            }
        },
        Command::Bench { what } => match what {
            BenchCommand::Index {
                rows,
                appends,
                whole_file_every,
                embedder,
                r#in,
            } => {
                let mut config = Config::load(&dir)?;
                config.embedder.kind = embedder_kind(&embedder)?;
                let embedder = memd::embed::from_config(&config.embedder)?;
                runtime()?.block_on(async {
                    for n in rows {
                        let r = bench::index(&r#in, n, embedder.clone()).await?;
                        println!("{}", serde_json::to_string(&r)?);
                    }
                    if appends > 0 {
                        let r = bench::reembed(&r#in, appends, whole_file_every, embedder.clone())
                            .await?;
                        println!("{}", serde_json::to_string(&r)?);
                    }
                    anyhow::Ok(())
                })
            }
            BenchCommand::Embed {
                texts,
                batch,
                embedder,
            } => {
                let mut config = Config::load(&dir)?;
                config.embedder.kind = embedder_kind(&embedder)?;
                let embedder = memd::embed::from_config(&config.embedder)?;
                let r = runtime()?.block_on(bench::embed(texts, batch, embedder))?;
                println!("{}", serde_json::to_string(&r)?);
                Ok(())
            }
            BenchCommand::Consolidate {
                entries,
                facts,
                embedder,
                r#in,
            } => {
                let mut config = Config::load(&dir)?;
                config.embedder.kind = embedder_kind(&embedder)?;
                runtime()?.block_on(async {
                    for n in facts {
                        let r = bench::consolidate(&r#in, entries, n, config.clone()).await?;
                        println!("{}", serde_json::to_string(&r)?);
                    }
                    anyhow::Ok(())
                })
            }
            BenchCommand::Serve {
                clients,
                seconds,
                embedder,
                r#in,
            } => {
                embedder_kind(&embedder)?;
                runtime()?.block_on(async {
                    for n in clients {
                        let r = bench::serve(&r#in, n, seconds.min(600), &embedder).await?;
                        println!("{}", serde_json::to_string(&r)?);
                    }
                    anyhow::Ok(())
                })
            }
            BenchCommand::Append {
                singles,
                batch_size,
                batches,
                r#in,
                json,
            } => {
                let r = bench::append(&r#in, singles, batch_size, batches)?;
                if json {
                    println!("{}", serde_json::to_string_pretty(&r)?);
                } else {
                    println!("append benchmark in {}", r.dir);
                    println!(
                        "single fact (lock, write, fsync): n={} p50={:.3} ms p99={:.3} ms max={:.3} ms",
                        r.single_appends, r.single_p50_ms, r.single_p99_ms, r.single_max_ms
                    );
                    println!(
                        "batch ({} x {} facts, one fsync each): {:.0} facts/s",
                        r.batches, r.batch_size, r.batch_facts_per_second
                    );
                }
                Ok(())
            }
        },
    }
}
