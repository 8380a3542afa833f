//! Decide: the judge of each cluster — an LLM (one call per cluster,
//! bounded concurrency, an invalid reply asked again naming what was
//! wrong) or, with no LLM configured, the built-in judge (restatements
//! in nearly the same words KEEP, see `plan`; updates the words show
//! REPLACE with history, see `judged`; everything else ADD).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::time::{Duration, Instant};

use futures::StreamExt;

use super::ops::{self, Cluster, ForgottenBy, Group, Op};
use super::plan::{self, Inputs};
use super::planned::{Decided, Decision, Planned};
use super::reply::{self, per_fact, update};
use super::report::{Report, Suppressed};
use crate::archive::Fact;
use crate::config::{Config, Request};
use crate::duplicate::Rule;
use crate::embed::cache::Cached;
use crate::ids::RunId;
use crate::llm::{self, Message};
use crate::state::State;
use crate::text::short_hash;
use crate::tombstones::{Reason, Tombstone};
use crate::usage::Budget;
use crate::{Memory, Result, prompts};

/// Who decides what the pending facts do to the entries.
pub enum Judge {
    /// No LLM configured: restatements in nearly the same words KEEP
    /// (`crate::duplicate`), updates the words show REPLACE with history
    /// (`crate::update`), everything else ADD.
    BuiltIn,
    Llm(llm::Client),
}

impl Judge {
    pub fn from_config(config: &Config) -> Result<Judge> {
        Ok(if config.llm.configured() {
            Judge::Llm(llm::Client::new(&config.llm)?)
        } else {
            Judge::BuiltIn
        })
    }

    /// The judge of run `run` of `memory`: its LLM's calls held to the
    /// day's budget and recorded ([`crate::usage`]).
    pub fn for_run(memory: &Memory, run: &RunId) -> Result<Judge> {
        Ok(match Judge::from_config(&memory.config)? {
            Judge::Llm(client) => {
                let limit = memory.config.llm.daily_budget();
                let budget = Budget::open(&memory.layout, memory.clock, run, limit)?;
                Judge::Llm(client.with_budget(budget))
            }
            built_in => built_in,
        })
    }

    /// A short name for run and evaluation reports.
    pub(crate) fn label(config: &Config) -> String {
        if config.llm.configured() {
            format!("llm {} at {}", config.llm.model, config.llm.base_url)
        } else {
            "built-in".into()
        }
    }

    /// One line for `memd status`: which judge, and what that means.
    pub fn describe(config: &Config) -> String {
        if config.llm.configured() {
            format!("llm: {} at {}", config.llm.model, config.llm.base_url)
        } else {
            "built-in (no LLM configured: a fact merges into an entry or another fact that says \
             it in nearly the same words, replaces one it updates by its words (\"now\", a new \
             value) keeping the old text as history, and everything else is added; promotion \
             ranks by recall and recency, current first)"
                .into()
        }
    }
}

/// What the LLM judge of a run spent.
#[derive(Debug, Default)]
pub struct Spent {
    pub calls: usize,
    /// Replies that could not be used (invalid JSON, or ops validation
    /// refused), each asked again or followed by the fallback.
    pub invalid: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub llm_ms: f64,
}

/// The prompt templates of a run.
pub(crate) struct Templates<'a> {
    /// `prompts/consolidate.md`: the ops request, and the request for a
    /// cluster with no pending fact (unreviewed entries to merge or keep),
    /// which one decision per fact cannot express.
    pub ops: &'a str,
    /// `prompts/decide.md` when `request = "per-fact"`.
    pub per_fact: Option<&'a str>,
    /// `prompts/update.md` when `check_updates` is on.
    pub update: Option<&'a str>,
}

