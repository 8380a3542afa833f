//! What `memd check` finds of the words file (`.memd/index/words.bin`,
//! [`super::words`]): whether it is the file the table's rows make now.

use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwapOption;

use crate::Layout;
use crate::error::Result;
use crate::stamp::Stamp;

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

/// What a check last found of the words file at one stamp, and against
/// which table version (`None`: no table, or a damaged file, which no
/// version makes whole), kept by the process whose index is open (a
/// daemon's): a check that finds both as they were finds the same
/// without reading the file or tokenising the table's rows again, and one
/// that finds the file as it was and the table at another version than
/// the file names finds it of another version without reading it (a
/// daemon writes no words file for its own versions: each of its writes
/// moves the table on from the file). A
/// version's rows never change, and a file's stamp proves its bytes only
/// when it held still while they were read and was settled when the
/// read began ([`Stamp::settled`]); anything else, and the file is read
/// again.
#[derive(Default)]
pub struct Checked(ArcSwapOption<Kept>);

/// The file's stamp; what was found, and against which table version and
/// time; and the table version and time the file names (`None`: damaged).
/// A file that names another version than the table's is of another
/// version whatever its rows: found so again without reading it.
type Kept = (Stamp, Found, Option<(u64, u64)>, Option<(u64, u64)>);

impl Checked {
    /// What was found of the file at `file`, if the table is still at the
    /// version it was found against, or is at another than the file names.
    async fn found(&self, layout: &Layout, file: Stamp) -> Result<Option<Found>> {
        let Some(kept) = self.0.load_full() else {
            return Ok(None);
        };
        let (stamp, found, version, names) = *kept;
        if stamp != file {
            return Ok(None);
        }
        if found == Found::Unreadable {
            return Ok(Some(found));
        }
        let now = match super::table::existing(layout).await? {
            Some(table) => Some(super::table::stamp_of(&table).await?),
            None => None,
        };
        Ok(match now {
            _ if now == version => Some(found),
            Some(_) if names.is_some() && now != names => Some(Found::Other),
            _ => None,
        })
    }
}

/// The words file against the words of the table's rows (read only; a
/// writer beside it may move the table on, which reads as [`Found::Other`]),
/// or what `kept` found of them as they are.
pub async fn compare(layout: &Layout, kept: Option<&Checked>) -> Result<Found> {
    let path = layout.index_words();
    let Some(before) = Stamp::at(&path) else {
        return Ok(Found::Absent);
    };
    if let Some(kept) = kept
        && let Some(found) = kept.found(layout, before).await?
    {
        return Ok(found);
    }
    // Settled before the read begins: a write during it carries later
    // times than `before`.
    let settled = before.settled();
    let (found, version, names) = read(layout, &path).await?;
    if let Some(kept) = kept
        && settled
        && Stamp::at(&path) == Some(before)
    {
        kept.0
            .store(Some(Arc::new((before, found, version, names))));
    }
    Ok(found)
}

/// The file at `path` against the table's rows; the table's version (with
/// the time it was made) if the file was compared with it; and the version
/// and time the file names, if it is whole.
async fn read(
    layout: &Layout,
    path: &Path,
) -> Result<(Found, Option<(u64, u64)>, Option<(u64, u64)>)> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok((Found::Absent, None, None));
    };
    let Some(file) = super::words::from_bytes(&bytes) else {
        return Ok((Found::Unreadable, None, None));
    };
    let names = Some((file.version, file.stamp));
    let Some(table) = super::table::existing(layout).await? else {
        return Ok((Found::Absent, None, names));
    };
    let (version, stamp) = super::table::stamp_of(&table).await?;
    if (file.version, file.stamp) != (version, stamp) {
        return Ok((Found::Other, Some((version, stamp)), names));
    }
    let dim = super::table::vector_dim(&table).await?;
    let (rows, dim) = super::reader::table_rows(&table, dim).await?;
    let terms = super::terms::Terms::loaded(rows, dim)?;
    let parts = terms.parts(version).expect("the rows were just loaded");
    let want = super::words::encode(super::words::Parts { stamp, ..parts })?;
    let found = match want == bytes {
        true => Found::Same,
        false => Found::Differs,
    };
    Ok((found, Some((version, stamp)), names))
}
