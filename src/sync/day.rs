//! Merging a day file of the archive (`archive/YYYY-MM-DD.md`): the union
//! of both sides' facts, byte-identical whichever side merges, and again
//! whichever merges come after.
//!
//! A day file is read as its header (what comes before memd's first
//! `## HH:MM:SS` heading: the day's title) and its sections (a heading and
//! the lines under it). A merge keeps every section of both sides, once,
//! in one order that depends on nothing but the sections (by heading, the
//! time first, then by bytes): so a merge of merges still finds what it
//! merges, however each side came to hold it. A section of the common
//! version is matched on each side by its heading and lines, where a side
//! may have added lines at its end (an append in the same second and
//! session) or turned a fact's line into a redaction line (an erasure,
//! the one rewrite of the archive). The merge keeps each redaction and
//! each side's added lines; lines both sides added under one heading go
//! under that heading twice, so that a block one side left open (an
//! unclosed comment written by hand) never swallows the other side's
//! facts: memd's heading starts a section the archive parses on its own
//! ([`crate::archive`]).
//!
//! A common section both sides changed otherwise (by hand) is kept as
//! each side has it. Where both sides changed the header (a day both
//! created, one by hand without memd's headings), the smaller stays and
//! the other's lines go under a heading `## 00:00:00`: their facts keep
//! their ids and now parse on their own, with that time.

use super::lines::lines;

/// A day file: its header lines and its sections (each a heading line and
/// the lines under it, trailing blank lines aside).
struct Day {
    header: Vec<Vec<u8>>,
    sections: Vec<Vec<Vec<u8>>>,
}

fn parse(bytes: &[u8]) -> Day {
    let mut day = Day {
        header: Vec::new(),
        sections: Vec::new(),
    };
    for l in lines(bytes) {
        match day.sections.last_mut() {
            _ if is_memd_heading(&l) => day.sections.push(vec![l]),
            Some(s) => s.push(l),
            None => day.header.push(l),
        }
    }
    trim(&mut day.header);
    for s in &mut day.sections {
        trim(s);
    }
    day
}

fn trim(ls: &mut Vec<Vec<u8>>) {
    while ls.last().is_some_and(|l| is_blank(l)) {
        ls.pop();
    }
}

/// A section of the merge, with what orders it: its heading, the common
/// section it comes of (`usize::MAX`: none), its part of that section
/// (0: the section itself), and its lines.
type Placed = (Vec<u8>, usize, u8, Vec<Vec<u8>>);

/// The merge.
pub(crate) fn merge(base: &[u8], ours: &[u8], theirs: &[u8]) -> Vec<u8> {
    let (o, a, b) = (parse(base), parse(ours), parse(theirs));
    let (header, moved) = merged_header(&o, &a, &b);
    let (mut used_a, mut used_b) = (vec![false; a.sections.len()], vec![false; b.sections.len()]);
    // (heading, the common section it comes of (new: none), its part of
    // that section (0: the section itself), lines): sorted, an order of
    // the sections alone.
    let mut out: Vec<Placed> = Vec::new();
    for (n, s) in o.sections.iter().enumerate() {
        let x = find(s, &a.sections, &mut used_a);
        let y = find(s, &b.sections, &mut used_b);
        let (x, y) = match (x, y) {
            (Some(x), Some(y)) => (x, y),
            // Taken out by hand on one side: out, unless the other side
            // added to it.
            (Some(x), None) | (None, Some(x)) if x.len() > s.len() => (x, s.as_slice()),
            _ => continue,
        };
        out.extend(merged_section((n, s), x, y));
    }
    for (sections, used) in [(&a.sections, &used_a), (&b.sections, &used_b)] {
        for (s, _) in sections.iter().zip(used.iter()).filter(|(_, u)| !**u) {
            let new = (s[0].clone(), usize::MAX, 0, s.clone());
            if !out.contains(&new) {
                out.push(new);
            }
        }
    }
    if let Some(m) = moved {
        out.push((NO_TIME.to_vec(), usize::MAX, 0, m));
    }
    out.sort();
    let mut bytes = header.concat();
    for (.., s) in out {
        if !bytes.is_empty() {
            bytes.push(b'\n');
        }
        bytes.extend(s.concat());
    }
    bytes
}

