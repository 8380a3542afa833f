//! The docs' links hold: every relative link of the README, the
//! measurement pages, the examples, the Python client's README and `docs/`
//! (the user's pages and `docs/internals/`) names a file, and a heading of
//! it, that exist. A page moved or a heading renamed fails here, not for a
//! reader.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The pages whose links are checked: the top-level pages, the examples'
/// and the Python client's READMEs, and every page under `docs/`.
fn pages(root: &Path) -> Vec<PathBuf> {
    let top = ["README.md", "BENCHMARKS.md", "EVALUATION.md", "SCALING.md"];
    let mut pages: Vec<PathBuf> = top.iter().map(|p| root.join(p)).collect();
    pages.push(root.join("clients/python/README.md"));
    pages.extend(markdown_in(&root.join("examples"), false));
    pages.extend(markdown_in(&root.join("docs"), true));
    pages
}

/// The `.md` files of `dir`, sorted, and those of its folders when `deep`.
fn markdown_in(dir: &Path, deep: bool) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    paths.sort();
    let mut found = Vec::new();
    for path in paths {
        if path.is_dir() {
            if deep {
                found.extend(markdown_in(&path, true));
            }
        } else if path.extension().is_some_and(|e| e == "md") {
            found.push(path);
        }
    }
    found
}

/// The paragraphs of `text` outside fenced code blocks (runs of lines
/// neither blank nor fences), each with the number of its first line. A
/// fence closes only with its own character, as many times or more, and
/// nothing after it.
fn paragraphs(text: &str) -> Vec<(usize, String)> {
    let mut fence: Option<(char, usize)> = None;
    let mut paragraphs: Vec<(usize, String)> = Vec::new();
    let mut open = false;
    for (i, line) in text.split('\n').enumerate() {
        let trimmed = line.trim_start();
        let mark = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = mark.map_or(0, |m| trimmed.len() - trimmed.trim_start_matches(m).len());
        if let Some((m, n)) = fence {
            if mark == Some(m) && run >= n && trimmed[run..].trim().is_empty() {
                fence = None;
            }
            continue;
        }
        if run >= 3 {
            fence = mark.map(|m| (m, run));
            open = false;
        } else if line.trim().is_empty() {
            open = false;
        } else if open {
            let last = &mut paragraphs.last_mut().unwrap().1;
            last.push('\n');
            last.push_str(line);
        } else {
            paragraphs.push((i + 1, line.to_string()));
            open = true;
        }
    }
    paragraphs
}

/// GitHub's anchor for a heading: lower case, no punctuation but `-` and
/// `_`, each space a `-`.
fn slug(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(*c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of the headings of `text`, a repeated one with `-1`, `-2`,
/// … after it, as GitHub gives them.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut anchors = BTreeSet::new();
    for (_, paragraph) in paragraphs(text) {
        for line in paragraph.lines() {
            let level = line.len() - line.trim_start_matches('#').len();
            let Some(title) = line[level..].strip_prefix(' ') else {
                continue;
            };
            if !(1..=6).contains(&level) {
                continue;
            }
            let base = slug(title.trim());
            let mut anchor = base.clone();
            let mut n = 0;
            while anchors.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            anchors.insert(anchor);
        }
    }
    anchors
}

/// `paragraph` with each code span made `code` (its line breaks kept), so
/// that what a span shows is never taken for a link.
fn without_code(paragraph: &str) -> String {
    let mut out = String::new();
    let mut rest = paragraph;
    while let Some(at) = rest.find('`') {
        out.push_str(&rest[..at]);
        let run = rest[at..].len() - rest[at..].trim_start_matches('`').len();
        let (ticks, body) = rest[at..].split_at(run);
        match body.find(ticks) {
            Some(close) => {
                out.push_str("code");
                out.push_str(&"\n".repeat(body[..close].matches('\n').count()));
                rest = &body[close + run..];
            }
            None => {
                out.push_str(ticks);
                rest = body;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The target of each link `[text](target)` of `text` outside code, with
/// the number of the line it is on.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut links = Vec::new();
    for (first, paragraph) in paragraphs(text) {
        let prose = without_code(&paragraph);
        let mut from = 0;
        while let Some(at) = prose[from..].find("](").map(|i| from + i) {
            from = at + 2;
            if !prose[..at].contains('[') {
                continue;
            }
            let Some(end) = prose[from..].find(')') else {
                continue;
            };
            let target = prose[from..from + end].split_whitespace().next();
            let line = first + prose[..at].matches('\n').count();
            links.push((line, target.unwrap_or("").to_string()));
        }
    }
    links
}

/// Why the link to `target` on `page` is broken, if it is: it names a file
/// that does not exist, or an anchor no heading of the markdown file it
/// names (or of `page`, for `#anchor`) has. Links to the web are not
/// followed.
fn broken(page: &Path, target: &str) -> Option<String> {
    if ["http:", "https:", "mailto:"]
        .iter()
        .any(|s| target.starts_with(s))
    {
        return None;
    }
    let (path, anchor) = target.split_once('#').unwrap_or((target, ""));
    let file = match path {
        "" => page.to_path_buf(),
        path => page.parent().unwrap().join(path),
    };
    if !file.exists() {
        return Some("no such file".to_string());
    }
    let markdown = file.is_file() && file.extension().is_some_and(|e| e == "md");
    if anchor.is_empty() || !markdown {
        return None;
    }
    let text = fs::read_to_string(&file).unwrap();
    if anchors(&text).contains(anchor) {
        None
    } else {
        Some(format!("no heading has the anchor #{anchor}"))
    }
}

/// Every relative link of the docs names a file that exists and, when it
/// names a heading (`PAGE.md#anchor`, or `#anchor` on the same page), a
/// heading that page has, by GitHub's anchor for it. What code shows
/// (fenced blocks, code spans) is not a link. Every broken link is listed
/// at once, with its page and line.
#[test]
fn every_link_in_the_docs_names_a_file_and_heading_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    let mut broken_links = Vec::new();
    for page in pages(root) {
        let text = fs::read_to_string(&page).unwrap_or_else(|e| panic!("{}: {e}", page.display()));
        let shown = page.strip_prefix(root).unwrap().display().to_string();
        for (line, target) in links(&text) {
            checked += 1;
            if let Some(why) = broken(&page, &target) {
                broken_links.push(format!("{shown}:{line}: ({target}) {why}"));
            }
        }
    }
    assert!(
        checked >= 100,
        "only {checked} links found: pages are missed"
    );
    assert!(
        broken_links.is_empty(),
        "{} of {checked} links are broken:\n{}",
        broken_links.len(),
        broken_links.join("\n")
    );
}
