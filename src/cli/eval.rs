//! `memd eval …`: memory quality on the public evaluation data (built
//! with the `lab` feature).

use std::path::{Path, PathBuf};
use std::sync::Arc;

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
        /// Also measure the search cutoff at these scores (0 to 1, comma
        /// separated): recall, hits per question, and hits for questions
        /// about somebody else.
        #[arg(long, value_delimiter = ',')]
        min_scores: Vec<f32>,
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
        /// Add each update as an agent that knows it is one: superseding
        /// the entries that hold the facts it replaces (`memd add
        /// --supersedes`).
        #[arg(long)]
        declared: bool,
        #[command(flatten)]
        judge: Judge,
        /// Leave each set's memory directories here (set-S/base,
        /// set-S/update-R) instead of deleting them.
        #[arg(long)]
        keep: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// The update decision both ways, through the real pipeline: pairs
    /// said a day apart, each consolidated; true updates kept as history,
    /// related-but-different facts left apart (false supersessions
    /// counted), same-meaning pairs merged, contradictions as history.
    Updates {
        #[arg(long, env = "MEMD_EVAL_DATA")]
        data: PathBuf,
        /// Pairs of each source.
        #[arg(long, default_value_t = 20)]
        pairs: usize,
        /// Picks the pairs.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[command(flatten)]
        judge: Judge,
        /// Measure memd's own rule alone, on every pair, no judge asked:
        /// how many memd would keep as an update if the judge said so.
        #[arg(long)]
        gate: bool,
        #[arg(long)]
        json: bool,
    },
    /// The tier-2 merge rule on labelled pairs: merges of pairs that say
    /// the same thing, and false merges, per variant and threshold.
    Dedup(Pairs),
    /// Candidate recall: is a fact's true partner among its top-k neighbours?
    Neighbours(Pairs),
    /// Forget a fact, add it back in other words: how often it stays out.
    Forget {
        #[arg(long, env = "MEMD_EVAL_DATA")]
        data: PathBuf,
        /// At most this many cases of each kind (the first ones).
        #[arg(long, default_value_t = 50)]
        cases: usize,
        #[command(flatten)]
        judge: Judge,
        #[arg(long)]
        json: bool,
    },
}

/// What an evaluation of labelled pairs reads and measures.
#[derive(clap::Args)]
struct Pairs {
    /// Directory of the evaluation data.
    #[arg(long, env = "MEMD_EVAL_DATA")]
    data: PathBuf,
    /// Embedder to measure (default: the configured one).
    #[arg(long)]
    embedder: Option<String>,
    #[arg(long)]
    json: bool,
}

