//! The page's markup (maud: every text escaped unless said otherwise).
//! Each control is a form control with a visible label or its own words,
//! so the page works from the keyboard and with a screen reader.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use maud::{DOCTYPE, Markup, html};

use super::At;
use crate::archive::Fact;
use crate::core_md::Line;
use crate::index::rows::Hit;
use crate::journal::Record;
use crate::request::{EntryView, ReviewList, Shown};
use crate::runs::{Run, op_name};
use crate::status::Report as Status;
use crate::versions::Then;

/// The frame of every page: title, navigation, a message, the content.
fn frame(at: &At, title: &str, said: Option<&str>, content: Markup) -> Markup {
    let base = &at.base;
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · memd" }
                link rel="stylesheet" href={ (base) "/style.css" };
            }
            body {
                a.skip href="#main" { "Skip to the content" }
                header {
                    nav aria-label="memd" {
                        a href={ (base) "/" } { "Memory" }
                        a href={ (base) "/review" } { "Review" }
                        a href={ (base) "/runs" } { "Runs" }
                        a href={ (base) "/archive" } { "Archive" }
                        a href={ (base) "/as-of" } { "As of" }
                    }
                    form role="search" action={ (base) "/search" } method="get" {
                        label for="q" { "Search the memory" }
                        input #q type="search" name="q";
                        button type="submit" { "Search" }
                    }
                }
                main #main {
                    h1 { (title) }
                    @if let Some(said) = said {
                        p.said role="status" { (said) }
                    }
                    (content)
                }
            }
        }
    }
}

/// One POST button (a form of its own), labelled by its words.
fn button(action: &str, words: &str, fields: &[(&str, &str)]) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            @for (name, value) in fields {
                input type="hidden" name=(name) value=(value);
            }
            button type="submit" { (words) }
        }
    }
}

pub(super) fn error(status: StatusCode, message: &str) -> Markup {
    let at = At {
        base: String::new(),
        name: None,
    };
    let title = status.canonical_reason().unwrap_or("Error");
    frame(
        &at,
        title,
        None,
        html! { p.error role="alert" { (message) } },
    )
}

pub(super) fn index(
    at: &At,
    said: Option<&str>,
    (core, status): (&[Line], &Status),
    pending: &[Fact],
    forgotten: &[(String, String)],
) -> Markup {
    let base = &at.base;
    let content = html! {
        section aria-labelledby="core" {
            h2 #core { "MEMORY.md, as the agent sees it" }
            @if core.is_empty() {
                p { "No lines yet: a consolidation run writes them." }
            }
            ul.lines {
                @for l in core {
                    li {
                        a href={ (base) "/entries/" (l.entry_id) } { (l.text) }
                        @if let Some(d) = &l.date { " " span.day { (d) } }
                    }
                }
            }
        }
        section aria-labelledby="counts" {
            h2 #counts { "In this memory" }
            p {
                (status.facts) " facts, " (status.entries) " entries, "
                (status.pending_facts) " pending"
                @if status.review_open > 0 {
                    ", " a href={ (base) "/review" } { (status.review_open) " proposals to review" }
                }
                "."
            }
        }
        section aria-labelledby="pending" {
            h2 #pending { "Pending facts (" (pending.len()) ")" }
            ul {
                @for f in pending.iter().rev().take(50) {
                    li { span.day { (f.day) } " " (f.text) }
                }
            }
        }
        @if !forgotten.is_empty() {
            section aria-labelledby="forgotten" {
                h2 #forgotten { "Forgotten entries" }
                ul {
                    @for (id, text) in forgotten.iter().take(50) {
                        li {
                            a href={ (base) "/entries/" (id) } { (id) } " " (text) " "
                            (button(&format!("{base}/entries/{id}/unforget"), "Take the forget back", &[]))
                        }
                    }
                }
            }
        }
    };
    frame(at, "Memory", said, content)
}

