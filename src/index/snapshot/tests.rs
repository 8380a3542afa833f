use arc_swap::ArcSwap;

use super::*;
use crate::index::rows::Row;

const DAY: &str = "archive/2026-01-01.md";

fn row(i: u32, text: &str) -> (Hit, Vec<f32>) {
    let row = Row::fact(&format!("r{i}"), text);
    (row.hit(), vec![i as f32 + 1.0, 1.0])
}

fn model() -> (Model, Arc<ArcSwap<Snapshot>>) {
    let published = Arc::new(ArcSwap::default());
    (Model::new(published.clone()).unwrap(), published)
}

/// What a search reads of `s`: its words' and its vectors' lists.
fn lists(s: &Snapshot, queries: &[&str]) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for q in queries {
        let top = s.top(q, 10).into_iter();
        out.push(
            top.map(|h| (h.id.to_string(), h.score.to_string()))
                .collect(),
        );
        out.push(vec![("idf".into(), s.idf_sum(q).to_string())]);
    }
    let near = s.nearest(&[4.0, 1.0], 10).expect("vectors kept");
    let pairs = near.rows.iter().zip(&near.scores);
    out.push(
        pairs
            .map(|((h, v), s)| (format!("{} {v:?}", h.id), s.to_string()))
            .collect(),
    );
    out
}

const QUERIES: [&str; 4] = ["basil", "dog rex", "garden tea morning", "the"];

/// Rows shown ahead of a write are, to a search, the rows the write
/// leaves (the same words, scores and vectors as those rows loaded
/// anew); the write landing gives them its version without changing
/// them again, and a write that does not land leaves none of them.
#[test]
fn rows_shown_ahead_of_a_write_are_those_it_leaves_and_go_if_it_does_not_land() {
    let base = vec![
        row(0, "tea in the morning"),
        row(1, "a dog called rex"),
        row(2, "bees in the garden"),
    ];
    let added = row(3, "basil beside the tomatoes in the garden");
    let deleted = [(DAY, "r1")];
    let hits = || [(added.0.clone(), added.1.as_slice())];
    let (mut left, seen) = model();
    let rows = vec![base[0].clone(), base[2].clone(), added.clone()];
    left.load(8, rows, Some(2));
    let want = lists(&seen.load(), &QUERIES);

    let (mut shown, seen) = model();
    shown.load(7, base.clone(), Some(2));
    assert!(shown.ahead(7, deleted, hits()));
    assert_eq!(
        seen.load().version(),
        Some(7),
        "labelled as before the write"
    );
    assert_eq!(lists(&seen.load(), &QUERIES), want, "shown ahead");
    shown.wrote(7, 8, deleted, hits());
    assert_eq!(seen.load().version(), Some(8));
    assert_eq!(lists(&seen.load(), &QUERIES), want, "once the write landed");
    shown.behind();
    assert_eq!(
        seen.load().version(),
        Some(8),
        "a landed write is not taken back"
    );

    let (mut failed, seen) = model();
    failed.load(7, base.clone(), Some(2));
    assert!(failed.ahead(7, deleted, hits()));
    let more = row(4, "mint by the door");
    let none: [(&str, &str); 0] = [];
    let mint = || [(more.0.clone(), more.1.as_slice())];
    assert!(
        !failed.ahead(6, none, mint()),
        "writes from another version"
    );
    assert!(seen.load().top("mint", 10).is_empty());
    assert!(
        failed.ahead(7, none, mint()),
        "writes from one version stack"
    );
    assert_eq!(seen.load().top("mint", 10).len(), 1);
    failed.behind();
    assert_eq!(seen.load().version(), None, "to be loaded again");
    assert!(seen.load().top("basil", 10).is_empty());
    assert!(seen.load().top("mint", 10).is_empty());

    let (mut other, _) = model();
    other.load(6, base.clone(), Some(2));
    assert!(!other.ahead(7, deleted, hits()), "rows of another version");
    let (mut unkept, seen) = model();
    unkept.load(7, base, None);
    assert!(!unkept.ahead(7, deleted, hits()), "vectors not kept");
    assert!(seen.load().top("basil", 10).is_empty());
    assert_eq!(seen.load().version(), Some(7));
}

/// Rows written on top of a base, and folded into new bases as they
/// pile up, read as the same rows loaded anew at every step, while a
/// snapshot taken before the writes reads as it did.
#[test]
fn snapshots_read_as_their_rows_loaded_anew_and_never_change_once_taken() {
    let words = [
        "tea", "dog", "rex", "garden", "basil", "bees", "mint", "the", "morning",
    ];
    let text = |i: u32| -> String {
        let pick = |k: u32| words[((i * 7 + k * 3) as usize) % words.len()];
        format!("{} {} {} {}", pick(0), pick(i % 3), pick(2), i % 5)
    };
    let mut live: Vec<(Hit, Vec<f32>)> = (0..40).map(|i| row(i, &text(i))).collect();
    let (mut model, seen) = model();
    model.load(1, live.clone(), Some(2));
    let first = seen.load_full();
    let first_read = lists(&first, &QUERIES);
    let mut version = 1;
    for step in 0..700u32 {
        let gone = (step % 4 == 0 && live.len() > 10)
            .then(|| live.remove((step as usize * 13) % live.len()));
        let i = 40 + step % 500;
        let new = row(i, &text(i + step));
        live.retain(|(h, _)| h.id != new.0.id);
        live.push(new.clone());
        let deleted: Vec<(String, String)> = gone
            .iter()
            .map(|(h, _)| (DAY.to_string(), h.id.to_string()))
            .collect();
        let deleted = deleted.iter().map(|(s, i)| (s.as_str(), i.as_str()));
        model.wrote(
            version,
            version + 1,
            deleted,
            [(new.0.clone(), new.1.as_slice())],
        );
        version += 1;
        if step % 50 == 0 || step > 690 {
            let (mut fresh, fresh_seen) = super::tests::model();
            fresh.load(version, live.clone(), Some(2));
            let want = lists(&fresh_seen.load(), &QUERIES);
            assert_eq!(lists(&seen.load(), &QUERIES), want, "step {step}");
        }
    }
    assert_eq!(seen.load().version(), Some(version));
    assert_eq!(lists(&first, &QUERIES), first_read, "a snapshot taken");
}

/// A row written on top and then written again leaves its first slot
/// behind; that slot's vector is no row's, and the nearest rows are the
/// live ones, as the same rows loaded anew list them.
#[test]
fn a_row_written_twice_on_top_lists_only_its_live_vector() {
    let base = vec![row(0, "tea in the morning"), row(1, "a dog called rex")];
    let (mut model, seen) = model();
    model.load(1, base.clone(), Some(2));
    let near = |i: u32, v: Vec<f32>| (row(i, "mint by the door").0, v);
    let (first, again) = (near(9, vec![4.0, 1.0]), near(9, vec![-1.0, 0.0]));
    let none: [(&str, &str); 0] = [];
    model.wrote(1, 2, none, [(first.0.clone(), first.1.as_slice())]);
    model.wrote(2, 3, none, [(again.0.clone(), again.1.as_slice())]);
    let (mut fresh, fresh_seen) = super::tests::model();
    fresh.load(3, vec![base[0].clone(), base[1].clone(), again], Some(2));
    let ids = |s: &Snapshot| -> Vec<String> {
        let near = s.nearest(&[4.0, 1.0], 1).expect("vectors kept");
        near.rows.iter().map(|(h, _)| h.id.to_string()).collect()
    };
    assert_eq!(ids(&seen.load()), ids(&fresh_seen.load()));
}