pub fn run(dir: &Path, args: Args) -> Result<()> {
    match args.what {
        What::Locomo {
            data,
            conversations,
            sessions,
            min_scores,
            judge,
            json,
        } => locomo(
            dir,
            &data,
            (conversations, sessions, &min_scores),
            judge,
            json,
        ),
        What::Consolidation {
            data,
            sets,
            updates,
            seed,
            declared,
            judge,
            keep,
            json,
        } => {
            let config = config(dir, judge)?;
            let sample = memd::eval::letta::Sample {
                sets,
                updates,
                seed,
                declared,
            };
            let run = memd::eval::letta::run(&data, config, sample, keep.as_deref());
            let r = super::runtime()?.block_on(run)?;
            print_consolidation(&r, json)
        }
        What::Updates {
            data,
            pairs,
            seed,
            judge,
            gate,
            json,
        } => {
            if gate {
                let r = memd::eval::pairs::gate(&data)?;
                return super::emit(json, &r, print_gate);
            }
            let config = config(dir, judge)?;
            let run = memd::eval::pairs::run(&data, config, pairs, seed);
            let r = super::runtime()?.block_on(run)?;
            super::emit(json, &r, print_updates)
        }
        What::Neighbours(p) => neighbours(dir, &p.data, p.embedder, p.json),
        What::Dedup(p) => dedup(dir, &p.data, p.embedder, p.json),
        What::Forget {
            data,
            cases,
            judge,
            json,
        } => {
            let config = config(dir, judge)?;
            let r = super::runtime()?.block_on(memd::eval::forget::run(&data, config, cases))?;
            super::emit(json, &r, |r| {
                let mut out = format!("forgotten, then back in other words; judge {}\n", r.judge);
                for k in &r.kinds {
                    out.push_str(&format!(
                        "  {:<24} {:>4} / {:<4} kept out\n",
                        k.kind, k.kept_out, k.cases
                    ));
                    for (o, w) in &k.came_back {
                        out.push_str(&format!("    came back: {w:?} (forgotten: {o:?})\n"));
                    }
                }
                out
            })
        }
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
    (conversations, sessions, min_scores): (usize, usize, &[f32]),
    judge: Judge,
    json: bool,
) -> Result<()> {
    let config = config(dir, judge)?;
    let run = memd::eval::locomo::run(data, config, conversations, sessions, min_scores);
    let r = super::runtime()?.block_on(run)?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    outln!(
        "LoCoMo: {} conversations, {} sessions, judge {}",
        r.conversations,
        r.sessions,
        r.judge
    )?;
    outln!(
        "compression: {} facts -> {} entries ({:.2} facts per entry)",
        r.facts,
        r.entries,
        r.compression
    )?;
    outln!(
        "evidence recall@10: {}/{} = {:.3} ({} questions without observation evidence skipped)",
        r.found_at_10,
        r.questions,
        r.recall_at_10,
        r.questions_skipped
    )?;
    outln!(
        "MEMORY.md has the evidence of {}/{} questions; after every other question was searched, of {}/{} of the rest",
        r.core_covered,
        r.questions,
        r.core_covered_after_use,
        r.core_held_out
    )?;
    let all = r
        .cutoffs
        .iter()
        .find(|c| c.min_score == 0.0)
        .map(|c| c.evidence_hits);
    for c in &r.cutoffs {
        let dropped = all
            .map(|a| {
                format!(
                    ", {:.1}% of evidence hits dropped",
                    100.0 * (1.0 - c.evidence_hits as f64 / a.max(1) as f64)
                )
            })
            .unwrap_or_default();
        outln!(
            "min_score {:.2}: recall@10 {}/{} = {:.3}{dropped}, {:.2} hits a question; questions about somebody else: {:.2} hits, {:.0}% given none",
            c.min_score,
            c.found_at_10,
            r.questions,
            c.recall_at_10,
            c.hits_per_question,
            c.hits_per_foreign_question,
            100.0 * c.foreign_answered_empty
        )?;
    }
    print_cost(
        r.llm_calls,
        (r.prompt_tokens, r.completion_tokens),
        r.wall_seconds,
    )
}

/// The last line of every evaluation: what the judge cost.
fn print_cost(calls: usize, (prompt, completion): (u64, u64), wall_seconds: f64) -> Result<()> {
    outln!(
        "LLM calls {calls}, prompt tokens {prompt}, completion tokens {completion}, wall {wall_seconds:.1} s"
    )
}

fn print_consolidation(r: &memd::eval::letta::LettaReport, json: bool) -> Result<()> {
    if json {
        outln!("{}", serde_json::to_string_pretty(r)?)?;
        return Ok(());
    }
    let u = &r.updates;
    outln!(
        "consolidation on Letta sets {:?}, judge {}",
        r.sets,
        r.judge
    )?;
    outln!(
        "ingest: {} facts -> {} entries; false merges {}; ingest failed (still pending) {}",
        r.facts,
        r.entries_after_ingest,
        r.false_merges,
        r.ingest_failed
    )?;
    outln!(
        "updates ({} rows): kept as history {}, current only {}, added beside the stale entry {}, still pending {}, lost {}",
        r.update_rows,
        u.history,
        u.current_only,
        u.beside,
        u.pending,
        u.lost
    )?;
    for line in &r.outcomes {
        outln!("  {line}")?;
    }
    outln!(
        "the set's question searched after each update: top hit states the new answer as current {} of {}; old answer among the 10 hits {}",
        r.current_top,
        r.update_rows,
        r.before_found
    )?;
    outln!(
        "questions about facts the update left alone: top hit states the fact {} of {}",
        r.others_top,
        r.others_asked
    )?;
    outln!(
        "right top hits under the default min_score {}: {} of {}",
        memd::config::MIN_SCORE,
        r.right_under_cutoff,
        r.current_top + r.others_top
    )?;
    outln!(
        "facts lost {}; other entries touched {}; entries with invented content {}; invalid judge replies {}",
        r.facts_lost,
        r.others_touched,
        r.invented,
        r.invalid_replies
    )?;
    print_cost(
        r.llm_calls,
        (r.prompt_tokens, r.completion_tokens),
        r.wall_seconds,
    )
}

/// The embedder an evaluation without a judge measures: the directory's
/// (a memory directory is optional here), or `kind`.
fn embedder(dir: &Path, kind: Option<String>) -> Result<Arc<dyn memd::embed::Embedder>> {
    let mut config = Config::load(dir)?;
    if let Some(kind) = kind {
        config.embedder.kind = super::embedder_kind(&kind)?;
    }
    Ok(memd::embed::from_config(&config.embedder)?)
}

fn cache_dir() -> PathBuf {
    std::env::temp_dir().join("memd-eval-cache")
}

fn dedup(dir: &Path, data: &Path, kind: Option<String>, json: bool) -> Result<()> {
    let embedder = embedder(dir, kind)?;
    let cache = cache_dir();
    let r = super::runtime()?.block_on(memd::eval::dedup::run(data, embedder, &cache))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&r)?)?;
        return Ok(());
    }
    outln!(
        "tier-2 merge rule on labelled pairs, embedder {}",
        r.embedder
    )?;
    for (i, s) in r.sources.iter().enumerate() {
        let label = if s.same { "same" } else { "different" };
        let [q1, q2, q3] = s.cosine_quartiles;
        outln!(
            "  s{}: {} ({label}, {} pairs; cosine quartiles {q1:.2} {q2:.2} {q3:.2})",
            i + 1,
            s.name,
            s.pairs
        )?;
    }
    let heads: Vec<String> = (1..=r.sources.len()).map(|i| format!("s{i}")).collect();
    outln!(
        "{:<9} {:<5} {:>6}  {:>6} {:>6}  {}",
        "words",
        "stem",
        "cosine",
        "same",
        "false",
        heads.join(" ")
    )?;
    for row in &r.rows {
        let shipped = if row.rule == r.shipped {
            "  <- shipped"
        } else {
            ""
        };
        let per: Vec<String> = row.merged.iter().map(|n| n.to_string()).collect();
        outln!(
            "{:<9} {:<5} {:>6.2}  {:>6} {:>6}  {}{shipped}",
            format!("{:?}", row.rule.words).to_lowercase(),
            row.rule.stem,
            row.rule.min_cosine,
            row.merges_of_same,
            row.false_merges,
            per.join(" ")
        )?;
    }
    outln!("share of pairs memd add would show as similar (cosine at least):")?;
    for t in &r.shown {
        let per: Vec<String> = t.share.iter().map(|v| format!("{v:.2}")).collect();
        let shipped = if t.min_cosine == r.similar_min {
            "  <- shipped"
        } else {
            ""
        };
        outln!("  {:.2}  {}{shipped}", t.min_cosine, per.join(" "))?;
    }
    print_parts(&r)
}

