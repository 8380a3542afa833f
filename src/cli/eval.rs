//! `memd eval …`: memory quality on the public evaluation data (built
//! with the `lab` feature).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;

use memd::config::Config;

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    what: What,
}

/// The LLM and embedder an evaluation runs with.
#[derive(clap::Args)]
struct Judge {
    /// LLM endpoint (default: [llm] base_url; empty = built-in judge).
    #[arg(long)]
    llm_url: Option<String>,
    #[arg(long)]
    llm_model: Option<String>,
    /// Embedder (default: the configured one).
    #[arg(long)]
    embedder: Option<String>,
}

#[derive(Subcommand)]
enum What {
    /// LoCoMo conversations streamed session by session, consolidating
    /// after each: compression and evidence recall@10 of `memd search`.
    Locomo {
        /// Directory of the evaluation data.
        #[arg(long, env = "MEMD_EVAL_DATA")]
        data: PathBuf,
        #[arg(long, default_value_t = 1)]
        conversations: usize,
        /// Sessions per conversation (from the first).
        #[arg(long, default_value_t = 5)]
        sessions: usize,
        #[command(flatten)]
        judge: Judge,
        #[arg(long)]
        json: bool,
    },
    /// Consolidation quality on the Letta fact sets, through the real
    /// pipeline with the configured judge (an LLM, or the built-in one):
    /// false merges, facts lost, updates kept as history, LLM cost.
    Consolidation {
        /// Directory of the evaluation data.
        #[arg(long, env = "MEMD_EVAL_DATA")]
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
        #[command(flatten)]
        judge: Judge,
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
        #[arg(long, env = "MEMD_EVAL_DATA")]
        data: PathBuf,
        /// Embedder to measure (default: the configured one).
        #[arg(long)]
        embedder: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    match args.what {
        What::Locomo {
            data,
            conversations,
            sessions,
            judge,
            json,
        } => locomo(dir, &data, conversations, sessions, judge, json),
        What::Consolidation {
            data,
            sets,
            updates,
            seed,
            judge,
            keep,
            json,
        } => {
            let config = config(dir, judge)?;
            let run = memd::eval::letta::run(&data, config, sets, updates, seed, keep.as_deref());
            let r = super::runtime()?.block_on(run)?;
            print_consolidation(&r, json)
        }
        What::Neighbours {
            data,
            embedder,
            json,
        } => neighbours(dir, &data, embedder, json),
    }
}

/// The configuration an evaluation runs with: the directory's, with the
/// command line's LLM and embedder choices on top.
fn config(dir: &Path, judge: Judge) -> Result<Config> {
    let mut config = Config::load(dir)?;
    if let Some(u) = judge.llm_url {
        config.llm.base_url = u;
    }
    if let Some(m) = judge.llm_model {
        config.llm.model = m;
    }
    if let Some(kind) = judge.embedder {
        config.embedder.kind = super::embedder_kind(&kind)?;
    }
    Ok(config)
}

fn locomo(
    dir: &Path,
    data: &Path,
    conversations: usize,
    sessions: usize,
    judge: Judge,
    json: bool,
) -> Result<()> {
    let config = config(dir, judge)?;
    let run = memd::eval::locomo::run(data, config, conversations, sessions);
    let r = super::runtime()?.block_on(run)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
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
    print_cost(
        r.llm_calls,
        (r.prompt_tokens, r.completion_tokens),
        r.wall_seconds,
    );
    Ok(())
}

/// The last line of every evaluation: what the judge cost.
fn print_cost(calls: usize, (prompt, completion): (u64, u64), wall_seconds: f64) {
    println!(
        "LLM calls {calls}, prompt tokens {prompt}, completion tokens {completion}, wall {wall_seconds:.1} s"
    );
}

fn print_consolidation(r: &memd::eval::letta::LettaReport, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(r)?);
        return Ok(());
    }
    let u = &r.updates;
    println!(
        "consolidation on Letta sets {:?}, judge {}",
        r.sets, r.judge
    );
    println!(
        "ingest: {} facts -> {} entries; false merges {}; ingest failed (still pending) {}",
        r.facts, r.entries_after_ingest, r.false_merges, r.ingest_failed
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
    print_cost(
        r.llm_calls,
        (r.prompt_tokens, r.completion_tokens),
        r.wall_seconds,
    );
    Ok(())
}

fn neighbours(dir: &Path, data: &Path, embedder: Option<String>, json: bool) -> Result<()> {
    // A memory directory is optional here: its config if there is one.
    let mut config = Config::load(dir)?;
    if let Some(kind) = embedder {
        config.embedder.kind = super::embedder_kind(&kind)?;
    }
    let embedder = memd::embed::from_config(&config.embedder)?;
    let name = embedder.id();
    let cache = std::env::temp_dir().join("memd-eval-cache");
    let reports = super::runtime()?.block_on(memd::eval::neighbours(data, embedder, &cache))?;
    if json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
        return Ok(());
    }
    println!("neighbour recall, embedder {name}");
    println!(
        "{:<30} {:>6} {:>7}  recall@1/5/8/20",
        "source", "pool", "queries"
    );
    for r in reports {
        let rec: Vec<String> = r.recall.iter().map(|(_, v)| format!("{v:.3}")).collect();
        println!(
            "{:<30} {:>6} {:>7}  {}",
            r.source,
            r.pool,
            r.queries,
            rec.join(" / ")
        );
    }
    Ok(())
}
