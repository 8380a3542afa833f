//! `.llm_usage.jsonl`: the tokens each LLM call of a memory spent, one
//! line per call, and `[llm] max_tokens_per_day`, the day's budget read
//! against it ([`Budget`]).
//!
//! A call is made only when what it may spend fits in what is left of the
//! day's budget: its prompt, estimated at 4 characters a token, and
//! [`COMPLETION_ALLOWANCE`] tokens of reply. Calls in flight hold their
//! share until they return, so concurrent calls never pass the budget
//! together. What a call spent (its prompt and completion tokens as the
//! server reports them, else the estimate; a call that got no reply counts
//! its prompt estimate, since a provider may bill it) is appended when it
//! returns. A call refused is [`Error::OverBudget`]: a consolidation
//! leaves its cluster's facts pending for another day (a failed cluster,
//! not counted against the facts), and promotion ranks without the LLM.
//!
//! The day is the memory's local day ([`crate::clock::Clock::today`]).
//! Usage is recorded whether or not a budget is set, so `memd status` and
//! `memd runs` show what was spent.
//!
//! Crash semantics: each line is appended whole under the file's lock; a
//! crash between a reply and its line loses that one call's count, so the
//! budget can be passed by at most one call per crash.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::clock::Clock;
use crate::error::{Context, Error, Result};
use crate::ids::RunId;
use crate::{Layout, jsonl};

/// Tokens of reply a call is assumed to spend before it is made: Qwen
/// 2.5-Coder-1.5B averaged about 200 completion tokens a call over 26
/// calls of the Letta sets (5,216 tokens, EVALUATION.md); 512 covers two
/// and a half times that.
pub const COMPLETION_ALLOWANCE: u64 = 512;

/// One call, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// RFC 3339 time the call returned.
    pub ts: String,
    /// The memory's local day it counts against.
    pub day: String,
    pub run: RunId,
    /// Prompt and completion tokens.
    pub tokens: u64,
    /// The day's budget when it was made (none: no budget).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
}

/// What a run's LLM calls may spend today, and where they are recorded.
pub struct Budget {
    path: PathBuf,
    clock: Clock,
    day: String,
    run: RunId,
    limit: Option<u64>,
    /// Spent today (recorded), and held by calls in flight.
    held: Mutex<(u64, u64)>,
}

/// A call admitted: what it holds until it returns.
#[derive(Debug, Clone, Copy)]
pub struct Admitted {
    prompt: u64,
    held: u64,
}

/// Tokens of a prompt of `chars` characters, estimated.
pub fn estimate(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

impl Budget {
    /// The budget of run `run` of the memory at `layout`: `limit` tokens a
    /// day (`None`: no limit, usage still recorded), with today's calls
    /// read from the file.
    pub fn open(layout: &Layout, clock: Clock, run: &RunId, limit: Option<u64>) -> Result<Budget> {
        let path = layout.usage_file();
        let day = clock.today();
        let spent = spent_on(&read(&path)?, &day);
        Ok(Budget {
            path,
            clock,
            day,
            run: run.clone(),
            limit,
            held: Mutex::new((spent, 0)),
        })
    }

    /// Admit a call whose prompt has `chars` characters, or refuse it
    /// ([`Error::OverBudget`]) when it could pass the day's budget.
    pub fn admit(&self, chars: usize) -> Result<Admitted> {
        let prompt = estimate(chars);
        let asked = prompt + COMPLETION_ALLOWANCE;
        let mut held = self.held.lock().unwrap();
        if let Some(limit) = self.limit
            && held.0 + held.1 + asked > limit
        {
            return Err(Error::OverBudget {
                spent: held.0,
                limit,
                asked,
            });
        }
        held.1 += asked;
        Ok(Admitted {
            prompt,
            held: asked,
        })
    }

    /// Record what admitted call `a` spent: `tokens` as the server reported
    /// them (`None`: no reply, or no usage in it: the prompt estimate).
    pub fn spent(&self, a: Admitted, tokens: Option<u64>) -> Result<()> {
        let tokens = tokens.filter(|&t| t > 0).unwrap_or(a.prompt);
        {
            let mut held = self.held.lock().unwrap();
            held.1 = held.1.saturating_sub(a.held);
            held.0 += tokens;
        }
        let call = Call {
            ts: self.clock.timestamp(),
            day: self.day.clone(),
            run: self.run.clone(),
            tokens,
            limit: self.limit,
        };
        jsonl::append(&self.path, &[call])
            .with_context(|| format!("appending to {}", self.path.display()))
    }
}

fn read(path: &std::path::Path) -> Result<Vec<Call>> {
    let (calls, _) =
        jsonl::read::<Call>(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(calls)
}

fn spent_on(calls: &[Call], day: &str) -> u64 {
    calls
        .iter()
        .filter(|c| c.day == day)
        .map(|c| c.tokens)
        .sum()
}

/// Tokens spent on `day` by the memory at `layout`.
pub fn spent_today(layout: &Layout, day: &str) -> Result<u64> {
    Ok(spent_on(&read(&layout.usage_file())?, day))
}

/// Tokens spent by each run.
pub fn by_run(layout: &Layout) -> Result<HashMap<RunId, u64>> {
    let mut out: HashMap<RunId, u64> = HashMap::new();
    for c in read(&layout.usage_file())? {
        *out.entry(c.run).or_default() += c.tokens;
    }
    Ok(out)
}

/// Runs that made a call when the day's earlier runs had already spent
/// its budget (for `memd check`). Runs hold the memory's lock one at a
/// time and each reads the day's spending when it starts, so none should;
/// within a run, concurrent calls hold their share before they are made.
/// Each: the run, the tokens its day had seen before it, the limit.
pub fn past_budget(layout: &Layout) -> Result<Vec<(RunId, u64, u64)>> {
    let calls = read(&layout.usage_file())?;
    let mut before: HashMap<(&str, &RunId), u64> = HashMap::new();
    let mut day_total: HashMap<&str, u64> = HashMap::new();
    let mut out: Vec<(RunId, u64, u64)> = Vec::new();
    for c in &calls {
        let total = day_total.entry(&c.day).or_default();
        let seen = *before.entry((&c.day, &c.run)).or_insert(*total);
        if let Some(limit) = c.limit
            && seen >= limit
            && !out.iter().any(|(r, ..)| r == &c.run)
        {
            out.push((c.run.clone(), seen, limit));
        }
        *total += c.tokens;
    }
    Ok(out)
}
