//! Adds through each way in (in process, `memd add`, `memd mcp`, one
//! killed while it holds rows back), updates and corrections, and the
//! ledger of what each acknowledged.

use serde_json::{Value, json};

use super::{World, tool_call};
use crate::random::actions::{self, Via};

impl World {
    pub(super) fn add(
        &mut self,
        text: u8,
        key: Option<u8>,
        via: Via,
        batch: bool,
    ) -> anyhow::Result<()> {
        let t = actions::text(text);
        let mut texts = vec![t.to_string()];
        if batch {
            texts.push(actions::text(text.wrapping_add(7)).to_string());
        }
        let key = key.map(|k| format!("k{k}"));
        let ids: Vec<String> = match via {
            Via::Here => {
                let req = memd::request::Add {
                    texts: Some(texts.clone()),
                    key: key.clone(),
                    ..Default::default()
                };
                self.run(req)?.ids.iter().map(|i| i.to_string()).collect()
            }
            Via::Cli => self.cli_add(&texts, key.as_deref())?,
            Via::Mcp => self.mcp_add(&texts, key.as_deref(), false)?,
        };
        self.acked_adds(&ids, &texts);
        Ok(())
    }

    /// Three facts remembered through `memd mcp`, which is then SIGKILLed
    /// while it holds their rows back from the table: every fact it
    /// acknowledged is in the files, and the next sync indexes it.
    pub(super) fn add_mcp_killed(&mut self, text: u8) -> anyhow::Result<()> {
        let texts: Vec<String> = (0..3u8)
            .map(|i| actions::text(text.wrapping_add(i * 5)).to_string())
            .collect();
        let ids = self.mcp_add(&texts, None, true)?;
        self.acked_adds(&ids, &texts);
        Ok(())
    }

    /// Record in the ledger the facts an add acknowledged (`ids`, for
    /// `texts` in their order).
    fn acked_adds(&mut self, ids: &[String], texts: &[String]) {
        // A key already written gives back the fact written with it (by
        // design, whatever the text): the ledger keeps what the archive says.
        for (id, t) in ids.iter().zip(texts) {
            let text = self.fact_text(id);
            // An erased text said again is not written (memd says so).
            if text.is_none() && self.ledger.erased_text(t) {
                continue;
            }
            self.ledger.acked(id, &text.unwrap_or_else(|| t.clone()));
        }
    }

    /// `memd add TEXT --supersedes ID`: refused (exit 2, nothing written)
    /// when the entry is not live, acknowledged otherwise.
    pub(super) fn add_update(&mut self, text: u8, pick: u8) -> anyhow::Result<()> {
        let Some((id, ..)) = self.entry(pick) else {
            return Ok(());
        };
        let t = actions::text(text);
        let args = ["add", t, "--supersedes", &id, "--json", "--no-similar"];
        let out = crate::support::memd(&self.layout.root, &args);
        anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
        let v: Value = serde_json::from_slice(&out.stdout)?;
        let fact = v["id"].as_str().unwrap_or_default().to_string();
        // An erased text said again is not written (memd says so), with
        // or without a declaration.
        if v["erased"].as_bool() == Some(true) {
            return Ok(());
        }
        self.ledger.acked(&fact, t);
        Ok(())
    }

    /// `memd add TEXT --supersedes ID` by an id other than an entry's
    /// ([`Action::AddCorrection`]). What memd must answer follows from the
    /// files before: an id nothing live holds (a forgotten or erased
    /// fact, a line whose entry is gone) is refused as not found (exit 4),
    /// a pending fact saying the same text, or an id of no kind's shape,
    /// as invalid (exit 2), with nothing written; anything else is
    /// acknowledged.
    pub(super) fn add_correction(&mut self, text: u8, pick: u8, how: u8) -> anyhow::Result<()> {
        let t = actions::text(text);
        let Some((id, expect)) = self.correction_target(t, pick, how) else {
            return Ok(());
        };
        let before = self.archive_bytes();
        let args = ["add", t, "--supersedes", &id, "--json", "--no-similar"];
        let out = crate::support::memd(&self.layout.root, &args);
        let err = crate::support::stderr(&out);
        if expect != 0 {
            anyhow::ensure!(
                out.status.code() == Some(expect),
                "add --supersedes {id}: exit {:?}, expected {expect}: {err}",
                out.status.code()
            );
            anyhow::ensure!(self.archive_bytes() == before, "a refused add wrote: {id}");
            return Ok(());
        }
        anyhow::ensure!(out.status.success(), "add --supersedes {id}: {err}");
        let v: Value = serde_json::from_slice(&out.stdout)?;
        if v["erased"].as_bool() != Some(true) {
            let fact = v["id"].as_str().unwrap_or_default().to_string();
            self.ledger.acked(&fact, t);
        }
        Ok(())
    }

