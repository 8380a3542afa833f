//! Processes: the daemon started and stopped, the memory moved to the
//! other node, the table deleted, and a command killed at a step.

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use memd::request::Lazy;
use serde_json::Value;

use super::{MEMORY, World};
use crate::random::actions::{self, Killed};

/// The failpoints a killed `memd add` may stop at.
const ADD_STEPS: &[&str] = &[
    "append-locked",
    "append-written",
    "index-shown",
    "index-written",
];

/// The failpoints a killed `memd consolidate` may stop at.
const CONSOLIDATE_STEPS: &[&str] = &[
    "review-proposed",
    "planned",
    "before-rename",
    "entries-written",
    "journal-written",
    "state-written",
    "memory-md-written",
];

/// The failpoints a killed `memd forget --erase` may stop at.
const ERASE_STEPS: &[&str] = &[
    "erase-receipt",
    "erase-journaled",
    "erase-entries-written",
    "erase-archive-written",
];

impl World {
    pub(super) fn daemon_start(&mut self) -> anyhow::Result<()> {
        let mut child = crate::serving::spawn_serve(&self.layout, "127.0.0.1:0", &[]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if memd::server::running(&self.layout).is_some_and(|i| i.pid == child.id()) {
                break;
            }
            if let Some(status) = child.try_wait()? {
                anyhow::bail!("the daemon exited: {status}");
            }
            anyhow::ensure!(Instant::now() < deadline, "the daemon did not start");
            std::thread::sleep(Duration::from_millis(20));
        }
        self.daemon = Some(child);
        // The daemon owns the index now; this process's hold starts afresh
        // when it is gone.
        let memory = memd::Memory::open(&self.layout.root)?;
        self.held = Arc::new(Lazy::new(memory));
        Ok(())
    }

    /// [`Action::Move`], as `deploy/move.sh` moves a memory between nodes:
    /// the daemon stopped (the node's requests end, as a handover's drain
    /// waits for them), this process's hold let go (its rows held back
    /// committed); handed over, copied to the other root's
    /// `.memd/incoming/` with `cp -a`, taken over there, the handed-over
    /// copy deleted; then the daemon and this process's hold serve it at
    /// its new place. The old root refuses it and keeps nothing of it.
    pub(super) fn move_memory(&mut self) -> anyhow::Result<()> {
        use memd::request::Holder;
        use memd::server::moves;
        let daemon = self.daemon.is_some();
        self.daemon_stop(false)?;
        self.rt.block_on(self.held.idle());
        let from = self.layout.root.parent().unwrap().to_path_buf();
        let to = from.with_file_name(match from.ends_with("node1") {
            true => "node2",
            false => "node1",
        });
        self.held = Arc::new(Lazy::new(memd::Memory::open(&self.layout.root)?));
        let handed = moves::move_out(&from, MEMORY)?;
        anyhow::ensure!(handed.held && handed.files > 0, "{handed:?}");
        let incoming = to.join(moves::INCOMING);
        std::fs::create_dir_all(&incoming)?;
        let outgoing = from.join(moves::OUTGOING).join(MEMORY);
        let copied = Command::new("cp")
            .arg("-a")
            .arg(&outgoing)
            .arg(incoming.join(MEMORY))
            .status()?;
        anyhow::ensure!(copied.success(), "cp -a: {copied}");
        anyhow::ensure!(moves::move_in(&to, MEMORY)?.moved_in, "nothing moved in");
        std::fs::remove_dir_all(&outgoing)?;
        let refused = moves::refuse_handed_over(&from, MEMORY);
        anyhow::ensure!(
            refused.is_err_and(|e| e.is_moved()),
            "the old root serves it"
        );
        anyhow::ensure!(!from.join(MEMORY).exists(), "the old root keeps it");
        self.layout = memd::Layout::open(to.join(MEMORY))?;
        self.held = Arc::new(Lazy::new(memd::Memory::open(&self.layout.root)?));
        if daemon {
            self.daemon_start()?;
        }
        Ok(())
    }

    /// Whether its index's table is on object storage.
    pub fn on_object_storage(&self) -> bool {
        self.index_uri.is_some()
    }