/// The merged header, and, when both sides changed it, the other side's
/// lines to go under a heading of their own.
fn merged_header(o: &Day, a: &Day, b: &Day) -> (Vec<Vec<u8>>, Option<Vec<Vec<u8>>>) {
    if a.header == o.header || a.header == b.header {
        return (b.header.clone(), None);
    }
    if b.header == o.header {
        return (a.header.clone(), None);
    }
    // Both changed it (a day both sides created, one by hand): the
    // smaller stays the header, the other's lines go under a heading of
    // their own, where nothing above can swallow them.
    let (keep, other) = match a.header <= b.header {
        true => (&a.header, &b.header),
        false => (&b.header, &a.header),
    };
    let rest: Vec<Vec<u8>> = (other.iter())
        .filter(|l| !keep.contains(l))
        .cloned()
        .collect();
    let moved =
        (rest.iter().any(|l| !is_blank(l))).then(|| [vec![NO_TIME.to_vec()], rest].concat());
    (keep.clone(), moved)
}

/// The common section `s` (the `n`th) as the two sides `x` and `y` hold
/// it: its lines (a redaction on either side holds), then what each side
/// added under it, once when only one side added or both added the same,
/// else each side's under the heading again.
fn merged_section((n, s): (usize, &[Vec<u8>]), x: &[Vec<u8>], y: &[Vec<u8>]) -> Vec<Placed> {
    let mut merged: Vec<Vec<u8>> = s
        .iter()
        .enumerate()
        .map(|(i, line)| {
            // A redaction holds; two (an erasure on each side, dated
            // apart) give the smaller, whichever side is ours.
            let red = [&x[i], &y[i]]
                .into_iter()
                .filter(|r| is_redaction(r) && *r != line);
            red.min().unwrap_or(line).clone()
        })
        .collect();
    let (more_x, more_y) = (&x[s.len()..], &y[s.len()..]);
    if more_x.is_empty() || more_y.is_empty() || more_x == more_y {
        merged.extend(more_x.iter().chain(more_y).cloned());
        if more_x == more_y {
            merged.truncate(s.len() + more_x.len());
        }
        return vec![(s[0].clone(), n, 0, merged)];
    }
    // Both added under it: each side's lines under the heading again.
    let mut out = vec![(s[0].clone(), n, 0, merged)];
    for more in [more_x, more_y] {
        let lines = [vec![s[0].clone()], more.to_vec()].concat();
        out.push((s[0].clone(), n, 1, lines));
    }
    out
}

/// The section of `sections`, not yet `used`, that is `base` as a side
/// holds it: the same heading, each line the same or made a redaction,
/// and maybe lines added at its end.
fn find<'a>(
    base: &[Vec<u8>],
    sections: &'a [Vec<Vec<u8>>],
    used: &mut [bool],
) -> Option<&'a [Vec<u8>]> {
    let at = sections.iter().enumerate().position(|(i, t)| {
        !used[i]
            && t.len() >= base.len()
            && t[0] == base[0]
            && base.iter().zip(t).all(|(x, y)| x == y || is_redaction(y))
    })?;
    used[at] = true;
    Some(&sections[at])
}

/// The heading of lines a side wrote before any heading of memd's, when
/// the other side's header stays in place.
const NO_TIME: &[u8] = b"## 00:00:00\n";

/// A heading memd writes (`## HH:MM:SS…`): one starts a section the
/// archive parses on its own.
fn is_memd_heading(line: &[u8]) -> bool {
    let time = line.get(3..11).unwrap_or_default();
    line.starts_with(b"## ")
        && time.len() == 8
        && time.iter().enumerate().all(|(i, c)| {
            if i % 3 == 2 {
                *c == b':'
            } else {
                c.is_ascii_digit()
            }
        })
}

fn is_blank(line: &[u8]) -> bool {
    line.iter().all(u8::is_ascii_whitespace)
}