/// The LLM's decision for each cluster, in cluster order.
pub(crate) async fn decide_all(
    client: &llm::Client,
    config: &Config,
    templates: Templates<'_>,
    clusters: Vec<Cluster>,
    state: &State,
) -> (Vec<Planned>, Spent) {
    let budget = Mutex::new(config.consolidation.remove_budget);
    let (calls, tokens, completion) = (AtomicUsize::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let invalid = AtomicUsize::new(0);
    let spent = Mutex::new(Duration::ZERO);
    let ctx = Ctx {
        client,
        templates,
        max_retries: config.consolidation.max_retries,
        budget: &budget,
        calls: &calls,
        invalid: &invalid,
        tokens: &tokens,
        completion: &completion,
        spent: &spent,
    };
    let mut decided: Vec<(usize, Planned)> =
        futures::stream::iter(clusters.into_iter().enumerate().map(|(i, c)| {
            let failures = c
                .fact_ids()
                .filter_map(|id| state.retries.get(id))
                .max()
                .copied()
                .unwrap_or(0);
            let ctx = &ctx;
            async move { (i, ctx.decide(c, failures).await) }
        }))
        .buffer_unordered(config.consolidation.concurrency.max(1) as usize)
        .collect()
        .await;
    decided.sort_by_key(|(i, _)| *i);
    let spent = Spent {
        calls: calls.into_inner(),
        invalid: invalid.into_inner(),
        prompt_tokens: tokens.into_inner(),
        completion_tokens: completion.into_inner(),
        llm_ms: spent.into_inner().unwrap().as_secs_f64() * 1000.0,
    };
    (decided.into_iter().map(|(_, p)| p).collect(), spent)
}

/// What the LLM judge shares across concurrent cluster calls.
struct Ctx<'a> {
    client: &'a llm::Client,
    templates: Templates<'a>,
    max_retries: u32,
    /// REMOVEs the run may still apply.
    budget: &'a Mutex<u32>,
    calls: &'a AtomicUsize,
    invalid: &'a AtomicUsize,
    tokens: &'a AtomicU64,
    completion: &'a AtomicU64,
    spent: &'a Mutex<Duration>,
}

/// A usable reply: its ops, and the fact groups it kept out as forgotten.
type Usable = (Vec<Op>, Vec<reply::Forget>);

/// Each run asks a cluster at most this often (the second time naming what
/// was wrong); past that it waits for the next run, so that a model having
/// a bad moment gets another chance before facts are added verbatim.
const CALLS_PER_RUN: u32 = 2;

/// A call that failed for a reason not the reply's (the transport, the
/// day's budget): not counted against the cluster's retries.
fn not_counted(error: String, over_budget: bool) -> Decision {
    Decision::Failed {
        error,
        counted: false,
        over_budget,
    }
}

