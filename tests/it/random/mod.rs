//! The random test of user actions: sequences of every action a user (or
//! their agent, or a crash) takes on a memory, run against a real memory
//! directory, real files, a real LanceDB and a scripted LLM on 127.0.0.1,
//! with `memd check` and a small ledger of what the user kept and forgot
//! as the oracle after every step (see `oracle.rs`), and, at the end, the
//! memory as of every step against the files each step left (`past.rs`).
//!
//! proptest generates the sequences (proptest-state-machine) and shrinks a
//! failing one to a minimal sequence, printed with its seed. Budgets:
//! - `cargo test` (and CI): [`CI_CASES`] sequences of up to [`CI_STEPS`]
//!   steps from the fixed seed [`CI_SEED`], under a minute on 2 cores: a
//!   reproducible corpus that every change must keep passing. Fresh seeds
//!   are the soak's; each failure a soak found is a test of its own in
//!   `found.rs`, with the minimal sequence it shrank to;
//! - `MEMD_RANDOM_SEED=N` replays one run; `MEMD_RANDOM_CASES`,
//!   `MEMD_RANDOM_STEPS` change the budget;
//! - `scripts/soak.sh [MINUTES]` runs seed after seed until the time is
//!   up and writes what it covered (`MEMD_RANDOM_REPORT`): sequences,
//!   steps, actions by kind, and every failure.

mod actions;
mod oracle;
mod pair;
mod past;
mod world;

use std::collections::BTreeMap;
use std::sync::Mutex;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestError, TestRunner};
use proptest_state_machine::{ReferenceStateMachine, StateMachineTest};

pub use self::actions::{Action, Blocked, Judge, Killed, Via};
use self::world::World;

/// The seed of `cargo test`'s run (see the module doc).
const CI_SEED: u64 = 7;
/// Sequences per `cargo test` run.
const CI_CASES: u32 = 30;
/// The longest sequence in a `cargo test` run.
const CI_STEPS: usize = 40;

/// What the generator knows of the memory: only what decides which
/// actions make sense (the ledger of facts lives with the real memory).
#[derive(Debug, Clone, Default)]
pub struct Shape {
    pub daemon: bool,
    pub steps: usize,
}

pub struct Model;

impl ReferenceStateMachine for Model {
    type State = Shape;
    type Transition = Action;

    fn init_state() -> BoxedStrategy<Shape> {
        Just(Shape::default()).boxed()
    }

    fn transitions(state: &Shape) -> BoxedStrategy<Action> {
        actions::strategy(state.daemon)
    }

    fn preconditions(state: &Shape, action: &Action) -> bool {
        allowed(state.daemon, action)
    }

    fn apply(mut state: Shape, action: &Action) -> Shape {
        match action {
            Action::DaemonStart => state.daemon = true,
            Action::DaemonStop { .. } => state.daemon = false,
            _ => {}
        }
        state.steps += 1;
        state
    }
}

/// Whether `action` makes sense with a daemon running or not.
fn allowed(daemon: bool, action: &Action) -> bool {
    match action {
        Action::DaemonStart => !daemon,
        Action::DaemonStop { .. } => daemon,
        // A failpoint stops the process that runs the command: with a
        // daemon the command's work is the daemon's.
        Action::Kill { .. } => !daemon,
        _ => true,
    }
}

/// The actions run, by kind, over a whole run (for the soak's report).
static COVERED: Mutex<BTreeMap<&'static str, u64>> = Mutex::new(BTreeMap::new());

pub(crate) fn covered(kind: &'static str) {
    *COVERED.lock().unwrap().entry(kind).or_default() += 1;
}

impl StateMachineTest for World {
    type SystemUnderTest = World;
    type Reference = Model;

    fn init_test(_: &Shape) -> World {
        World::new()
    }

    fn apply(mut world: World, _: &Shape, action: Action) -> World {
        covered(action.kind());
        world.apply(&action);
        world
    }

    fn check_invariants(world: &World, _: &Shape) {
        world.check(false);
    }