/// The leading-clause table of `memd eval dedup`.
fn print_parts(r: &memd::eval::dedup::DedupReport) -> Result<()> {
    outln!(
        "leading-clause merges (a text folded into one that says it and more), pairs both ways round:"
    )?;
    outln!(
        "  {:>6}  {:>13} {:>17} {:>6} {:>5}",
        "cosine",
        "sick-entailed",
        "sick-not-entailed",
        "letta",
        "mrpc"
    )?;
    for p in &r.parts {
        let shipped = match p.min_cosine == r.part_shipped {
            true => "  <- shipped",
            false => "",
        };
        outln!(
            "  {:>6.2}  {:>13} {:>17} {:>6} {:>5}{shipped}",
            p.min_cosine,
            p.sick_entailed,
            p.sick_not_entailed,
            p.letta,
            p.mrpc
        )?;
    }
    if let Some(p) = r.parts.iter().find(|p| p.min_cosine == r.part_shipped) {
        for (whole, part) in &p.mrpc_merged {
            outln!("  mrpc merged: {part:?}  into  {whole:?}")?;
        }
    }
    Ok(())
}

fn neighbours(dir: &Path, data: &Path, kind: Option<String>, json: bool) -> Result<()> {
    let embedder = embedder(dir, kind)?;
    let name = embedder.id();
    let reports =
        super::runtime()?.block_on(memd::eval::neighbours(data, embedder, &cache_dir()))?;
    if json {
        outln!("{}", serde_json::to_string_pretty(&reports)?)?;
        return Ok(());
    }
    outln!("neighbour recall, embedder {name}")?;
    outln!(
        "{:<30} {:>6} {:>7}  recall@1/5/8/20",
        "source",
        "pool",
        "queries"
    )?;
    for r in reports {
        let rec: Vec<String> = r.recall.iter().map(|(_, v)| format!("{v:.3}")).collect();
        outln!(
            "{:<30} {:>6} {:>7}  {}",
            r.source,
            r.pool,
            r.queries,
            rec.join(" / ")
        )?;
    }
    Ok(())
}