fn is_redaction(line: &[u8]) -> bool {
    line.windows(12).any(|w| w == b"<!-- erased:")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Layout, archive};

    const BASE: &str = "# 2026-11-27\n\n## 10:00:00\n- tea\n";

    fn m(o: &str, a: &str, b: &str) -> String {
        String::from_utf8(merge(o.as_bytes(), a.as_bytes(), b.as_bytes())).unwrap()
    }

    /// The facts the archive reads in a day file of `text`.
    fn texts(text: &str) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        std::fs::create_dir_all(dir.path().join("archive")).unwrap();
        std::fs::write(layout.archive_file("2026-11-27"), text).unwrap();
        let (facts, _) = archive::read_all(&layout).unwrap();
        facts.into_iter().map(|f| f.text).collect()
    }

    #[test]
    fn both_sides_sections_are_kept_in_time_order_whichever_side_merges() {
        let a = format!("{BASE}\n## 11:00:00\n- jazz\n\n## 13:00:00\n- rain\n");
        let b = format!("{BASE}\n## 12:00:00 · session s\n- chess\n");
        let want = format!(
            "{BASE}\n## 11:00:00\n- jazz\n\n## 12:00:00 · session s\n- chess\n\n## 13:00:00\n- rain\n"
        );
        assert_eq!(m(BASE, &a, &b), want);
        assert_eq!(m(BASE, &b, &a), want);
    }

    #[test]
    fn a_fact_appended_to_the_last_section_stays_in_it_and_sections_go_by_time() {
        let a = format!("{BASE}- coffee\n");
        let b = format!("{BASE}\n## 09:00:00\n- early\n");
        let want = "# 2026-11-27\n\n## 09:00:00\n- early\n\n## 10:00:00\n- tea\n- coffee\n";
        assert_eq!(m(BASE, &a, &b), want);
        assert_eq!(m(BASE, &b, &a), want);
    }

    #[test]
    fn facts_both_sides_added_to_the_last_section_are_not_swallowed_by_a_block_left_open() {
        let a = format!("{BASE}\n- caf\n<!-- never closed\n");
        let b = format!("{BASE}- milk\n");
        let want =
            format!("{BASE}\n## 10:00:00\n\n- caf\n<!-- never closed\n\n## 10:00:00\n- milk\n");
        assert_eq!(m(BASE, &a, &b), want);
        assert_eq!(m(BASE, &b, &a), want);
        assert!(
            texts(&want).contains(&"milk".to_string()),
            "{:?}",
            texts(&want)
        );
    }

    #[test]
    fn a_day_both_sides_created_apart_one_by_hand_without_a_title_keeps_every_fact() {
        let a = "\n- milk\n\n- caf\n<!-- never closed\n";
        let b = "# 2026-11-27\n\n## 09:00:00\n- tea\n";
        let merged = m("", a, b);
        assert_eq!(merged, m("", b, a));
        for fact in ["milk", "caf", "tea"] {
            assert!(texts(&merged).contains(&fact.to_string()), "{merged}");
        }
    }

    #[test]
    fn a_merge_of_merges_finds_every_section_whichever_side_merged_first() {
        let a = format!("{BASE}\n## 11:00:00\n- jazz\n");
        let b = format!("{BASE}\n## 12:00:00\n- chess\n");
        let ab = m(BASE, &a, &b);
        let b2 = format!("{b}\n## 12:30:00\n- rain\n");
        let a2 = format!("{ab}\n## 13:00:00\n- snow\n");
        let merged = m(&b, &b2, &a2);
        assert_eq!(merged, m(&b, &a2, &b2));
        for fact in ["tea", "jazz", "chess", "rain", "snow"] {
            assert_eq!(
                texts(&merged).iter().filter(|t| *t == fact).count(),
                1,
                "{merged}"
            );
        }
    }

    #[test]
    fn a_day_both_sides_created_keeps_one_title() {
        let a = "# 2026-11-27\n\n## 10:00:00\n- tea\n";
        let b = "# 2026-11-27\n\n## 09:00:00\n- milk\n";
        let want = "# 2026-11-27\n\n## 09:00:00\n- milk\n\n## 10:00:00\n- tea\n";
        assert_eq!(m("", a, b), want);
        assert_eq!(m("", b, a), want);
    }

    #[test]
    fn a_redaction_on_one_side_holds_in_the_merge() {
        let red = "# 2026-11-27\n\n## 10:00:00\n- <!-- erased:2026-11-27#ab 2026-11-28 -->\n";
        let b = format!("{BASE}- more\n");
        let want = format!("{red}- more\n");
        assert_eq!(m(BASE, red, &b), want);
        assert_eq!(m(BASE, &b, red), want);
    }

    #[test]
    fn a_line_changed_by_hand_on_both_sides_is_kept_both_ways() {
        let a = BASE.replace("tea", "green tea");
        let b = BASE.replace("tea", "black tea");
        let merged = m(BASE, &a, &b);
        assert_eq!(texts(&merged), ["black tea", "green tea"], "{merged}");
    }

    #[test]
    fn a_title_changed_by_hand_on_both_sides_keeps_both_titles() {
        let a = BASE.replace("# 2026", "# Friday 2026");
        let b = BASE.replace("# 2026", "# Day 2026");
        let merged = m(BASE, &a, &b);
        assert!(
            merged.contains("# Friday") && merged.contains("# Day"),
            "{merged}"
        );
        assert_eq!(texts(&merged), ["tea"]);
    }
}
