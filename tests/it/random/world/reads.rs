//! Reads: searches (outside MEMORY.md, narrowed, after the words file is
//! tampered with), status and check, the entries as each way in lists
//! them, and an entry edited.

use memd::ids::ItemId;
use memd::request::Target;
use serde_json::{Value, json};

use super::{World, tool_call};
use crate::random::actions::Via;

impl World {
    /// A search with `exclude_core`: none of its hits is a MEMORY.md line
    /// or an entry MEMORY.md has a line for (read here from the file).
    pub(super) fn search_outside_core(&mut self, text: &str) -> anyhow::Result<()> {
        let req = memd::request::Search {
            query: Some(text.to_string()),
            k: Some(10),
            exclude_core: Some(true),
            ..Default::default()
        };
        let hits = self.run(req)?.hits();
        let md = memd::core_md::CoreMd::read(&self.layout.memory_md())?;
        let core: Vec<String> = md.lines().iter().map(|l| l.entry_id.to_string()).collect();
        for h in &hits {
            let in_core = match h.kind {
                memd::index::RowKind::Core => true,
                memd::index::RowKind::Entry => core.iter().any(|c| c == h.id.as_str()),
                memd::index::RowKind::Fact => false,
            };
            if in_core {
                panic!(
                    "a search leaving out MEMORY.md gave {} ({:?})\nafter:\n{}",
                    h.id,
                    h.text,
                    self.log.join("\n")
                );
            }
        }
        Ok(())
    }

    /// A search with `min_score` at `min` fifths and, with `today`, only
    /// what was stated on this process's day or later.
    /// The words file tampered with (`how`: deleted, a byte flipped, cut
    /// to half, or a copy kept or put back), then `text` searched by a
    /// handle opened afresh and by the long-lived one (or the daemon):
    /// the same rows with the same scores. (Every row that matches at
    /// all, compared as sets: the order of hits weighs recency by each
    /// handle's clock.)
    pub(super) fn hand_words(&mut self, how: u8, text: &str) -> anyhow::Result<()> {
        let path = self.layout.index_words();
        let bytes = std::fs::read(&path).ok();
        match (how, bytes) {
            (0, _) => std::fs::remove_file(&path).unwrap_or(()),
            (1, Some(mut b)) if !b.is_empty() => {
                let at = b.len() / 2;
                b[at] ^= 0x20;
                std::fs::write(&path, b)?;
            }
            (2, Some(b)) => std::fs::write(&path, &b[..b.len() / 2])?,
            (3, now) => match self.words_copy.take() {
                Some(kept) => std::fs::write(&path, kept)?,
                None => self.words_copy = now,
            },
            _ => {}
        }
        let req = || memd::request::Search {
            query: Some(text.to_string()),
            k: Some(100),
            min_score: Some(0.0),
            ..Default::default()
        };
        let rows = |hits: Vec<memd::index::rows::Hit>| -> Vec<(String, String)> {
            let mut v: Vec<_> = hits
                .into_iter()
                .map(|h| (h.id.to_string(), format!("{:.6}", h.score)))
                .collect();
            v.sort();
            v
        };
        let held = rows(self.run(req())?.hits());
        let memory = memd::Memory::open(&self.layout.root)?.at(self.clock());
        let fresh = rows(self.rt.block_on(Target::local(memory).run(req()))?.hits());
        assert_eq!(
            fresh,
            held,
            "a fresh handle (left) and the long-lived one (right) searched {text:?}\nafter:\n{}",
            self.log.join("\n")
        );
        Ok(())
    }

