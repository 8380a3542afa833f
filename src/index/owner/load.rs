//! The words of the table's version ([`crate::index::terms`]), loaded by
//! the owner for the handle's searches: from the words file when it is of
//! that version ([`crate::index::words`]), else from the table, and then
//! the words file is written for the next process. Readers never load or
//! write them; they ask ([`super::Job::Words`]).

use super::Owner;
use crate::atomic;
use crate::error::Result;
use crate::index::{reader, table, words};
use crate::steps::{timed, timed_now};

impl Owner {
    /// Bring the words to the table's version at the handle's (`force`:
    /// load them anew whatever their version); `unmap`: take any read from
    /// the words file into memory (a long-lived process that writes, the
    /// daemon, then pays for it neither at its first search nor at its
    /// first append).
    pub(super) async fn words(&mut self, force: bool, unmap: bool) -> Result<()> {
        let version = self.shared.table.version().await?;
        let current = self.words.version() == Some(version);
        if force || !current {
            self.load_words().await?;
        }
        if unmap {
            self.words.unmapped();
        }
        Ok(())
    }

    /// Load every row's words at the handle's version (a new handle's
    /// first search, or one after another process wrote): from the words
    /// file when it is of this version, else from the table, and then the
    /// words file is written for this version.
    async fn load_words(&mut self) -> Result<()> {
        let table = &self.shared.table;
        let stamp = table.stamp().await?;
        let path = self.shared.layout.index_words();
        let file = tokio::task::spawn_blocking(move || words::read(&path, stamp));
        if let Some(m) = timed("words file read", file).await? {
            self.words.map(m);
            return Ok(());
        }
        let rows = reader::table_rows(&table.inner, table.dim);
        let (rows, dim) = timed("words: table rows", rows).await?;
        timed_now("words: tokenised", || self.words.load(stamp.0, rows, dim));
        if let Err(e) = timed("words file write", self.write_words(stamp)).await {
            tracing::debug!("words file not written: {e:#}");
        }
        Ok(())
    }

    /// Write the words file of the rows just loaded for `stamp`: under
    /// the index lock, and only if no process has written the table since
    /// (an erasure deletes the file under that lock; a file written after
    /// it from rows read before it would hold the erased text again).
    ///
    /// Not when this process's own writes made that version: a process
    /// that writes is one of a run of writes (a command's search after
    /// `memd add`, a daemon's appends), whose next version makes the file
    /// stale at once, and writing it is costly (BENCHMARKS.md). A process
    /// that only reads (a search with nothing to sync) writes it, and the
    /// next one reads it.
    async fn write_words(&self, stamp: (u64, u64)) -> Result<()> {
        let bytes = {
            let words = &self.words;
            match words.parts().filter(|_| !words.made_here()) {
                Some(parts) => words::encode(words::Parts {
                    stamp: stamp.1,
                    ..parts
                })?,
                None => return Ok(()),
            }
        };
        let layout = &self.shared.layout;
        let _all = table::write_lock(layout).await?;
        if table::latest_stamp(layout).await? != stamp {
            return Ok(());
        }
        // Not fsynced, like the index's other files: one a power cut tears
        // fails its checksum and is written anew.
        let path = layout.index_words();
        let write = move || atomic::write_unsynced(&path, &bytes);
        Ok(tokio::task::spawn_blocking(write).await??)
    }
}
