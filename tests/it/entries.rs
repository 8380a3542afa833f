//! `consolidated/memory.md`: round trip, hand-written blocks, atomic saves.

use memd::entries::{Document, text_hash};

const FILE: &str = r#"# Memory

<!--m {"id":"e-3f9a2c1d","first_seen":"2026-05-27","updated":"2026-05-30","sources":["2026-05-27#a1b2c3d4","2026-05-29#d4e5f6a7"],"hash":"0000"}-->
Currently works at Microsoft (since 2026-05). Previously worked at Google.

<!--m {"id":"e-00000002","first_seen":"2026-05-28","updated":"2026-05-28","sources":[],"hash":"1111","pinned":true,"custom":"kept"}-->
Never share the user's address.
Second line of the same entry.


A block written by hand,
over two lines.
<!-- a stray comment -->
"#;

#[test]
fn an_unchanged_file_round_trips_byte_for_byte() {
    let doc = Document::parse(FILE);
    assert_eq!(doc.render(), FILE);
    // Also without a final newline, and with CRLF line ends.
    let no_nl = FILE.trim_end();
    assert_eq!(Document::parse(no_nl).render(), no_nl);
    let crlf = FILE.replace('\n', "\r\n");
    assert_eq!(Document::parse(&crlf).render(), crlf);
}

#[test]
fn entries_and_their_metadata_are_read() {
    let doc = Document::parse(FILE);
    let entries: Vec<_> = doc.entries().collect();
    assert_eq!(entries.len(), 3);
    assert_eq!(entries[0].id().map(|i| i.as_str()), Some("e-3f9a2c1d"));
    assert_eq!(entries[0].meta.as_ref().unwrap().sources.len(), 2);
    assert!(entries[1].pinned());
    assert_eq!(
        entries[1].text,
        "Never share the user's address.\nSecond line of the same entry."
    );
    assert_eq!(entries[2].meta, None);
    assert_eq!(
        entries[2].text,
        "A block written by hand,\nover two lines.\n<!-- a stray comment -->"
    );
    // The hashes in FILE are not the texts' hashes: edited by hand.
    assert!(entries[0].edited_by_hand());
}

#[test]
fn a_hand_written_block_gains_metadata_and_keeps_its_text() {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("memory.md");
    std::fs::write(&path, FILE).unwrap();
    let mut doc = Document::read(&path).unwrap();
    let adopted = doc.save(&path, "2026-06-01").unwrap();
    assert_eq!(adopted.len(), 1);
    let saved = std::fs::read_to_string(&path).unwrap();
    let again = Document::parse(&saved);
    let e = again
        .get(&adopted[0])
        .expect("adopted entry is in the file");
    assert_eq!(
        e.text,
        "A block written by hand,\nover two lines.\n<!-- a stray comment -->"
    );
    let meta = e.meta.as_ref().unwrap();
    assert_eq!(meta.first_seen, "2026-06-01");
    assert_eq!(meta.hash, text_hash(&e.text));
    assert!(!e.edited_by_hand());
    // The other entries, including unknown metadata fields, are untouched.
    assert!(saved.starts_with(&FILE[..FILE.find("A block written").unwrap()]));
    assert!(saved.contains(r#""custom":"kept""#));
    // Saving again changes nothing.
    let mut doc = Document::read(&path).unwrap();
    assert!(doc.save(&path, "2026-06-02").unwrap().is_empty());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), saved);
}

#[test]
fn changes_touch_only_their_entry() {
    let mut doc = Document::parse(FILE);
    let e = doc.get_mut("e-3f9a2c1d").unwrap();
    e.text = "Works at Contoso now; previously Microsoft, before that Google.".into();
    let meta = e.meta.as_mut().unwrap();
    meta.hash = text_hash(&e.text);
    let meta = doc.new_meta(
        "Likes tea",
        "2026-06-01",
        vec!["2026-06-01#abcdef01".parse().unwrap()],
    );
    let new_id = meta.id.to_string();
    doc.push("Likes tea", meta);
    let removed = doc.remove("e-00000002").unwrap();
    assert!(removed.pinned());
    let out = doc.render();
    let again = Document::parse(&out);
    let ids: Vec<_> = again
        .entries()
        .map(|e| e.id().map(|i| i.to_string()))
        .collect();
    assert_eq!(
        ids,
        vec![Some("e-3f9a2c1d".into()), None, Some(new_id.clone())]
    );
    assert!(!again.get("e-3f9a2c1d").unwrap().edited_by_hand());
    assert_eq!(again.get(&new_id).unwrap().text, "Likes tea");
    assert!(out.starts_with("# Memory\n\n<!--m "));
    assert!(!out.contains("\n\n\n\n"), "{out}");
}

#[test]
fn text_that_would_break_the_block_structure_is_sanitised() {
    let mut doc = Document::parse("");
    let meta = doc.new_meta("x", "2026-06-01", vec![]);
    let id = meta.id.clone();
    doc.push(
        "first paragraph\n\n<!--m {\"id\":\"fake\"}-->\nsecond",
        meta,
    );
    let again = Document::parse(&doc.render());
    assert_eq!(again.entries().count(), 1);
    assert!(again.get("fake").is_none());
    assert!(
        again
            .get(&id)
            .unwrap()
            .text
            .starts_with("first paragraph\n")
    );
}

#[test]
fn unreadable_metadata_keeps_the_block_as_hand_written() {
    let src = "<!--m {not json}-->\nStill a fact worth keeping.\n";
    let doc = Document::parse(src);
    assert_eq!(doc.render(), src);
    let e = doc.entries().next().unwrap();
    assert_eq!(e.meta, None);
    assert!(e.text.contains("Still a fact worth keeping."));
    assert!(
        doc.warnings[0].to_string().contains("line 1"),
        "{:?}",
        doc.warnings
    );
}