    /// [`Action::Status`]: status and check through the daemon or the
    /// hold against both read from the files (a failure is the oracle's,
    /// not an error of the action).
    pub(super) fn status(&mut self) -> anyhow::Result<()> {
        let kept = self.run(memd::request::Status {})?;
        let memory = memd::Memory::open(&self.layout.root)?.at(self.clock());
        let read = memd::status::gather(&memory, None)?;
        let counts = |r: &memd::status::Report| {
            serde_json::json!([
                r.days,
                r.facts,
                r.facts_forgotten,
                r.pending_facts,
                r.facts_under_review,
                r.tombstones,
                r.last_consolidation,
                [r.entries, r.entries_pinned, r.entries_unreviewed],
                [r.entries_edited_by_hand, r.entries_unsaved_hand_written],
            ])
        };
        let by = match self.daemon.is_some() {
            true => "the daemon",
            false => "this process's hold",
        };
        let after = self.log.join("\n");
        assert_eq!(
            counts(&kept),
            counts(&read),
            "status kept by {by} against the files'\nafter:\n{after}"
        );
        // Its problems, and its notes (a process whose index is open keeps
        // what it found of the words file, of each day file's facts and of
        // the rows) but those of files changed since their last sync,
        // which a sync in between may change.
        let problems = |r: memd::check::Report| -> Vec<String> {
            let notes = (r.notes.iter()).filter(|n| n.kind != memd::check::Kind::IndexUnsynced);
            let mut all: Vec<_> = (r.problems.iter().chain(notes))
                .map(|p| format!("{:?}: {}", p.kind, p.what))
                .collect();
            all.sort();
            all
        };
        let kept = problems(self.run(memd::request::Check {
            fix: false,
            deep: false,
        })?);
        let read = problems(self.rt.block_on(memd::check::run(&memory.layout))?);
        assert_eq!(
            kept, read,
            "check kept by {by} against the files'\nafter:\n{after}"
        );
        Ok(())
    }

    pub(super) fn search_narrowed(
        &mut self,
        text: &str,
        min: u8,
        today: bool,
    ) -> anyhow::Result<()> {
        let min_score = f32::from(min) * 0.2;
        let since = today.then(|| self.clock().today());
        let req = memd::request::Search {
            query: Some(text.to_string()),
            k: Some(20),
            min_score: Some(min_score),
            since: since.clone(),
            ..Default::default()
        };
        for h in self.run(req)?.hits() {
            let day_ok = since.as_ref().is_none_or(|d| h.day.as_ref() >= Some(d));
            assert!(
                (min_score..=1.0).contains(&h.score) && day_ok,
                "search for {text:?} (min_score {min_score}, since {since:?}) gave {h:?}\nafter:\n{}",
                self.log.join("\n")
            );
        }
        Ok(())
    }

    /// The entries as `via` lists them, and entry `pick` as `via` gets it:
    /// exactly the file's live saved entries, in file order, word for word
    /// (a failure is the oracle's, not an error of the action).
    pub(super) fn read_entries(&mut self, via: Via, pick: u8) -> anyhow::Result<()> {
        let doc = self.doc();
        let stones = memd::tombstones::Tombstones::load(&self.layout.tombstones_file())?;
        let mut want: Vec<(String, String)> = Vec::new();
        for e in doc.entries() {
            let Some(m) = &e.meta else { continue };
            let id = m.id.to_string();
            if !stones.names_entry(&id) && !want.iter().any(|(i, _)| *i == id) {
                want.push((id, e.text.clone()));
            }
        }
        let listed = match via {
            Via::Here => self.entries_here(pick, &want)?,
            Via::Cli => self.entries_cli(pick, &want)?,
            Via::Mcp => self.entries_mcp(pick, &want)?,
        };
        if listed != want {
            panic!(
                "entries listed ({via:?}) are not the file's live entries:\nlisted {listed:#?}\nfile {want:#?}\nafter:\n{}",
                self.log.join("\n")
            );
        }
        Ok(())
    }

    /// The entries listed in process, after checking that entry `pick` is
    /// got by id (and by its MEMORY.md row id) as listed.
    fn entries_here(
        &self,
        pick: u8,
        want: &[(String, String)],
    ) -> anyhow::Result<Vec<(String, String)>> {
        let all = self.run(memd::request::Entries::default())?;
        if let Some((id, _)) = want.get(pick as usize % want.len().max(1)) {
            for asked in [id.clone(), format!("core:{id}")] {
                let got = self.run(memd::request::GetEntry {
                    id: ItemId::given(&asked),
                })?;
                let listed = all.iter().find(|v| v.id.as_str() == id);
                assert_eq!(
                    Some(&got),
                    listed,
                    "entry {id} got otherwise than listed\n{}",
                    self.log.join("\n")
                );
            }
        }
        Ok(all
            .into_iter()
            .map(|v| (v.id.to_string(), v.text))
            .collect())
    }

