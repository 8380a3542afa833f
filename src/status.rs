//! The read-only report behind `memd status`.

use serde::Serialize;

use anyhow::Result;

use crate::config::Config;
use crate::entries::Document;
use crate::state::State;
use crate::tombstones::Tombstones;
use crate::{Layout, archive};

#[derive(Debug, Serialize)]
pub struct Report {
    pub dir: String,
    pub days: Vec<DayCount>,
    pub facts: usize,
    pub entries: usize,
    pub entries_unsaved_hand_written: usize,
    pub entries_edited_by_hand: usize,
    pub entries_unreviewed: usize,
    pub entries_pinned: usize,
    pub tombstones: usize,
    pub pending_facts: usize,
    pub last_consolidation: Option<String>,
    /// Which judge consolidation uses: the built-in one or an LLM.
    pub judge: String,
    /// Per source file: `fresh`, `stale` or `not indexed`.
    pub index: std::collections::BTreeMap<String, &'static str>,
    /// The daemon serving this directory, if one runs.
    pub daemon: Option<crate::daemon::Info>,
    /// The watcher's last health record and whether it is alive.
    pub watcher: Option<WatcherStatus>,
    /// Problems found while reading the files (none of them fatal).
    pub warnings: Vec<String>,
    pub config: Config,
}

#[derive(Debug, Serialize)]
pub struct WatcherStatus {
    pub alive: bool,
    #[serde(flatten)]
    pub health: crate::watch::Health,
}

#[derive(Debug, Serialize)]
pub struct DayCount {
    pub day: String,
    pub facts: usize,
}

pub fn gather(layout: &Layout, config: &Config) -> Result<Report> {
    let (facts, mut warnings) = archive::read_all(layout)?;
    let mut days: Vec<DayCount> = Vec::new();
    for f in &facts {
        match days.last_mut() {
            Some(d) if d.day == f.day => d.facts += 1,
            _ => days.push(DayCount {
                day: f.day.clone(),
                facts: 1,
            }),
        }
    }
    let doc = Document::read(&layout.entries_file())?;
    warnings.extend(
        doc.warnings
            .iter()
            .map(|w| format!("consolidated/memory.md: {w}")),
    );
    let entries: Vec<_> = doc.entries().collect();
    let tombstones = Tombstones::load(&layout.tombstones_file())?;
    let state = State::load(&layout.state_file())?;
    let pending = facts
        .iter()
        .filter(|f| state.is_pending(f, &tombstones))
        .count();
    let judge = crate::consolidate::Judge::describe(config);
    Ok(Report {
        dir: layout.root.display().to_string(),
        facts: facts.len(),
        days,
        entries: entries.len(),
        entries_unsaved_hand_written: entries.iter().filter(|e| e.meta.is_none()).count(),
        entries_edited_by_hand: entries
            .iter()
            .filter(|e| e.meta.is_some() && e.edited_by_hand())
            .count(),
        entries_unreviewed: entries
            .iter()
            .filter(|e| e.meta.as_ref().is_some_and(|m| m.unreviewed))
            .count(),
        entries_pinned: entries.iter().filter(|e| e.pinned()).count(),
        tombstones: tombstones.len(),
        pending_facts: pending,
        last_consolidation: state.last_run,
        judge,
        index: crate::index::freshness(layout)?,
        daemon: crate::daemon::running(layout),
        watcher: crate::watch::health(layout)
            .map(|(health, alive)| WatcherStatus { alive, health }),
        warnings,
        config: config.clone(),
    })
}

impl Report {
    pub fn render(&self) -> String {
        let mut out = format!("memory directory  {}\n", self.dir);
        out.push_str(&format!(
            "archive           {} facts over {} days\n",
            self.facts,
            self.days.len()
        ));
        for d in self.days.iter().rev().take(7) {
            out.push_str(&format!("  {}      {}\n", d.day, d.facts));
        }
        if self.days.len() > 7 {
            out.push_str(&format!("  … {} earlier days\n", self.days.len() - 7));
        }
        out.push_str(&format!(
            "entries           {} ({} pinned, {} unreviewed, {} edited by hand, {} hand-written awaiting metadata)\n",
            self.entries,
            self.entries_pinned,
            self.entries_unreviewed,
            self.entries_edited_by_hand,
            self.entries_unsaved_hand_written
        ));
        out.push_str(&format!("tombstones        {}\n", self.tombstones));
        out.push_str(&format!("pending facts     {}\n", self.pending_facts));
        out.push_str(&format!(
            "last consolidated {}\n",
            self.last_consolidation.as_deref().unwrap_or("never")
        ));
        out.push_str(&format!("judge             {}\n", self.judge));
        let stale: Vec<_> = self.index.iter().filter(|(_, s)| **s != "fresh").collect();
        out.push_str(&format!(
            "index             {} of {} files fresh\n",
            self.index.len() - stale.len(),
            self.index.len()
        ));
        for (source, state) in stale {
            out.push_str(&format!("  {source}: {state}\n"));
        }
        match &self.daemon {
            Some(d) => out.push_str(&format!(
                "daemon            running (pid {}, http://{}{}, since {})\n",
                d.pid,
                d.listen,
                if d.token { ", token required" } else { "" },
                d.started
            )),
            None => out.push_str("daemon            not running (memd serve)\n"),
        }
        match &self.watcher {
            Some(w) => out.push_str(&format!(
                "watcher           {} (pid {}, {} events, {} syncs, last sync {}{})\n",
                if w.alive { "running" } else { "not running" },
                w.health.pid,
                w.health.events,
                w.health.syncs,
                w.health.last_sync.as_deref().unwrap_or("never"),
                w.health
                    .last_error
                    .as_deref()
                    .map(|e| format!(", last error: {e}"))
                    .unwrap_or_default()
            )),
            None => {
                out.push_str("watcher           never run (memd watch; search syncs on its own)\n")
            }
        }
        if !self.warnings.is_empty() {
            out.push_str("warnings\n");
            for w in &self.warnings {
                out.push_str(&format!("  {w}\n"));
            }
        }
        out.push_str("\nconfiguration in force\n");
        for line in self.config.to_toml().lines() {
            out.push_str(&format!("  {line}\n"));
        }
        out
    }
}
