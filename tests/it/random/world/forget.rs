//! Forgets, erasures and undos, and the ledger after each.

use memd::ids::ItemId;

use super::World;

impl World {
    fn forget(&mut self, id: &str) -> anyhow::Result<()> {
        let before = (self.entry_by_id(id), self.fact_text(id));
        if let Err(e) = self.run(memd::request::Forget {
            id: ItemId::given(id),
        }) {
            // A refusal says what to do instead as a remedy, in no surface's
            // words; followed, it does what it says.
            let said = format!("{e:#}");
            self.assert(
                !said.contains("`memd "),
                &format!("a refusal names a command line: {said}"),
            );
            if let Some(memd::remedy::Remedy::Forget { id: instead }) = e.remedy() {
                let instead = instead.clone();
                let known = self.entry_by_id(&instead).is_some();
                self.assert(
                    known,
                    &format!("{said}: the remedy names no entry of the file"),
                );
                return self.forget(&instead);
            }
            return Err(e.into());
        }
        match before {
            (Some((text, sources)), _) => self.ledger.forgot_entry(id, &text, &sources),
            (None, Some(text)) => self.ledger.forgot_fact(id, &text),
            _ => {}
        }
        Ok(())
    }

    fn entry_by_id(&self, id: &str) -> Option<(String, Vec<String>)> {
        let doc = self.doc();
        let e = doc.get(id)?;
        let sources = e
            .meta
            .as_ref()
            .map(|m| m.sources.iter().map(|s| s.to_string()).collect());
        Some((e.text.clone(), sources.unwrap_or_default()))
    }

    pub(super) fn forget_entry(&mut self, pick: u8) -> anyhow::Result<()> {
        match self.entry(pick) {
            Some((id, ..)) => self.forget(&id),
            None => Ok(()),
        }
    }

    pub(super) fn forget_fact(&mut self, pick: u8) -> anyhow::Result<()> {
        let ids: Vec<String> = self.ledger.acked.keys().cloned().collect();
        match ids.get(pick as usize % ids.len().max(1)) {
            Some(id) => self.forget(&id.clone()),
            None => Ok(()),
        }
    }

    pub(super) fn forget_match(&mut self, text: &str) -> anyhow::Result<()> {
        let needle: String = text
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ");
        let found = self.run(memd::request::Candidates { text: needle })?;
        for c in found {
            self.forget(&c.id)?;
        }
        Ok(())
    }

    /// The id an erasure picks: an entry of the file, or a fact said.
    pub(super) fn erasable(&self, pick: u8, entry: bool) -> Option<String> {
        if entry {
            return self.entry(pick).map(|(id, ..)| id);
        }
        let ids: Vec<&String> = self.ledger.acked.keys().collect();
        ids.get(pick as usize % ids.len().max(1))
            .map(|s| s.to_string())
    }

    pub(super) fn erase(&mut self, pick: u8, entry: bool) -> anyhow::Result<()> {
        let Some(id) = self.erasable(pick, entry) else {
            return Ok(());
        };
        let texts = self.erasure_texts(&id);
        let erased = self.run(memd::request::Erase {
            id: ItemId::given(&id),
        })?;
        self.erased(&erased, texts);
        Ok(())
    }

    /// The texts an erasure of `id` takes (before it runs): the entry's,
    /// or the fact's.
    /// The texts erasing `id` takes out: an entry's own, and those of the
    /// facts it holds (a fact a person wrote by hand and never saw in an
    /// entry's words is erased with it all the same); or a fact's.
    pub(super) fn erasure_texts(&self, id: &str) -> Vec<String> {
        match self.entry_by_id(id) {
            Some((text, sources)) => std::iter::once(text)
                .chain(sources.iter().filter_map(|s| self.fact_text(s)))
                .collect(),
            None => self.fact_text(id).into_iter().collect(),
        }
    }

    /// The ledger after an erasure, and what it promises at once: no
    /// fact it names is in the archive with its text any more.
    pub(super) fn erased(&mut self, e: &memd::erase::Erasure, texts: Vec<String>) {
        let (facts, _) = memd::archive::read_all(&self.layout).unwrap();
        let ids: std::collections::HashSet<&str> = e.facts.iter().map(|f| f.as_str()).collect();
        let said = facts.iter().find(|f| ids.contains(f.id.as_str()));
        self.assert_erased(
            said.is_none(),
            &format!("{said:?} is still in the archive after erasing {}", e.id),
        );
        let facts: Vec<String> = e.facts.iter().map(|f| f.to_string()).collect();
        self.ledger.erased(&e.id, facts, texts);
    }

    fn assert_erased(&self, ok: bool, what: &str) {
        if !ok {
            panic!("{what}\nafter:\n{}", self.log.join("\n"));
        }
    }

    pub(super) fn undo_forget(&mut self, pick: u8) -> anyhow::Result<()> {
        let ids = &self.ledger.forget_order;
        let Some(id) = ids.get(pick as usize % ids.len().max(1)).cloned() else {
            return Ok(());
        };
        self.run(memd::request::Unforget {
            id: ItemId::given(&id),
        })?;
        self.ledger.unforgot(&id);
        Ok(())
    }

    pub(super) fn undo(&mut self, pick: u8, keep_out: bool) -> anyhow::Result<()> {
        let runs = self.run(memd::request::Runs::default())?;
        let Some(run) = runs.get(pick as usize % runs.len().max(1)) else {
            return Ok(());
        };
        let options = memd::runs::Options {
            keep_out,
            ..Default::default()
        };
        let undo = memd::request::Undo {
            run: run.id.clone(),
            options,
        };
        let outcome = self.run(undo)?;
        self.undone(&outcome);
        Ok(())
    }

    /// The ledger after an undo: what it kept out, and what it let back in.
    pub(super) fn undone(&mut self, outcome: &memd::runs::Outcome) {
        let texts: Vec<(String, String)> = outcome
            .kept_out
            .iter()
            .filter_map(|f| Some((f.to_string(), self.fact_text(f.as_str())?)))
            .collect();
        self.ledger.undone(outcome, &texts);
        let held = self
            .doc()
            .entries()
            .filter_map(|e| e.meta.as_ref())
            .flat_map(|m| m.sources.iter().map(|s| s.to_string()))
            .collect();
        self.ledger.back_in(&held);
    }
}