pub(super) fn search(at: &At, (query, as_of): (&str, &str), hits: &[Hit]) -> Markup {
    let base = &at.base;
    let content = html! {
        form action={ (base) "/search" } method="get" {
            label for="search-q" { "Search for" }
            input #search-q type="search" name="q" value=(query);
            label for="search-as-of" { "as of (a time or a day; empty: now)" }
            input #search-as-of type="text" name="as_of" value=(as_of);
            button type="submit" { "Search" }
        }
        @if !query.is_empty() && hits.is_empty() {
            p { "Nothing found for " q { (query) } "." }
        }
        ol.hits {
            @for h in hits {
                li {
                    span.kind { (format!("{:?}", h.kind).to_lowercase()) } " "
                    @let id = h.id.to_string();
                    @match id.strip_prefix("core:").unwrap_or(&id) {
                        e if e.starts_with("e-") => { a href={ (base) "/entries/" (e) } { (h.text) } }
                        _ => { span { (h.text) } }
                    }
                    @if let Some(d) = &h.day { " " span.day { (d) } }
                    " " span.score { (format!("{:.2}", h.score)) }
                }
            }
        }
    };
    let title = match query.is_empty() {
        true => "Search".to_string(),
        false => format!("Search: {query}"),
    };
    frame(at, &title, None, content)
}

/// What the entry page shows.
pub(super) struct Entry<'a> {
    pub id: &'a str,
    /// `None`: not live (forgotten, merged away, removed).
    pub view: Option<&'a EntryView>,
    pub sources: &'a [&'a Fact],
    pub history: &'a [Record],
    pub forgotten: bool,
}

pub(super) fn entry(at: &At, said: Option<&str>, e: &Entry) -> Markup {
    let base = &at.base;
    let content = html! {
        @match e.view {
            Some(v) => {
                p.text { (v.text) }
                p {
                    "First seen " (v.first_seen) ", updated " (v.updated)
                    @if v.pinned { ", pinned" }
                    @if v.unreviewed { ", added word for word (the judge failed; the next run looks again)" }
                    @if v.edited { ", edited by hand" }
                    "."
                }
                (button(&format!("{base}/entries/{}/forget", e.id), "Forget this entry", &[]))
                h2 { "Its facts, as the archive has them" }
                ul {
                    @for f in e.sources {
                        li {
                            span.day { (f.day) @if let Some(t) = &f.time { " " (t) } }
                            " " (f.text) " " code { (f.id) }
                        }
                    }
                }
            }
            None => {
                p { "This entry is not in the file now." }
                @if e.forgotten {
                    (button(&format!("{base}/entries/{}/unforget", e.id), "Take the forget back", &[]))
                }
            }
        }
        h2 { "History" }
        ol.history {
            @for r in e.history {
                li {
                    span.day { (r.ts) } " " strong { (op_name(r.op)) } " "
                    @if let Some(b) = &r.before { del { (b) } " " }
                    @if let Some(a) = &r.after { ins { (a) } }
                    " " span.run { "run " (r.run) }
                }
            }
        }
    };
    frame(at, &format!("Entry {}", e.id), said, content)
}

pub(super) fn review(at: &At, said: Option<&str>, items: &ReviewList) -> Markup {
    let action = format!("{}/review", at.base);
    let content = html! {
        p {
            "The ops consolidation proposed (" code { "review = \"manual\"" } "). "
            "Accepting or rejecting here edits " code { "consolidated/REVIEW.md" }
            " as you would; the decisions are carried out by the next run, or now:"
        }
        (button(&action, "Carry out the decisions now", &[("action", "apply")]))
        @if items.open.is_empty() {
            p { "Nothing to review." }
        }
        ul.review {
            @for o in &items.open {
                li {
                    code { (o.item) } " " span.state { "[" (o.state) "]" } " " (o.says) " "
                    (button(&action, &format!("Accept {}", o.item), &[("action", "accept"), ("item", o.item.as_str())]))
                    (button(&action, &format!("Reject {}", o.item), &[("action", "reject"), ("item", o.item.as_str())]))
                }
            }
        }
        @if !items.unreadable.is_empty() {
            h2 { "Lines of REVIEW.md memd cannot read" }
            ul {
                @for u in &items.unreadable {
                    li { "line " (u.line) ": " code { (u.text) } }
                }
            }
        }
    };
    frame(at, "Review", said, content)
}

