//! What `memd check` finds of the words file (`.memd/index/words.bin`,
//! [`super::words`]): whether it is the file the table's rows make now.

use crate::Layout;
use crate::error::Result;

/// What `memd check` finds of the words file ([`compare`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// No file, or no table.
    Absent,
    /// A file that is not a words file (damaged): searches ignore it.
    Unreadable,
    /// A file of another version of the table: searches ignore it.
    Other,
    /// The file the table's rows make, byte for byte.
    Same,
    /// A file of the table's version that is not the one its rows make:
    /// searches would read wrong words.
    Differs,
}

/// The words file against the words of the table's rows (read only; a
/// writer beside it may move the table on, which reads as [`Found::Other`]).
pub async fn compare(layout: &Layout) -> Result<Found> {
    let path = layout.index_words();
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(Found::Absent);
    };
    let Some(file) = super::words::from_bytes(&bytes) else {
        return Ok(Found::Unreadable);
    };
    let Some(table) = super::table::existing(layout).await? else {
        return Ok(Found::Absent);
    };
    let (version, stamp) = super::table::stamp_of(&table).await?;
    if (file.version, file.stamp) != (version, stamp) {
        return Ok(Found::Other);
    }
    let dim = super::table::vector_dim(&table).await?;
    let (rows, dim) = super::reader::table_rows(&table, dim).await?;
    let terms = super::terms::Terms::loaded(rows, dim)?;
    let parts = terms.parts(version).expect("the rows were just loaded");
    let want = super::words::encode(super::words::Parts { stamp, ..parts })?;
    Ok(if want == bytes {
        Found::Same
    } else {
        Found::Differs
    })
}