    /// [`Action::HandDeleteTable`]: the daemon stopped and this process's
    /// hold let go (as a person stops memd first), the table deleted.
    pub(super) fn hand_delete_table(&mut self) -> anyhow::Result<()> {
        use memd::request::Holder;
        let daemon = self.daemon.is_some();
        self.daemon_stop(false)?;
        self.rt.block_on(self.held.idle());
        self.held = Arc::new(Lazy::new(memd::Memory::open(&self.layout.root)?));
        match &self.index_uri {
            Some(uri) => crate::objectstore::S3::from_env().delete_table(uri, MEMORY),
            None => match std::fs::remove_dir_all(self.layout.index_dir().join("lance")) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => {}
            },
        }
        if daemon {
            self.daemon_start()?;
        }
        Ok(())
    }

    /// [`actions::Action::HandTableRows`]: a row of the table added
    /// again, deleted or given another hash (`how`) behind memd's back;
    /// the check kept by the daemon or the hold and a deep one find the
    /// same; the index is then rebuilt (a writer that took itself for the
    /// table's only one may hold what it wrote in memory). A write that
    /// meets memd's own commit is left undone. Each check compares what it
    /// reads at one moment, so both run with the index at rest.
    pub(super) fn hand_table_rows(&mut self, how: u8) -> anyhow::Result<()> {
        use memd::request::Holder;
        if self.index_uri.is_some() {
            return Ok(());
        }
        // At rest first: every file synced, no row held back (a commit
        // landing between the two checks would make a file synced in one
        // and changed since its sync in the other).
        self.run(memd::request::Reindex { clear: false })?;
        self.rt.block_on(self.held.idle());
        let layout = self.layout.clone();
        if !self.rt.block_on(rewrite_a_row(&layout, how)) {
            return Ok(());
        }
        let rows = |r: memd::check::Report| -> Vec<String> {
            let mut all: Vec<String> = (r.problems.iter())
                .filter(|p| p.kind == memd::check::Kind::IndexRows)
                .map(|p| p.what.clone())
                .collect();
            all.sort();
            all
        };
        let kept = rows(self.run(memd::request::Check {
            fix: false,
            deep: false,
        })?);
        let deep = rows(self.run(memd::request::Check {
            fix: false,
            deep: true,
        })?);
        let after = self.log.join("\n");
        assert_eq!(
            kept, deep,
            "the kept check (left) and a deep one\nafter:\n{after}"
        );
        self.run(memd::request::Reindex { clear: true })?;
        Ok(())
    }

    pub(super) fn daemon_stop(&mut self, kill: bool) -> anyhow::Result<()> {
        let Some(mut d) = self.daemon.take() else {
            return Ok(());
        };
        if kill {
            d.kill()?;
        } else {
            Command::new("kill")
                .args(["-TERM", &d.id().to_string()])
                .status()?;
        }
        d.wait()?;
        Ok(())
    }

    pub(super) fn kill(&mut self, step: u8, what: Killed) -> anyhow::Result<()> {
        let Some((steps, args)) = self.killed_command(step, what)? else {
            return Ok(());
        };
        let at = steps[step as usize % steps.len()];
        let texts = match what {
            Killed::Erase => self.erasure_texts(&args[2]),
            _ => Vec::new(),
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        crate::support::pause_and_kill(&self.layout.root, &args, at);
        // The user runs the command again, as the error told them to.
        let out = crate::support::memd(&self.layout.root, &args);
        if what == Killed::Add && out.status.success() {
            let v: Value = serde_json::from_slice(&out.stdout)?;
            self.ledger
                .acked(v["id"].as_str().unwrap_or(""), actions::text(step));
        }
        if what == Killed::Erase && out.status.success() {
            let erased: memd::erase::Erasure = serde_json::from_slice(&out.stdout)?;
            self.erased(&erased, texts);
        }
        if what == Killed::Undo && out.status.success() {
            let outcome: memd::runs::Outcome = serde_json::from_slice(&out.stdout)?;
            self.undone(&outcome);
        }
        Ok(())
    }

    /// The failpoints [`Action::Kill`] of `what` may stop at, and the
    /// command it kills there (`step` picks what it acts on); `None` when
    /// there is nothing to act on.
    fn killed_command(
        &self,
        step: u8,
        what: Killed,
    ) -> anyhow::Result<Option<(&'static [&'static str], Vec<String>)>> {
        let (steps, args): (&'static [&'static str], Vec<String>) = match what {
            Killed::Add => (
                ADD_STEPS,
                vec![
                    "add".into(),
                    actions::text(step).into(),
                    "--key".into(),
                    format!("kill{step}"),
                    "--json".into(),
                ],
            ),
            Killed::Review => (
                &["review-applied"],
                ["review", "accept", "--all", "--apply", "--json"]
                    .map(String::from)
                    .to_vec(),
            ),
            Killed::Consolidate => (
                CONSOLIDATE_STEPS,
                vec!["consolidate".into(), "--force".into()],
            ),
            Killed::Edit => {
                let Some((id, text, _)) = self.entry(step) else {
                    return Ok(None);
                };
                (
                    &["edit-journaled"],
                    vec![
                        "edit".into(),
                        id,
                        "--text".into(),
                        format!("{text} (killed edit)"),
                    ],
                )
            }
            Killed::Erase => {
                let Some(id) = self.erasable(step, step.is_multiple_of(2)) else {
                    return Ok(None);
                };
                (
                    ERASE_STEPS,
                    vec!["forget".into(), "--erase".into(), id, "--json".into()],
                )
            }
            Killed::Undo => {
                let runs = self.run(memd::request::Runs::default())?;
                let Some(r) = runs.first() else {
                    return Ok(None);
                };
                (
                    &["undo-journaled", "undo-entries-written"],
                    vec!["undo".into(), r.id.to_string(), "--json".into()],
                )
            }
        };
        Ok(Some((steps, args)))
    }
}

/// One row of the table at `layout` added again (`how` 0), deleted (1) or
/// given another hash (2), by a LanceDB handle of its own; whether a row
/// was there to change and the write landed.
async fn rewrite_a_row(layout: &memd::Layout, how: u8) -> bool {
    use futures::TryStreamExt;
    use lancedb::query::{ExecutableQuery, QueryBase};
    let lance = layout.index_dir().join("lance");
    let Ok(db) = lancedb::connect(&lance.to_string_lossy()).execute().await else {
        return false;
    };
    let Ok(table) = db.open_table("memory").execute().await else {
        return false; // no table yet
    };
    let Ok(stream) = table.query().limit(1).execute().await else {
        return false;
    };
    let Ok(one) = stream.try_collect::<Vec<arrow_array::RecordBatch>>().await else {
        return false;
    };
    let Some(id) = one.first().filter(|b| b.num_rows() > 0).and_then(|b| {
        let ids = b.column_by_name("id")?;
        let ids = ids.as_any().downcast_ref::<arrow_array::StringArray>()?;
        Some(ids.value(0).replace('\'', "''"))
    }) else {
        return false;
    };
    let landed = match how % 3 {
        0 => table.add(one).execute().await.map(drop),
        1 => table.delete(&format!("id = '{id}'")).await.map(drop),
        _ => (table.update().only_if(format!("id = '{id}'")))
            .column("hash", "'0000000000000000'")
            .execute()
            .await
            .map(drop),
    };
    landed.is_ok()
}