    fn teardown(world: World) {
        world.check(true);
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One proptest run of `cases` sequences from `seed`: `Err` with the
/// minimal failing sequence.
fn run(seed: u64, cases: u32, steps: usize) -> Result<u32, String> {
    run_machine::<World>((seed, cases, steps), 200)
}

/// One proptest run of state machine `M`: `cases` sequences of up to
/// `steps` steps from `seed`, a failing one shrunk at most `shrink` times
/// (or `MEMD_RANDOM_SHRINK`); `Err` with the minimal failing sequence.
pub(crate) fn run_machine<M: StateMachineTest>(
    (seed, cases, steps): (u64, u32, usize),
    shrink: u32,
) -> Result<u32, String> {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        max_shrink_iters: env_or("MEMD_RANDOM_SHRINK", shrink),
        ..Config::default()
    };
    let mut runner = TestRunner::new(config.clone());
    let strategy = M::Reference::sequential_strategy(1..steps);
    let result = runner.run(&strategy, |(init, actions, seen)| {
        M::test_sequential(config.clone(), init, actions, seen);
        Ok(())
    });
    match result {
        Ok(()) => Ok(cases),
        Err(TestError::Fail(why, (_, actions, _))) => {
            let steps: Vec<String> = actions.iter().map(|a| format!("  {a:?}")).collect();
            Err(format!(
                "seed {seed}: {why}\nminimal sequence ({} steps):\n{}",
                actions.len(),
                steps.join("\n")
            ))
        }
        Err(e) => Err(format!("seed {seed}: {e}")),
    }
}

/// Every user action, in random sequences, never loses or hides a fact.
#[test]
fn random_sequences_of_user_actions_never_lose_or_hide_a_fact() {
    soaked((CI_SEED, CI_CASES, CI_STEPS), run);
}

/// The same sequences, with the index's table on S3 (moto's server:
/// tests/it/objectstore.rs), so every action's reads and writes of the
/// table go through the store.
#[test]
fn random_sequences_with_the_index_on_s3_never_lose_or_hide_a_fact() {
    let Some(s3) = crate::objectstore::S3::start() else {
        return;
    };
    s3.export_env();
    let uri = format!("s3://{}/random", crate::objectstore::BUCKET);
    world::INDEX_ON.with(|on| *on.borrow_mut() = Some(uri));
    soaked((CI_SEED, CI_CASES, CI_STEPS), run);
}

/// `one(seed, cases, steps)` from the CI budget `ci`, or as the
/// environment says (see the module doc): with `MEMD_RANDOM_MINUTES`,
/// seed after seed until the time is up. Reports what it covered, and
/// fails with every failure.
pub(crate) fn soaked(ci: (u64, u32, usize), one: fn(u64, u32, usize) -> Result<u32, String>) {
    let seed = std::env::var("MEMD_RANDOM_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(if std::env::var("MEMD_RANDOM_MINUTES").is_ok() {
            rand_seed()
        } else {
            ci.0
        });
    let minutes: f64 = env_or("MEMD_RANDOM_MINUTES", 0.0);
    let cases = env_or("MEMD_RANDOM_CASES", ci.1);
    let steps = env_or("MEMD_RANDOM_STEPS", ci.2);
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs_f64(minutes * 60.0);
    let mut failures = Vec::new();
    let mut sequences = 0u64;
    let mut seed_now = seed;
    loop {
        eprintln!("random test: seed {seed_now}, {cases} sequences of up to {steps} steps");
        match one(seed_now, cases, steps) {
            Ok(n) => sequences += n as u64,
            Err(f) => {
                eprintln!("{f}");
                failures.push(f);
            }
        }
        if started.elapsed() >= deadline || (minutes == 0.0) {
            break;
        }
        seed_now = seed_now
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    report(sequences, started.elapsed(), &failures);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn rand_seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos(),
    );
    h.finish() >> 11
}

/// What the run covered, to stderr and (`MEMD_RANDOM_REPORT`) a file.
fn report(sequences: u64, took: std::time::Duration, failures: &[String]) {
    let covered = COVERED.lock().unwrap().clone();
    let steps: u64 = covered.values().sum();
    let mut out = format!(
        "sequences: {sequences}\nsteps: {steps}\nminutes: {:.1}\nfailures: {}\nactions by kind:\n",
        took.as_secs_f64() / 60.0,
        failures.len()
    );
    for (kind, n) in &covered {
        out.push_str(&format!("  {kind}: {n}\n"));
    }
    for f in failures {
        out.push_str(&format!("\n{f}\n"));
    }
    eprintln!("{out}");
    if let Ok(path) = std::env::var("MEMD_RANDOM_REPORT") {
        std::fs::write(path, out).unwrap();
    }
}

/// Run one sequence as the random test does, checking the oracle after
/// every step and searching for everything at the end: how a minimal
/// sequence it found becomes a regression test (`found.rs`).
pub fn replay(actions: &[Action]) {
    let mut world = World::new();
    for a in actions {
        world.apply(a);
        if std::env::var_os("MEMD_DEBUG_TREE").is_some() {
            let _ = std::process::Command::new("find")
                .arg(world.layout.index_dir())
                .status();
        }
        world.check(false);
    }
    world.check(true);
}