impl Ctx<'_> {
    async fn decide(&self, cluster: Cluster, mut failures: u32) -> Planned {
        let per_fact = self.per_fact(&cluster);
        let prompt = self.prompt(&cluster);
        let prompt_hash = short_hash(&prompt, 16);
        let planned = |decision, failures| Planned {
            cluster: cluster.clone(),
            decision,
            model: self.client.model().to_string(),
            prompt_hash: Some(prompt_hash.clone()),
            failures,
            kept_out: Vec::new(),
        };
        if failures > self.max_retries {
            return planned(
                Decision::Fallback("earlier replies were invalid".into()),
                failures,
            );
        }
        let mut messages = vec![Message::user(prompt.clone())];
        let mut last_error = String::new();
        let schema = match per_fact {
            true => per_fact::schema(&cluster),
            false => reply::schema::reply(&cluster),
        };
        for _ in 0..CALLS_PER_RUN {
            let reply = match self.ask(&messages, Some(&schema)).await {
                Ok(r) => r,
                Err(e) => {
                    return planned(not_counted(format!("{e:#}"), e.is_over_budget()), failures);
                }
            };
            match self.verdict(&reply, &cluster) {
                Ok((ops, kept_out)) => {
                    let ops = match self.update_check(ops, &cluster).await {
                        Ok(ops) => ops,
                        Err(e) => return planned(not_counted(format!("{e:#}"), true), failures),
                    };
                    let mut p = planned(Decision::Ops(ops), failures);
                    p.kept_out = kept_out;
                    return p;
                }
                Err(error) => {
                    failures += 1;
                    self.invalid
                        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    tracing::warn!(failures, error = %error, "invalid LLM reply");
                    if failures > self.max_retries {
                        return planned(Decision::Fallback(error), failures);
                    }
                    messages.push(Message::assistant(reply));
                    messages.push(Message::user(format!(
                        "That reply cannot be used: {error}. Reply again with the complete JSON, following the rules."
                    )));
                    last_error = error;
                }
            }
        }
        planned(
            Decision::Failed {
                error: last_error,
                counted: true,
                over_budget: false,
            },
            failures,
        )
    }

    /// Whether `cluster` is asked one decision per fact ([`super::reply::per_fact`]):
    /// with `request = "per-fact"`, when it has facts.
    fn per_fact(&self, cluster: &Cluster) -> bool {
        self.templates.per_fact.is_some() && !cluster.groups.is_empty()
    }

    /// The prompt for `cluster` from the run's template.
    fn prompt(&self, cluster: &Cluster) -> String {
        let (entries, facts) = ops::prompt_lists(cluster);
        let forgotten = ops::forgotten_list(cluster);
        let vars = [
            ("entries", entries.as_str()),
            ("facts", &facts),
            ("forgotten", &forgotten),
        ];
        let template = match (self.per_fact(cluster), self.templates.per_fact) {
            (true, Some(t)) => t,
            _ => self.templates.ops,
        };
        prompts::render(template, &vars)
    }

    /// What a reply stands for: its ops and the facts it kept out as
    /// forgotten, or why it cannot be used. Its REMOVEs come off the run's
    /// budget when it is accepted.
    fn verdict(&self, reply: &str, cluster: &Cluster) -> Result<Usable, String> {
        let v = llm::extract_json(reply).map_err(|e| e.to_string())?;
        let parsed = match self.per_fact(cluster) {
            true => per_fact::read(&v, cluster)?,
            false => reply::parse::read(&v, cluster)?,
        };
        let mut budget = self.budget.lock().unwrap();
        let (ops, kept_out) = reply::check(parsed, cluster, *budget)?;
        *budget -= ops
            .iter()
            .filter(|o| matches!(o, Op::Remove { .. }))
            .count() as u32;
        Ok((ops, kept_out))
    }

    /// One chat call (its reply following `schema` where the endpoint
    /// takes one), counted in the run's calls, tokens and LLM time.
    async fn ask(
        &self,
        messages: &[Message],
        schema: Option<&serde_json::Value>,
    ) -> Result<String> {
        use std::sync::atomic::Ordering;
        let started = Instant::now();
        let reply = self.client.chat_with(messages, schema).await;
        *self.spent.lock().unwrap() += started.elapsed();
        self.calls.fetch_add(1, Ordering::Relaxed);
        let (reply, usage) = reply?;
        let tokens = if usage.prompt_tokens > 0 {
            usage.prompt_tokens
        } else {
            // The usual estimate when a server does not report usage.
            let sent: usize = messages.iter().map(|m| m.content.len()).sum();
            (sent / 4) as u64
        };
        self.tokens.fetch_add(tokens, Ordering::Relaxed);
        self.completion
            .fetch_add(usage.completion_tokens, Ordering::Relaxed);
        Ok(reply)
    }

    /// The second look at each ADD of a valid reply (see
    /// [`update::update_candidates`]): an ADD the judge says makes an entry
    /// out of date becomes a REPLACE keeping the old text as history. No
    /// answer, or one naming no candidate, leaves the ADD: the default is
    /// keep. A look the day's budget does not allow is an error: the
    /// cluster waits rather than decide without it.
    async fn update_check(&self, mut ops: Vec<Op>, cluster: &Cluster) -> Result<Vec<Op>> {
        let Some(template) = self.templates.update else {
            return Ok(ops);
        };
        for i in 0..ops.len() {
            let candidates = update::update_candidates(&ops, i, cluster);
            if candidates.is_empty() {
                continue;
            }
            let question = update::update_question(&ops, i, cluster, &candidates);
            let (entries, fact) = ops::prompt_lists(&question);
            let prompt = prompts::render(template, &[("entries", &entries), ("fact", &fact)]);
            let answer = match self.ask(&[Message::user(prompt)], None).await {
                Ok(reply) => llm::extract_json(&reply).ok(),
                Err(e) if e.is_over_budget() => return Err(e),
                Err(e) => {
                    tracing::warn!(error = %format!("{e:#}"), "second look failed; the ADD stays");
                    None
                }
            };
            if let Some(k) = answer.as_ref().and_then(|v| update::outdated(v, &question)) {
                update::make_update(&mut ops, i, cluster, candidates[k]);
                tracing::info!(entry = %cluster.entries[candidates[k]].id, "second look: the ADD updates an entry");
            }
        }
        Ok(ops)
    }
}