/// The table of `memd eval updates`.
fn print_updates(r: &memd::eval::pairs::PairsReport) -> String {
    let mut out = format!(
        "the update decision on pairs said a day apart; judge {}, seed {}, {:.0} s\n",
        r.judge, r.seed, r.wall_seconds
    );
    out.push_str(&format!(
        "  {:<30} {:<11} {:>5} {:>5} {:>6} {:>10} {:>6} {:>4}\n",
        "source", "right", "pairs", "apart", "merged", "superseded", "failed", "lost"
    ));
    for s in &r.sources {
        out.push_str(&format!(
            "  {:<30} {:<11} {:>5} {:>5} {:>6} {:>10} {:>6} {:>4}\n",
            s.name,
            format!("{:?}", s.expect).to_lowercase(),
            s.pairs,
            s.apart,
            s.merged,
            s.superseded,
            s.failed,
            s.lost
        ));
    }
    out.push_str(&format!(
        "false supersessions: {} of {} related-but-different pairs\n",
        r.false_supersessions, r.different_pairs
    ));
    for (source, outcome, a, b) in &r.wrong {
        out.push_str(&format!("  {source}: {outcome:?}: {a:?} then {b:?}\n"));
    }
    out
}

fn print_gate(r: &memd::eval::pairs::GateReport) -> String {
    let mut out = String::from(
        "memd's update rule alone: pairs memd keeps as an update when a judge says so\n",
    );
    out.push_str(&format!(
        "  {:<30} {:>6} {:>8} {:>6}\n",
        "source", "pairs", "accepted", "share"
    ));
    for (name, pairs, accepted) in &r.sources {
        let share = 100.0 * *accepted as f64 / (*pairs).max(1) as f64;
        out.push_str(&format!(
            "  {name:<30} {pairs:>6} {accepted:>8} {share:>5.1}%\n"
        ));
    }
    out.push_str("in a Letta set's cluster (its 10 facts shown as entries)\n");
    for (name, cases, counted) in &r.in_sets {
        let share = 100.0 * *counted as f64 / (*cases).max(1) as f64;
        out.push_str(&format!(
            "  {name:<62} {counted:>5} of {cases:>5} {share:>5.1}%\n"
        ));
    }
    out
}