    fn entries_cli(
        &self,
        pick: u8,
        want: &[(String, String)],
    ) -> anyhow::Result<Vec<(String, String)>> {
        let json = |args: &[&str]| -> anyhow::Result<Value> {
            let out = crate::support::memd(&self.layout.root, args);
            anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
            Ok(serde_json::from_slice(&out.stdout)?)
        };
        let all = json(&["entries", "--json"])?;
        if let Some((id, text)) = want.get(pick as usize % want.len().max(1)) {
            let got = json(&["entries", id, "--json"])?;
            assert_eq!(
                got["text"].as_str(),
                Some(text.as_str()),
                "memd entries {id}"
            );
        }
        let pairs = all.as_array().cloned().unwrap_or_default();
        Ok(pairs
            .iter()
            .map(|v| {
                (
                    v["id"].as_str().unwrap_or("").to_string(),
                    v["text"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect())
    }

    /// MCP renders each entry on one line; texts with a line break are
    /// compared with it turned into a space. Its structured content is the
    /// reply in process, field for field.
    fn entries_mcp(
        &self,
        pick: u8,
        want: &[(String, String)],
    ) -> anyhow::Result<Vec<(String, String)>> {
        let (mut child, mut stdin, mut out) =
            crate::serving::spawn_mcp_with(&self.layout.root, &[]);
        let (listed, all) = tool_call((&mut stdin, &mut out), 1, "list_entries", json!({}))?;
        let got = match want.get(pick as usize % want.len().max(1)) {
            Some((id, _)) => {
                let args = json!({"id": id});
                let (said, one) = tool_call((&mut stdin, &mut out), 2, "get_entry", args)?;
                let here = self.run(memd::request::GetEntry {
                    id: ItemId::given(id),
                })?;
                assert_eq!(
                    one,
                    serde_json::to_value(here)?,
                    "get_entry {id}, structured"
                );
                Some((id.clone(), said))
            }
            None => None,
        };
        drop(stdin);
        child.wait()?;
        let here = self.run(memd::request::Entries::default())?;
        assert_eq!(all, json!({ "entries": here }), "list_entries, structured");
        let one_line = |t: &str| t.replace('\n', " ");
        let mut pairs = Vec::new();
        for (id, text) in want {
            let line = format!("- [{id}] {} (", one_line(text));
            if listed.lines().any(|l| l.starts_with(&line)) {
                pairs.push((id.clone(), text.clone()));
            }
        }
        let lines = listed.lines().filter(|l| l.starts_with("- [")).count();
        if lines != pairs.len() {
            pairs.push(("(listed lines)".into(), listed));
        }
        if let Some((id, said)) = got {
            let text = &want.iter().find(|(i, _)| *i == id).unwrap().1;
            let line = format!("- [{id}] {} (", one_line(text));
            assert!(said.starts_with(&line), "get_entry {id}: {said}");
        }
        Ok(pairs)
    }

    /// Edit entry `pick` to `text` (marked as edited) and `pin`; when memd
    /// says it did, the entry got by id says so, with its facts as before.
    pub(super) fn edit_entry(
        &mut self,
        via: Via,
        pick: u8,
        (text, pin): (&str, bool),
    ) -> anyhow::Result<()> {
        let Some((id, _, sources)) = self.entry(pick) else {
            return Ok(());
        };
        let text = format!("{text} (edited)");
        match via {
            Via::Here => {
                let req = memd::request::EditEntry {
                    id: ItemId::given(&id),
                    text: Some(text.clone()),
                    pinned: Some(pin),
                    category: None,
                };
                self.run(req)?;
            }
            Via::Cli => {
                let pin = if pin { "--pin" } else { "--unpin" };
                let args = ["edit", &id, "--text", &text, pin, "--json"];
                let out = crate::support::memd(&self.layout.root, &args);
                anyhow::ensure!(out.status.success(), "{}", crate::support::stderr(&out));
            }
            Via::Mcp => {
                let (mut child, mut stdin, mut out) =
                    crate::serving::spawn_mcp_with(&self.layout.root, &[]);
                let args = json!({"id": id, "text": text, "pinned": pin});
                let said = tool_call((&mut stdin, &mut out), 1, "edit_entry", args);
                drop(stdin);
                child.wait()?;
                let (_, edited) = said?;
                assert_eq!(
                    edited["entry"]["text"],
                    json!(text),
                    "edit_entry, structured"
                );
            }
        }
        let got = self.run(memd::request::GetEntry {
            id: ItemId::given(&id),
        })?;
        let facts: Vec<String> = got.sources.iter().map(|s| s.to_string()).collect();
        assert!(
            got.text == text && got.pinned == pin && facts == sources,
            "edit of {id} ({via:?}) got back as {got:#?}\nafter:\n{}",
            self.log.join("\n")
        );
        Ok(())
    }
}