/// What the judge needs to decide a run's pending facts.
pub(crate) struct Decide<'a> {
    memory: &'a Memory,
    judge: &'a Judge,
    inputs: &'a Inputs,
    state: &'a State,
    /// The caller's embedder (the daemon's), if it has one.
    embedder: Option<&'a Cached>,
    /// Otherwise one of the run's own, opened when first needed (tier 2
    /// and the clusters share it: the model is loaded once per run).
    own_embedder: std::sync::OnceLock<Cached>,
}

impl<'a> Decide<'a> {
    pub(crate) fn new(
        memory: &'a Memory,
        judge: &'a Judge,
        inputs: &'a Inputs,
        state: &'a State,
        embedder: Option<&'a Cached>,
    ) -> Decide<'a> {
        Decide {
            memory,
            judge,
            inputs,
            state,
            embedder,
            own_embedder: std::sync::OnceLock::new(),
        }
    }

    /// The embedder the run uses: the caller's, or its own.
    fn embedder(&self) -> Result<&Cached> {
        if let Some(e) = self.embedder {
            return Ok(e);
        }
        if self.own_embedder.get().is_none() {
            let own = self.memory.cached_embedder()?;
            let _ = self.own_embedder.set(own);
        }
        Ok(self.own_embedder.get().expect("set above"))
    }

    /// Every pending fact's decision: restatements first (their count is
    /// returned), then the judge's clusters; and the tombstones for facts
    /// that say what was forgotten.
    pub(crate) async fn decide(&self, pending: Vec<Fact>, report: &mut Report) -> Result<Decided> {
        let inputs = self.inputs;
        let declared = super::declared::split(pending, &inputs.doc, &inputs.tombstones);
        report.warnings.extend(declared.warnings);
        report.declared_updates = declared
            .planned
            .iter()
            .map(|p| p.cluster.groups[0].ids.len())
            .sum();
        let pending = declared.rest;
        let (keeps, rest) = plan::restatements(plan::group(&pending), &self.inputs.doc);
        report.restatements = keeps.iter().map(|(_, g, _)| g.ids.len()).sum();
        let near = self.near_duplicates(rest).await?;
        report.near_duplicates = near.keeps.iter().map(|(_, g, _)| g.ids.len()).sum();
        let mut planned: Vec<Planned> = keeps
            .into_iter()
            .chain(near.keeps)
            .map(|(keep, g, s)| Planned::built_in(keep, g, Some(s)))
            .collect();
        let restatements = planned.len();
        let declared_n = declared.planned.len();
        planned.extend(declared.planned);
        let mut kept_out: Vec<(Group, ForgottenBy)> = near
            .forgotten
            .into_iter()
            .map(|(g, t)| (g, t.forgotten_by()))
            .collect();
        let judged = self.judged(&planned, near.rest, report).await?;
        planned.extend(judged);
        for p in &planned {
            kept_out.extend(p.kept_out.iter().map(|&(g, x)| {
                let by = p.cluster.forgotten[x].by();
                (p.cluster.groups[g].clone(), by)
            }));
        }
        let tombstones = self.forgotten(kept_out, report);
        report.clusters = planned.len() - restatements - declared_n;
        Ok(Decided {
            planned,
            restatements,
            tombstones,
        })
    }

    /// The judge's decisions on `rest`, the groups neither a restatement,
    /// a near duplicate nor a declared update settled; the built-in judge
    /// leaves alone the entries `planned` already touches.
    async fn judged(
        &self,
        planned: &[Planned],
        rest: Vec<Group>,
        report: &mut Report,
    ) -> Result<Vec<Planned>> {
        match self.judge {
            Judge::BuiltIn => {
                let taken = planned.iter().flat_map(Planned::entries_touched).collect();
                let entries = self.inputs.snapshots();
                let embedder = self.embedder()?;
                let (judged, updates) =
                    super::judged::plan(rest, &entries, &taken, embedder).await?;
                report.judged_updates = updates;
                Ok(judged)
            }
            Judge::Llm(client) => self.ask(client, rest, report).await,
        }
    }

    /// Tier 2 ([`plan::near_duplicates`]) with the shipped rule; embeds
    /// only the texts whose words another text shares.
    async fn near_duplicates(&self, groups: Vec<Group>) -> Result<plan::NearDuplicates> {
        let rule = Rule::SHIPPED;
        let entries = self.inputs.snapshots();
        let texts = plan::near_texts(&groups, &entries, &self.inputs.tombstones, rule);
        let compared: Vec<String> = texts.iter().map(|t| Rule::compared(t)).collect();
        let vectors = match compared.is_empty() {
            true => Vec::new(),
            false => self.embedder()?.embed(&compared).await?,
        };
        let vectors = texts.into_iter().zip(vectors).collect();
        let merge = matches!(self.judge, Judge::BuiltIn);
        let tombstones = &self.inputs.tombstones;
        Ok(plan::near_duplicates(
            groups,
            &entries,
            tombstones,
            &vectors,
            (rule, merge),
        ))
    }

    /// Cluster the groups with the entries and ask the LLM about each.
    async fn ask(
        &self,
        client: &llm::Client,
        groups: Vec<Group>,
        report: &mut Report,
    ) -> Result<Vec<Planned>> {
        let (layout, config) = (&self.memory.layout, &self.memory.config);
        let embedder = self.embedder()?;
        let clusters = plan::clusters(embedder, config, groups, self.inputs.snapshots()).await?;
        let clusters = plan::with_forgotten(embedder, clusters, &self.inputs.tombstones).await?;
        let ops = prompts::load(layout, prompts::CONSOLIDATE)?;
        let per_fact = match config.consolidation.request {
            Request::Ops => None,
            Request::PerFact => Some(prompts::load(layout, prompts::DECIDE)?),
        };
        let update = match config.consolidation.check_updates {
            true => Some(prompts::load(layout, prompts::UPDATE)?),
            false => None,
        };
        let templates = Templates {
            ops: &ops,
            per_fact: per_fact.as_deref(),
            update: update.as_deref(),
        };
        let (planned, spent) = decide_all(client, config, templates, clusters, self.state).await;
        report.llm_calls = spent.calls;
        report.invalid_replies = spent.invalid;
        report.prompt_tokens = spent.prompt_tokens;
        report.completion_tokens = spent.completion_tokens;
        report.llm_ms = spent.llm_ms;
        Ok(planned)
    }

    /// The tombstones for groups that say what `forgotten` texts say, each
    /// fact named in the report.
    fn forgotten(&self, groups: Vec<(Group, ForgottenBy)>, report: &mut Report) -> Vec<Tombstone> {
        let mut out = Vec::new();
        for (g, (entry, fact)) in groups {
            report.suppressed.extend(g.ids.iter().map(|id| Suppressed {
                fact: id.clone(),
                text: g.text.clone(),
                forgotten: entry.clone(),
                erased: None,
            }));
            let reason = Reason::RestatesForgotten;
            let clock = &self.memory.clock;
            let mut t = Tombstone::new(clock, entry, &g.text, g.ids, reason);
            t.restates = fact;
            out.push(t);
        }
        out
    }
}