pub(super) fn runs(at: &At, said: Option<&str>, runs: &[Run]) -> Markup {
    let base = &at.base;
    let content = html! {
        ol.runs reversed {
            @for r in runs.iter().rev() {
                li {
                    a href={ (base) "/runs/" (r.id) } { code { (r.id) } } " " (r.started) " " strong { (r.kind) }
                    @for (op, n) in &r.ops { " " (op) " " (n) }
                    " · facts " (r.facts)
                    @if let Some(u) = &r.undoes { " · undoes " code { (u) } }
                    @if !r.undone_by.is_empty() { " · undone" }
                    " "
                    (button(&format!("{base}/runs/{}/undo", r.id), &format!("Undo {}", r.id), &[]))
                }
            }
        }
    };
    frame(at, "Runs", said, content)
}

/// What one run did: each journal record, as a diff of its entry.
pub(super) fn run(at: &At, id: &str, records: &[&Record]) -> Markup {
    let base = &at.base;
    let content = html! {
        (button(&format!("{base}/runs/{id}/undo"), &format!("Undo {id}"), &[]))
        ol.history {
            @for r in records {
                li {
                    strong { (op_name(r.op)) } " "
                    @if r.entry.starts_with("e-") {
                        a href={ (base) "/entries/" (r.entry) } { (r.entry) }
                    } @else {
                        code { (r.entry) }
                    }
                    @if let Some(b) = &r.before { br; del { "- " (b) } }
                    @if let Some(a) = &r.after { br; ins { "+ " (a) } }
                }
            }
        }
    };
    frame(at, &format!("Run {id}"), None, content)
}

/// The files as of a time: the form, and what `Show` answered.
pub(super) fn as_of(at: &At, asked: &str, shown: Option<&Shown>) -> Markup {
    let then = |name: &str, t: &Then| {
        html! {
            h2 { (name) }
            @match t {
                Then::Known { since, text } => {
                    p { "As it was from " (since) ":" }
                    pre { (text.as_deref().unwrap_or("(no readable file then)")) }
                }
                Then::Unknowable { why, known_until, known_from } => {
                    p.error { "Unknowable: " (why) }
                    @if let Some(u) = known_until { p { "Known until " (u) "." } }
                    @if let Some(f) = known_from { p { "Known from " (f) "." } }
                }
            }
        }
    };
    let content = html! {
        form action={ (at.base) "/as-of" } method="get" {
            label for="as-of" { "The memory as of (a time or a day)" }
            input #as-of type="text" name="as_of" value=(asked);
            button type="submit" { "Show" }
        }
        @if let Some(s) = shown {
            p { "As of " (s.as_of) "." }
            (then("consolidated/memory.md", &s.memory))
            (then("MEMORY.md's generated lines", &s.core))
            @if !s.forgotten_since.is_empty() {
                p { "Forgotten since: " @for e in &s.forgotten_since { code { (e) } " " } }
            }
        }
    };
    frame(at, "As of", None, content)
}

pub(super) fn archive(at: &At, days: &BTreeMap<&str, Vec<&Fact>>) -> Markup {
    let content = html! {
        @for (day, facts) in days.iter().rev().take(60) {
            section {
                h2 { (day) }
                ul {
                    @for f in facts {
                        li {
                            @if let Some(t) = &f.time { span.day { (t) } " " }
                            (f.text)
                        }
                    }
                }
            }
        }
    };
    frame(at, "Archive", None, content)
}

pub(super) fn login(at: &At, said: Option<&str>) -> Markup {
    let content = html! {
        form method="post" action={ (at.base) "/login" } {
            label for="token" { "Token (MEMD_TOKEN)" }
            input #token type="password" name="token" autocomplete="current-password" required;
            button type="submit" { "Log in" }
        }
    };
    frame(at, "Log in", said, content)
}

pub(super) fn memories(names: &[String]) -> Markup {
    let at = At {
        base: String::new(),
        name: None,
    };
    let content = html! {
        ul {
            @for n in names {
                li { a href={ "/m/" (n) "/" } { (n) } }
            }
        }
    };
    frame(&at, "Memories", None, content)
}