    /// The id an [`Action::AddCorrection`] names, and the exit code memd
    /// must give (0: acknowledged).
    fn correction_target(&self, text: &str, pick: u8, how: u8) -> Option<(String, i32)> {
        let doc = self.doc();
        let stones =
            memd::tombstones::Tombstones::load(&self.layout.tombstones_file()).unwrap_or_default();
        let live = |e: &str| doc.get(e).is_some_and(|e| e.meta.is_some()) && !stones.names_entry(e);
        if how == 0 {
            let core = memd::core_md::CoreMd::read(&self.layout.memory_md()).ok()?;
            let lines = core.lines();
            let line = lines.get(pick as usize % lines.len().max(1))?;
            let expect = if live(line.entry_id.as_str()) { 0 } else { 4 };
            return Some((format!("core:{}", line.entry_id), expect));
        }
        let (facts, _) = memd::archive::read_all(&self.layout).ok()?;
        if how == 3 {
            let f = facts.get(pick as usize % facts.len().max(1));
            let day = f.map_or("2026-01-01", |f| f.id.day());
            let word = text.split_whitespace().next().unwrap_or("x");
            let hostile = [
                format!("{word} {word}"),
                format!("{day}#"),
                format!("core:{}", f.map_or("2026-01-01#0", |f| f.id.as_str())),
            ];
            return Some((hostile[pick as usize % 3].clone(), 2));
        }
        let days = self.archive_bytes().into_iter().filter_map(|(p, _)| {
            let name = p.file_name()?.to_str()?.strip_suffix(".md")?.to_string();
            Some(name)
        });
        let erased: Vec<memd::archive::Erased> = days
            .filter_map(|d| memd::archive::read_day(&self.layout, &d).ok())
            .flat_map(|d| d.erased)
            .collect();
        let held = |f: &memd::archive::Fact| doc.holder(&f.id).map(|e| e.to_string());
        let gone = |f: &memd::archive::Fact| stones.covers(f.id.as_str(), &f.text);
        let pool: Vec<&memd::archive::Fact> = match how {
            1 => facts
                .iter()
                .filter(|f| held(f).is_none() && !gone(f))
                .collect(),
            _ => facts.iter().collect(),
        };
        if how != 1 && pick.is_multiple_of(7) && !erased.is_empty() {
            let e = &erased[pick as usize % erased.len()];
            return Some((e.id.to_string(), 4));
        }
        let f = pool.get(pick as usize % pool.len().max(1))?;
        let expect = match (gone(f), held(f)) {
            (true, _) => 4,
            (false, Some(e)) if !live(&e) => 4,
            (false, Some(_)) => 0,
            (false, None) if memd::text::normalize(&f.text) == memd::text::normalize(text) => 2,
            (false, None) => 0,
        };
        Some((f.id.to_string(), expect))
    }

    /// Every day file's bytes, by name.
    fn archive_bytes(&self) -> Vec<(std::path::PathBuf, Vec<u8>)> {
        let mut out: Vec<_> = std::fs::read_dir(self.layout.root.join("archive"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|d| (d.path(), std::fs::read(d.path()).unwrap_or_default()))
            .collect();
        out.sort();
        out
    }

    fn cli_add(&self, texts: &[String], key: Option<&str>) -> anyhow::Result<Vec<String>> {
        let mut args = vec!["add".to_string(), "--stdin".into(), "--json".into()];
        if let Some(k) = key {
            args.extend(["--key".into(), k.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out =
            crate::support::memd_with_stdin(&self.layout.root, &args, Some(&texts.join("\n")));
        anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
        let ids = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .flat_map(|v| match v {
                Value::Array(a) => a,
                v => vec![v],
            })
            .filter_map(|v| v["id"].as_str().map(String::from))
            .collect();
        Ok(ids)
    }

    /// `texts` remembered through `memd mcp`, closed when done, or, when
    /// `killed`, SIGKILLed (after a recall first: the server then holds
    /// the rows' words, and holds the facts' rows back from the table).
    fn mcp_add(
        &self,
        texts: &[String],
        key: Option<&str>,
        killed: bool,
    ) -> anyhow::Result<Vec<String>> {
        let (mut child, mut stdin, mut out) =
            crate::serving::spawn_mcp_with(&self.layout.root, &[]);
        if killed {
            let query = json!({"query": texts[0]});
            tool_call((&mut stdin, &mut out), texts.len(), "recall", query)?;
        }
        let mut ids = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let mut args = json!({ "text": t });
            if let Some(k) = key {
                args["key"] = json!(format!("{k}#{i}"));
            }
            let (said, added) = tool_call((&mut stdin, &mut out), i, "remember", args)?;
            let id = said
                .split_whitespace()
                .find(|w| w.contains('#'))
                .unwrap_or("");
            let id = id.trim_end_matches([',', '.', ':', ';']).to_string();
            assert_eq!(
                added["ids"],
                json!([id]),
                "remember's text and structured content"
            );
            ids.push(id);
        }
        if killed {
            child.kill()?;
        }
        drop(stdin);
        child.wait()?;
        Ok(ids)
    }
}
