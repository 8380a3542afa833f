use super::*;

#[test]
fn chunks_of_the_entries_file_start_at_each_metadata_line_and_join_back_to_the_file() {
    let file = "# Memory\n\n<!--m {\"id\":\"e-1\"}-->\nOne\n\n<!--m {\"id\":\"e-2\"}-->\nTwo\n";
    let cut = chunks(File::Memory, file);
    assert_eq!(cut.len(), 3);
    assert!(cut[1].starts_with("<!--m"));
    assert_eq!(cut.concat(), file);
    let core = "- a <!-- e-1 -->\n- b <!-- e-2 -->\n";
    assert_eq!(
        chunks(File::Core, core),
        vec!["- a <!-- e-1 -->\n", "- b <!-- e-2 -->\n"]
    );
}

#[test]
fn a_version_lists_unchanged_chunks_as_runs_of_the_previous_one() {
    let prev: Vec<Arc<str>> = ["a", "b", "c", "d"].map(Arc::from).to_vec();
    let next: Vec<String> = ["a", "b", "x", "d", "c"].map(String::from).to_vec();
    assert_eq!(
        encode(&prev, &next),
        vec![
            Piece::Run([0, 2]),
            Piece::Chunk("x".into()),
            Piece::Run([3, 1]),
            Piece::Run([2, 1])
        ]
    );
}

#[test]
fn a_day_means_its_end_and_a_time_without_offset_is_local() {
    let end = parse_time("2026-11-24").unwrap();
    assert_eq!(end.naive_local().to_string(), "2026-11-24 23:59:59.999999");
    let t = parse_time("2026-11-24T14:03").unwrap();
    assert_eq!(t.naive_local().to_string(), "2026-11-24 14:03:00");
    assert!(parse_time("yesterday").is_err());
}
