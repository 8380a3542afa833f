//! Fields of a JSON object read from the head of its file: a file whose
//! writer puts the small fields a frequent reader needs ahead of a large
//! one (the state's last run ahead of its watermark, the versions tail's
//! stamps ahead of its chunk lists) is read no further than those fields,
//! at a cost that does not grow with the large one.
//!
//! What comes after the last field named is neither read nor checked (a
//! field named again later, bytes after the object): a reader that must
//! see the whole file valid loads it whole. A file whose fields come in
//! another order is read as far as it takes, whole at worst: the answer
//! is the same, only the cost differs.

use std::io::Read;
use std::path::Path;

use serde::de::{DeserializeOwned, Deserializer as _, Error as _, IgnoredAny, MapAccess, Visitor};

/// How much of the file is read first: the fields a writer puts first fit
/// in it; anything longer is read on to the end.
pub(crate) const HEAD: u64 = 4096;

/// The fields `names` of the JSON object in the file at `path`, as `T`
/// (a field the object lacks is one `T` does without, as serde reads
/// it). `Ok(None)` when there is no file; the inner error when the object
/// is not valid JSON up to the last field named, or its fields are not
/// `T`'s.
pub(crate) fn fields<T: DeserializeOwned>(
    path: &Path,
    names: &[&str],
) -> std::io::Result<Option<serde_json::Result<T>>> {
    let mut file = match std::fs::File::open(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        opened => opened?,
    };
    let mut bytes = Vec::new();
    (&mut file).take(HEAD).read_to_end(&mut bytes)?;
    let read = match leading(&bytes, names) {
        Err(e) if e.is_eof() && bytes.len() as u64 == HEAD => {
            file.read_to_end(&mut bytes)?;
            leading(&bytes, names)
        }
        read => read,
    };
    Ok(Some(read.and_then(T::deserialize)))
}

/// The fields `names` of the JSON object `bytes` holds, each the first of
/// its name, read no further than the last of them to come.
fn leading(bytes: &[u8], names: &[&str]) -> serde_json::Result<serde_json::Value> {
    let mut found = serde_json::Map::new();
    let mut stopped = false;
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let read = (&mut de).deserialize_map(UpTo {
        names,
        found: &mut found,
        stopped: &mut stopped,
    });
    match read {
        Err(_) if stopped => {}
        read => read?,
    }
    Ok(serde_json::Value::Object(found))
}

/// Visits an object's fields until each of `names` is in `found`, and
/// stops there with an error, `stopped` set: serde_json checks that a
/// visited object ends where its visitor returns, so stopping early is an
/// error to it. It stops only once the next key (or the object's end)
/// has begun, so that a value the head cuts short (a number, which
/// serde_json would end at the cut) reads as a head that ends too soon.
struct UpTo<'a> {
    names: &'a [&'a str],
    found: &'a mut serde_json::Map<String, serde_json::Value>,
    stopped: &'a mut bool,
}

impl<'de> Visitor<'de> for UpTo<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if !self.names.contains(&key.as_str()) || self.found.contains_key(&key) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            self.found.insert(key, map.next_value()?);
            if self.found.len() == self.names.len() {
                if map.next_key::<IgnoredAny>()?.is_none() {
                    return Ok(());
                }
                *self.stopped = true;
                return Err(A::Error::custom("every field named is read"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn read(bytes: &str, names: &[&str]) -> serde_json::Result<Value> {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("f.json");
        std::fs::write(&path, bytes).unwrap();
        fields(&path, names).unwrap().unwrap()
    }

    #[test]
    fn the_fields_named_are_read_as_far_as_they_go_and_no_further() {
        let big: Vec<String> = (0..2_000).map(|i| format!("fact {i}")).collect();
        let big = serde_json::to_string(&big).unwrap();
        assert!(big.len() as u64 > 4 * HEAD);
        let after = format!(r#"{{"a": 1, "big": {big}, "b": [2]}}"#);
        assert_eq!(
            read(&after, &["a", "b"]).unwrap(),
            json!({"a": 1, "b": [2]})
        );
        let before = format!(r#"{{"b": [2], "a": 1, "a": 3, "big": {big}"#);
        assert_eq!(
            read(&before, &["a", "b"]).unwrap(),
            json!({"a": 1, "b": [2]})
        );
        let lacking = format!(r#"{{"a": 1, "big": {big}}}"#);
        assert_eq!(read(&lacking, &["a", "b"]).unwrap(), json!({"a": 1}));
        assert!(
            read(&lacking[..lacking.len() - 1], &["a", "b"])
                .unwrap_err()
                .is_eof()
        );
        let cut = format!(
            r#"{{"a": "{}", "n": 123456789, "big": {big}}}"#,
            "x".repeat(4075)
        );
        assert_eq!(
            &cut[HEAD as usize - 4..HEAD as usize],
            "3456",
            "the head ends in the number"
        );
        assert_eq!(read(&cut, &["a", "n"]).unwrap()["n"], 123456789);
        assert!(read(r#"{"big": [1,, 2], "a": 1}"#, &["a"]).is_err());
        assert!(read("[1, 2]", &["a"]).is_err());
        let t = tempfile::tempdir().unwrap();
        let none = fields::<Value>(&t.path().join("missing.json"), &["a"]).unwrap();
        assert!(none.is_none());
    }
}
