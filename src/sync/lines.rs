//! Merging files of lines that are only ever appended to (and rewritten
//! in place by an erasure): JSON lines, and the generated lines of
//! MEMORY.md. Three-way, by line: a line either side took out stays out,
//! a line either side added is in, once.

use std::collections::HashMap;

/// Split into lines, each with its newline (a last line without one gets
/// it: the merged file always ends with a newline).
pub(crate) fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|l| {
            let mut l = l.to_vec();
            if l.last() != Some(&b'\n') {
                l.push(b'\n');
            }
            l
        })
        .collect()
}

fn counts(lines: &[Vec<u8>]) -> HashMap<&[u8], usize> {
    let mut out: HashMap<&[u8], usize> = HashMap::new();
    for l in lines {
        *out.entry(l.as_slice()).or_default() += 1;
    }
    out
}

/// The time a JSON line carries (`ts`), for placing the other side's
/// lines among ours; a line without one sorts first.
fn time_of(line: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Ts {
        #[serde(default)]
        ts: String,
    }
    serde_json::from_slice::<Ts>(line)
        .map(|t| t.ts)
        .unwrap_or_default()
}

/// Merge three versions of a file of lines. How many copies of a line the
/// result holds: the side that changed the count decides; when both did,
/// the larger count (a line both sides added is the same record, once).
/// Order: ours, with each line only theirs has placed after the last
/// line whose time is not later than its own (`ts` of a JSON line) and
/// after the line of theirs before it, so that each side's own order is
/// kept and a record erased in place stays where it was on our side.
pub(crate) fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (o, a, b) = (lines(base), lines(ours), lines(theirs));
    let (co, ca, cb) = (counts(&o), counts(&a), counts(&b));
    let want = |l: &[u8]| {
        let (n_o, n_a, n_b) = (
            co.get(l).copied().unwrap_or(0),
            ca.get(l).copied().unwrap_or(0),
            cb.get(l).copied().unwrap_or(0),
        );
        if n_a == n_o {
            n_b
        } else if n_b == n_o {
            n_a
        } else {
            n_a.max(n_b)
        }
    };
    let mut left: HashMap<&[u8], usize> = HashMap::new();
    for l in a.iter().chain(&b) {
        left.entry(l.as_slice()).or_insert_with(|| want(l));
    }
    let mut out: Vec<&[u8]> = Vec::new();
    for l in &a {
        if let Some(n) = left.get_mut(l.as_slice()).filter(|n| **n > 0) {
            *n -= 1;
            out.push(l);
        }
    }
    let mut times: Vec<String> = out.iter().map(|l| time_of(l)).collect();
    let mut floor = 0;
    for l in &b {
        let Some(n) = left.get_mut(l.as_slice()).filter(|n| **n > 0) else {
            continue;
        };
        *n -= 1;
        let t = time_of(l);
        let at = (floor..out.len())
            .rev()
            .find(|&i| times[i] <= t)
            .map_or(floor, |i| i + 1)
            .max(floor);
        out.insert(at, l);
        times.insert(at, t);
        floor = at + 1;
    }
    out.concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(o: &str, a: &str, b: &str) -> String {
        String::from_utf8(merge(o.as_bytes(), a.as_bytes(), b.as_bytes())).unwrap()
    }

    #[test]
    fn records_added_on_either_side_are_all_kept_in_time_order_after_ours() {
        let o = "{\"ts\":\"1\"}\n";
        let a = "{\"ts\":\"1\"}\n{\"ts\":\"3\"}\n";
        let b = "{\"ts\":\"1\"}\n{\"ts\":\"2\"}\n{\"ts\":\"4\"}\n";
        assert_eq!(
            m(o, a, b),
            "{\"ts\":\"1\"}\n{\"ts\":\"2\"}\n{\"ts\":\"3\"}\n{\"ts\":\"4\"}\n"
        );
    }

    #[test]
    fn a_record_one_side_rewrote_or_removed_stays_rewritten_or_removed() {
        let o = "{\"ts\":\"1\",\"t\":\"x\"}\n{\"ts\":\"2\"}\n";
        let a = "{\"ts\":\"1\",\"t\":null}\n{\"ts\":\"2\"}\n";
        let b = "{\"ts\":\"1\",\"t\":\"x\"}\n{\"ts\":\"2\"}\n{\"ts\":\"3\"}\n";
        assert_eq!(
            m(o, a, b),
            "{\"ts\":\"1\",\"t\":null}\n{\"ts\":\"2\"}\n{\"ts\":\"3\"}\n"
        );
        assert_eq!(
            m(o, b, a),
            "{\"ts\":\"1\",\"t\":null}\n{\"ts\":\"2\"}\n{\"ts\":\"3\"}\n"
        );
    }

    #[test]
    fn a_record_both_sides_added_is_kept_once() {
        assert_eq!(m("", "x\n", "x\n"), "x\n");
        assert_eq!(m("x\n", "x\nx\n", "x\n"), "x\nx\n");
    }
}
