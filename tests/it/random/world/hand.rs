//! Files a person changes by hand: a fact or garbage appended to a day
//! file, an entry deleted, edited or written, MEMORY.md noted in, the
//! consolidated folder deleted.

use std::io::Write;

use super::World;

impl World {
    pub(super) fn hand_append(&mut self, text: &str) -> anyhow::Result<()> {
        let day = chrono::Local::now().format("%Y-%m-%d").to_string();
        let path = self.layout.archive_file(&day);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        writeln!(f, "\n- {text}")?;
        drop(f);
        self.written_by_hand(text, true)
    }

    /// The fact of the line with `text` a person just wrote: one that says
    /// an erased text again is kept out, and reported by `memd check`;
    /// any other is acknowledged with `ack` (else left to `memd check`).
    fn written_by_hand(&mut self, text: &str, ack: bool) -> anyhow::Result<()> {
        let (facts, _) = memd::archive::read_all(&self.layout)?;
        let before = self.ledger.known();
        if let Some(f) = facts
            .iter()
            .rev()
            .find(|f| f.text == text && !before.contains(f.id.as_str()))
        {
            match self.ledger.erased_text(text) {
                true => _ = self.ledger.said_again.insert(f.id.to_string()),
                false if ack => self.ledger.acked(f.id.as_str(), text),
                false => {}
            }
        }
        Ok(())
    }

    pub(super) fn hand_garbage(&mut self) -> anyhow::Result<()> {
        let day = chrono::Local::now().format("%Y-%m-%d").to_string();
        let path = self.layout.archive_file(&day);
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        f.write_all(b"\n- caf\xe9 au lait \xff\xfe\n<!-- never closed\n")?;
        drop(f);
        // Its fact as memd reads it (each bad byte a U+FFFD); an erasure
        // of an earlier one makes this one an erased text said again.
        self.written_by_hand("caf\u{FFFD} au lait \u{FFFD}\u{FFFD}", false)
    }

    pub(super) fn hand_delete(&mut self, pick: u8) -> anyhow::Result<()> {
        let Some((id, text, sources)) = self.entry(pick) else {
            return Ok(());
        };
        crate::support::delete_entry_by_hand(&self.layout.entries_file(), &id)?;
        self.ledger.deleted_by_hand(&id, &text, &sources);
        Ok(())
    }

    /// [`Action::HandDeleteConsolidated`]. The ledger needs nothing more:
    /// a kept fact is held or pending either way, what was forgotten
    /// stays out by its tombstone, and the facts of entries deleted by
    /// hand whose forgetting no run recorded yet are left to `memd check`
    /// already (they come back: nothing is left to say they were deleted).
    pub(super) fn hand_delete_consolidated(&mut self) -> anyhow::Result<()> {
        match std::fs::remove_dir_all(self.layout.consolidated_dir()) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }

    pub(super) fn hand_edit(&mut self, pick: u8) -> anyhow::Result<()> {
        let Some((_, text, _)) = self.entry(pick) else {
            return Ok(());
        };
        let src = std::fs::read_to_string(self.layout.entries_file())?;
        let edited = src.replacen(
            &format!("\n{text}"),
            &format!("\n{text} (said again by hand)"),
            1,
        );
        std::fs::write(self.layout.entries_file(), edited)?;
        Ok(())
    }

    pub(super) fn hand_write(&mut self, text: &str) -> anyhow::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.layout.entries_file())?;
        write!(f, "\n\n{text} (written by hand)\n")?;
        Ok(())
    }

    /// The entries file's heading's case turned in place (same length,
    /// same inode), its modification time put back. A time put back makes
    /// what memd may say of the past a guess (it dates the edit by that
    /// time), so the sequence's as-of answers are judged as after a clock
    /// moved ([`World::skewed`]).
    pub(super) fn hand_edit_in_place(&mut self) -> anyhow::Result<()> {
        let path = self.layout.entries_file();
        let Ok(src) = std::fs::read_to_string(&path) else {
            return Ok(());
        };
        let edited = match src.contains("# Memory\n") {
            true => src.replacen("# Memory\n", "# MEMORY\n", 1),
            false => src.replacen("# MEMORY\n", "# Memory\n", 1),
        };
        if edited == src {
            return Ok(());
        }
        let modified = std::fs::metadata(&path)?.modified()?;
        let mut f = std::fs::OpenOptions::new().write(true).open(&path)?;
        f.write_all(edited.as_bytes())?;
        f.set_modified(modified)?;
        self.skewed = true;
        Ok(())
    }

    /// The state (or the versions tail) rewritten with its large field
    /// first and the others after it in reverse, as a tool that orders
    /// fields its own way would: the last run a gate reads from the
    /// state's head is still the one a whole load reads.
    pub(super) fn hand_reorder_fields(&mut self, tail: bool) -> anyhow::Result<()> {
        let (path, large) = match tail {
            true => (self.layout.versions_tail(), "last"),
            false => (self.layout.state_file(), "watermark"),
        };
        let Ok(bytes) = std::fs::read(&path) else {
            return Ok(());
        };
        let Ok(serde_json::Value::Object(object)) = serde_json::from_slice(&bytes) else {
            return Ok(());
        };
        let mut fields: Vec<(String, serde_json::Value)> = object.into_iter().rev().collect();
        fields.sort_by_key(|(k, _)| k != large);
        let written: Vec<String> = (fields.iter())
            .map(|(k, v)| format!("{}: {v}", serde_json::Value::from(k.as_str())))
            .collect();
        std::fs::write(&path, format!("{{{}}}", written.join(",\n")))?;
        if !tail {
            let head = memd::state::State::last_run(&path)?;
            let whole = memd::state::State::load(&path)?.last_run;
            anyhow::ensure!(
                head == whole,
                "the state's head says the last run was {head:?}, the whole state {whole:?}"
            );
        }
        Ok(())
    }

    pub(super) fn hand_core(&mut self) -> anyhow::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.layout.memory_md())?;
        writeln!(f, "\nA note the person keeps here.")?;
        Ok(())
    }
}
