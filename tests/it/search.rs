//! Search results: the same however the index was built or grown, full-text
//! scores that are BM25 over the live rows, and handles that see what other
//! writers did.

use std::sync::Arc;

use memd::archive::{self, NewFact};
use memd::config::Config;
use memd::embed::{self, Embedder};
use memd::index::{Index, Query};

use crate::index::{fact, lexical};
use crate::support::example_dir;

/// `reindex --clear`: the index deleted, then built from the files.
pub async fn rebuilt_from_files(
    layout: &memd::Layout,
    config: &Config,
    embedder: Arc<dyn Embedder>,
) -> Index {
    Index::clear(layout).await.unwrap();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(embedder))
            .await
            .unwrap();
    index.writer.sync().await.unwrap();
    index
}

/// Delete by hand the lines of `path` that contain `needle`.
pub fn remove_lines_containing(path: &std::path::Path, needle: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    let kept: String = text
        .lines()
        .filter(|l| !l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(path, kept).unwrap();
}

/// Facts of one person, with words the queries share in different measure.
const BUILD_PATH_FACTS: [&str; 16] = [
    "User loves coffee, especially flat white",
    "User broke the pour-over set last week",
    "User's manager is Dana Whitfield",
    "User drinks green tea in the afternoon",
    "User is allergic to peanuts",
    "User runs 10 km every Saturday morning",
    "User's sister lives in Lisbon",
    "User prefers window seats on flights",
    "User bought a new espresso grinder",
    "User's cat Miso likes warm milk",
    "User works on the payments team",
    "User is learning Portuguese for a trip to Lisbon",
    "User stopped drinking coffee after 4 pm",
    "User's favourite coffee shop is Kaffeine",
    "User's birthday is on 3 March",
    "User cycles to work when it is dry",
];

const BUILD_PATH_QUERIES: [&str; 6] = [
    "what coffee does the user like",
    "where does the user's sister live",
    "user allergies",
    "coffee",
    "what does the user do on weekends",
    "Lisbon trip",
];

/// Ids in rank order, with scores rounded to what a tie-break can see.
async fn rankings(index: &Index) -> Vec<Vec<(String, String)>> {
    let mut out = Vec::new();
    for q in BUILD_PATH_QUERIES {
        let hits = index.reader.search(&Query::new(q, 8)).await.unwrap();
        out.push(
            hits.into_iter()
                .map(|h| (h.text, format!("{:.6}", h.score)))
                .collect(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn search_results_are_the_same_however_the_index_was_built() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index = Index::open(&memd::Memory::new(layout.clone(), config.clone()))
        .await
        .unwrap();
    index.writer.sync().await.unwrap();
    // (a) One sync per fact, as single `memd add`s do, compacting now and
    // then, and one fact removed by hand on the way.
    for (i, t) in BUILD_PATH_FACTS.iter().enumerate() {
        let time = format!("09:{:02}:00", i);
        archive::append(&layout, "2026-11-21", &time, &[fact(t)]).unwrap();
        index.writer.sync().await.unwrap();
        if i % 5 == 4 {
            index.writer.compact().await.unwrap();
        }
        if i == 9 {
            let day = layout.archive_file("2026-11-21");
            remove_lines_containing(&day, "espresso");
            index.writer.sync().await.unwrap();
        }
    }
    let incremental = rankings(&index).await;
    drop(index);

    // (b) The same files, indexed at once.
    let rebuilt = rebuilt_from_files(
        &layout,
        &config,
        embed::from_config(&config.embedder).unwrap(),
    )
    .await;
    let whole = rankings(&rebuilt).await;
    for (q, (a, b)) in BUILD_PATH_QUERIES
        .iter()
        .zip(incremental.iter().zip(&whole))
    {
        assert_eq!(
            a, b,
            "query {q:?}: incremental (left) vs reindex --clear (right)"
        );
    }
}

/// Facts alike but for one code ("The user named a new plant Zq378x10000"
/// and 399 like it) are near-identical as vectors. A search for one code,
/// alone or with some of the words all of them share, must give the fact
/// that holds it. It did not for two codes alone: the fact came first in
/// the full-text list alone, another plant first in the vector list
/// alone, so the two tied, the other first by its id; then the fact was
/// collapsed into it as a near duplicate (`memd bench search-path` found
/// it, at its 378th append).
#[tokio::test(flavor = "multi_thread")]
async fn a_search_for_a_word_only_one_fact_holds_gives_that_fact_however_alike_the_others() {
    let (_tmp, layout) = example_dir();
    let index = Index::open(&memd::Memory::new(layout.clone(), Config::default()))
        .await
        .unwrap();
    let code = |i: usize| format!("Zq{i}x10000");
    let facts: Vec<NewFact> = (0..400)
        .map(|i| fact(&format!("The user named a new plant {}", code(i))))
        .collect();
    archive::append(&layout, "2026-11-21", "08:00:00", &facts).unwrap();
    index.writer.sync().await.unwrap();
    let mut missed = Vec::new();
    for i in 0..400 {
        for query in [
            code(i),
            format!("new plant {}", code(i)),
            format!("user named {}", code(i)),
        ] {
            let hits = index.reader.search(&Query::new(&query, 5)).await.unwrap();
            if !hits
                .iter()
                .any(|h| h.text.ends_with(&format!(" {}", code(i))))
            {
                missed.push((query, hits.into_iter().map(|h| h.text).collect::<Vec<_>>()));
            }
        }
    }
    assert!(
        missed.is_empty(),
        "{} codes not found: {missed:?}",
        missed.len()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn search_results_stay_the_same_over_two_thousand_rows_grown_one_fact_at_a_time() {
    // Full-text scores kept in step by single-fact syncs (past 2,000 rows,
    // where LanceDB's own index once took over from a flat scan), with a
    // deletion on the way, compared with a rebuild from the files.
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let bulk: Vec<NewFact> = (0..1_990)
        .map(|i| fact(&format!("User logged errand number {i} about the garden")))
        .collect();
    archive::append(&layout, "2026-11-21", "08:00:00", &bulk).unwrap();
    index.writer.sync().await.unwrap();
    for (i, t) in BUILD_PATH_FACTS.iter().enumerate() {
        let time = format!("09:{:02}:00", i);
        archive::append(&layout, "2026-11-22", &time, &[fact(t)]).unwrap();
        index.writer.sync().await.unwrap();
        index.reader.search(&Query::new("coffee", 3)).await.unwrap();
    }
    let day = layout.archive_file("2026-11-22");
    remove_lines_containing(&day, "espresso");
    index.writer.sync().await.unwrap();
    let incremental = rankings(&index).await;
    drop(index);

    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rankings(&rebuilt).await, incremental);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_that_remembers_its_rows_still_sees_another_writers_changes() {
    let (_tmp, layout) = example_dir();
    let config = Config::default();
    let a =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    a.writer.sync().await.unwrap();
    for (i, t) in ["User sold the canoe", "User visits Porto"]
        .iter()
        .enumerate()
    {
        archive::append(&layout, "2026-11-21", &format!("09:00:0{i}"), &[fact(t)]).unwrap();
        a.writer.sync().await.unwrap();
    }
    // Another handle (another process, for the table) changes the same
    // day file: a fact added and one removed by hand.
    let b =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:05",
        &[fact("User adopted a greyhound")],
    )
    .unwrap();
    let day = layout.archive_file("2026-11-21");
    remove_lines_containing(&day, "canoe");
    b.writer.sync().await.unwrap();
    b.writer.compact().await.unwrap();
    // Back to the first handle, which remembered the rows it wrote.
    archive::append(
        &layout,
        "2026-11-21",
        "09:00:09",
        &[fact("User bought a kayak")],
    )
    .unwrap();
    a.writer.sync().await.unwrap();
    let ids = a.reader.ids().await.unwrap();
    drop((a, b));
    let rebuilt = rebuilt_from_files(&layout, &config, lexical()).await;
    assert_eq!(rebuilt.reader.ids().await.unwrap(), ids);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_run_of_single_fact_syncs_merges_its_small_fragments_as_it_goes() {
    let (_tmp, layout) = example_dir();
    let index = Index::open(
        &memd::Memory::new(layout.clone(), Config::default().clone()).with_embedder(lexical()),
    )
    .await
    .unwrap();
    index.writer.sync().await.unwrap();
    let before = index.reader.ids().await.unwrap().len();
    // One sync per append, as a daemon whose client searches after every
    // post: one small fragment each, which every search visits.
    for i in 0..3 * memd::index::TAIL_FRAGMENTS {
        let text = format!("User tried tea number {i} this week");
        let time = format!("10:{:02}:00", i);
        archive::append(&layout, "2026-11-21", &time, &[fact(&text)]).unwrap();
        index.writer.sync().await.unwrap();
        let fragments = index.reader.fragments().await.unwrap();
        assert!(
            fragments <= memd::index::TAIL_FRAGMENTS,
            "after {} single-fact syncs: {fragments} fragments",
            i + 1
        );
    }
    assert_eq!(
        index.reader.ids().await.unwrap().len(),
        before + 3 * memd::index::TAIL_FRAGMENTS,
        "merging fragments keeps every row, once"
    );
    let hits = index
        .reader
        .search(&Query::new("tea number 5", 3))
        .await
        .unwrap();
    assert!(
        hits.iter().any(|h| h.text.contains("number 5 ")),
        "{hits:?}"
    );
}

/// BM25 as LanceDB defines it (k1 1.2, b 0.75), computed from scratch over
/// `texts` with LanceDB's own tokenizer: every matching text's score, by
/// text.
fn bm25_by_hand(texts: &[String], query: &str) -> std::collections::HashMap<String, f32> {
    use lance_tokenizer::TokenStream;
    let mut tokenizer = lancedb::index::scalar::FtsIndexBuilder::default()
        .build()
        .unwrap();
    let mut words = |t: &str, search: bool| -> Vec<String> {
        let mut s = match search {
            true => tokenizer.token_stream_for_search(t),
            false => tokenizer.token_stream_for_doc(t),
        };
        let mut out = Vec::new();
        while s.advance() {
            out.push(s.token().text.clone());
        }
        out
    };
    let docs: Vec<Vec<String>> = texts.iter().map(|t| words(t, false)).collect();
    let query = words(query, true);
    let counted = docs.iter().filter(|d| !d.is_empty()).count() as f64;
    let mean = docs.iter().map(Vec::len).sum::<usize>() as f64 / counted;
    let mut out = std::collections::HashMap::new();
    for (text, doc) in texts.iter().zip(&docs) {
        let mut score = 0.0f64;
        for w in query.iter().collect::<std::collections::BTreeSet<_>>() {
            let df = docs.iter().filter(|d| d.contains(w)).count() as f64;
            let tf = doc.iter().filter(|x| *x == w).count() as f64;
            if tf > 0.0 {
                let idf = ((counted - df + 0.5) / (df + 0.5) + 1.0).ln();
                let norm = 1.2 * (1.0 - 0.75 + 0.75 * doc.len() as f64 / mean);
                score += idf * 2.2 * tf / (tf + norm);
            }
        }
        if score > 0.0 {
            out.insert(text.clone(), score as f32);
        }
    }
    out
}

/// Facts sharing `user` and a few other words in different measure, some
/// with a word twice, of different lengths.
pub fn word_facts() -> Vec<String> {
    let things = ["coffee", "tea", "garden", "piano", "bicycle", "Lisbon"];
    (0..48)
        .map(|i| {
            let (a, b) = (things[i % 6], things[(i / 6) % 6]);
            let tail = " and again ".repeat(i % 3) + &a.repeat((i % 4 == 0) as usize);
            format!("User {i} talked about {a} with {b} {tail}")
                .trim_end()
                .to_string()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn full_text_scores_are_bm25_over_the_live_rows_through_adds_deletes_and_compactions() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let facts = word_facts();
    let day = |i: usize| format!("2026-11-{:02}", 10 + i % 3);
    for (i, t) in facts.iter().enumerate() {
        let time = format!("09:{:02}:{:02}", i / 60, i % 60);
        archive::append(&layout, &day(i), &time, &[fact(t)]).unwrap();
        if i % 5 == 0 {
            index.writer.sync().await.unwrap();
            index.reader.full_text_hits("coffee", 3).await.unwrap();
        }
        if i == 30 {
            index.writer.compact().await.unwrap();
        }
    }
    index.writer.sync().await.unwrap();
    // Rows deleted by hand (a word's rows thinned out), then more added.
    let gone = [7, 13, 24, 30];
    for n in gone {
        remove_lines_containing(&layout.archive_file(&day(n)), &format!("User {n} "));
    }
    index.writer.sync().await.unwrap();
    let extra = "User rode the bicycle to the garden twice";
    archive::append(&layout, "2026-11-13", "10:00:00", &[fact(extra)]).unwrap();
    index.writer.sync().await.unwrap();
    let live: Vec<String> = facts
        .iter()
        .filter(|t| !gone.iter().any(|n| t.starts_with(&format!("User {n} "))))
        .cloned()
        .chain([extra.to_string()])
        .collect();
    for q in [
        "coffee",
        "tea with the piano",
        "what did the user say about Lisbon and bicycles",
    ] {
        full_text_hits_score_as_bm25_over(&index, &live, q).await;
    }
    // A handle opened afresh loads the same words from the table.
    let fresh =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    for q in ["coffee", "tea with the piano"] {
        let a = index.reader.full_text_hits(q, 1_000).await.unwrap();
        let b = fresh.reader.full_text_hits(q, 1_000).await.unwrap();
        let key = |h: &memd::index::search::Hit| (h.id.clone(), h.score);
        assert_eq!(
            a.iter().map(key).collect::<Vec<_>>(),
            b.iter().map(key).collect::<Vec<_>>()
        );
    }
}

/// The full-text hits of query `q` in `index` score as BM25 over the
/// `live` rows, best first (equal scores by id); asked for the first few
/// alone, it gives the same rows with the same scores.
async fn full_text_hits_score_as_bm25_over(index: &Index, live: &[String], q: &str) {
    let want = bm25_by_hand(live, q);
    let hits = index.reader.full_text_hits(q, 1_000).await.unwrap();
    let got: std::collections::HashMap<String, f32> =
        hits.iter().map(|h| (h.text.clone(), h.score)).collect();
    assert_eq!(got.len(), want.len(), "query {q:?}: rows matched");
    for (text, score) in &want {
        let g = got
            .get(text)
            .unwrap_or_else(|| panic!("{q:?}: {text:?} missing"));
        assert!((g - score).abs() < 1e-4, "{q:?}: {text:?} {g} vs {score}");
    }
    // Best first, equal scores by id.
    for pair in hits.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(
            a.score > b.score || (a.score == b.score && a.id < b.id),
            "{q:?}"
        );
    }
    // The first few alone (words in every row skipped where they
    // cannot change the result): the same rows with the same scores.
    // Rows tied with the first one left out are left out too.
    let few = index.reader.full_text_hits(q, 3).await.unwrap();
    let out = hits.get(3).map_or(f32::MIN, |h| h.score);
    let head: Vec<(String, f32)> = hits
        .iter()
        .take(3)
        .filter(|h| h.score > out)
        .map(|h| (h.id.to_string(), h.score))
        .collect();
    let few: Vec<(String, f32)> = few.into_iter().map(|h| (h.id.into(), h.score)).collect();
    assert_eq!(few, head, "{q:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_handle_finds_by_their_words_the_rows_another_process_wrote() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let a =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    archive::append(
        &layout,
        "2026-11-20",
        "09:00:00",
        &[fact("User sold the canoe")],
    )
    .unwrap();
    a.writer.sync().await.unwrap();
    assert_eq!(
        a.reader.full_text_hits("theremin", 5).await.unwrap().len(),
        0
    );
    // Another handle (another process, for the table) adds a row.
    let b =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let t = "User plays the theremin";
    archive::append(&layout, "2026-11-20", "09:00:01", &[fact(t)]).unwrap();
    b.writer.sync().await.unwrap();
    // The first handle's next sync finds the files as the table has them,
    // and moves to the table's latest version.
    a.writer.sync().await.unwrap();
    let hits = a.reader.full_text_hits("theremin", 5).await.unwrap();
    assert_eq!(
        hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
        [t]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_tied_at_the_cut_of_the_full_text_list_are_all_left_out() {
    // 50 rows share the query's common words with the same length; one
    // also has its rare word. Lifting 19 of the 49 (by id) beside it would
    // give each as much from the fusion as the one real match.
    let (_tmp, layout) = crate::support::memory_dir();
    let index = Index::open(
        &memd::Memory::new(layout.clone(), Config::default().clone()).with_embedder(lexical()),
    )
    .await
    .unwrap();
    let facts: Vec<NewFact> = (0..50)
        .map(|i| fact(&format!("User noted item {i}")))
        .collect();
    archive::append(&layout, "2026-11-20", "09:00:00", &facts).unwrap();
    index.writer.sync().await.unwrap();
    let hits = index
        .reader
        .full_text_hits("noted item 7", 20)
        .await
        .unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    assert_eq!(texts, ["User noted item 7"]);
    // With room for every row, all are there, the tied ones sharing a
    // score.
    let all = index
        .reader
        .full_text_hits("noted item 7", 50)
        .await
        .unwrap();
    assert_eq!(all.len(), 50);
    assert!(all[1..].iter().all(|h| h.score == all[1].score));
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_memds_full_text_index_is_dropped_by_the_next_sync_and_words_still_match() {
    let (_tmp, layout) = crate::support::memory_dir();
    let config = Config::default();
    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let canoe = fact("User sold the canoe");
    archive::append(&layout, "2026-11-20", "09:00:00", &[canoe]).unwrap();
    index.writer.sync().await.unwrap();
    drop(index);
    // What an older memd left: LanceDB's full-text index on `text`, and
    // the mark that it was behind the rows.
    let table = crate::support::lance_table(&layout).await;
    let fts = lancedb::index::Index::FTS(Default::default());
    table.create_index(&["text"], fts).execute().await.unwrap();
    let mark = layout.index_dir().join("text-index-behind");
    std::fs::write(&mark, "").unwrap();

    let index =
        Index::open(&memd::Memory::new(layout.clone(), config.clone()).with_embedder(lexical()))
            .await
            .unwrap();
    let t = "User plays the theremin";
    archive::append(&layout, "2026-11-20", "09:00:01", &[fact(t)]).unwrap();
    index.writer.sync().await.unwrap();
    table.checkout_latest().await.unwrap();
    let indices = table.list_indices().await.unwrap();
    assert!(
        indices
            .iter()
            .all(|i| !i.columns.iter().any(|c| c == "text")),
        "{indices:?}"
    );
    assert!(!mark.exists());
    for (q, want) in [("theremin", t), ("canoe", "User sold the canoe")] {
        let hits = index.reader.full_text_hits(q, 5).await.unwrap();
        assert_eq!(
            hits.iter().map(|h| h.text.as_str()).collect::<Vec<_>>(),
            [want]
        );
    }
}

/// The example memory with each of `said` (day, text) appended, indexed
/// with MiniLM.
async fn said_on(said: &[(String, &str)]) -> (tempfile::TempDir, Index) {
    let (tmp, layout) = example_dir();
    let index = Index::open(&memd::Memory::new(layout.clone(), Config::default()))
        .await
        .unwrap();
    for (i, (day, text)) in said.iter().enumerate() {
        archive::append(&layout, day, &format!("10:00:0{i}"), &[fact(text)]).unwrap();
    }
    index.writer.sync().await.unwrap();
    (tmp, index)
}

/// The text of the first hit for `q`.
async fn top(index: &Index, q: &str) -> String {
    index.reader.search(&Query::new(q, 5)).await.unwrap()[0]
        .text
        .clone()
}

/// A question that names a day ("on 3 June, 2023") prefers what was said
/// that day: the rows of that day nearest it are a third list of the
/// fusion (`memd::when`). Without the date, the fact that matches the
/// words better comes first.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_naming_a_day_ranks_what_was_said_that_day_first() {
    let said = [
        ("2023-05-25", "Theo baked a chocolate cake for Amira"),
        ("2023-06-03", "Theo made cookies for his friend"),
        ("2023-06-03", "Amira finished her third screenplay"),
        ("2023-07-14", "Theo baked bread with Amira"),
    ]
    .map(|(d, t)| (d.to_string(), t));
    let (_tmp, index) = said_on(&said).await;
    let plain = top(&index, "What did Theo bake for Amira?").await;
    assert_ne!(plain, said[1].1, "the words alone already prefer it");
    for q in [
        "What did Theo bake for Amira on 3 June, 2023?",
        "What did Theo bake for Amira in June 2023?",
        "What did Theo bake for Amira on 2023-06-03?",
    ] {
        assert_eq!(top(&index, q).await, said[1].1, "{q}");
    }
    // A day nothing was said on changes nothing.
    let none = top(&index, "What did Theo bake for Amira on 1 January, 2020?").await;
    assert_eq!(none, plain);
}

/// "Yesterday", "today" and "N days ago" name a day counted back from
/// today: "what did the user eat yesterday" gets yesterday's meal first,
/// though an older one matches the words better.
#[tokio::test(flavor = "multi_thread")]
async fn a_question_about_yesterday_ranks_what_was_said_yesterday_first() {
    let ago = |n: u64| {
        let d = chrono::Local::now().date_naive() - chrono::Days::new(n);
        d.format("%Y-%m-%d").to_string()
    };
    let said = [
        (ago(5), "The user ate a big bowl of ramen for dinner"),
        (ago(1), "The user had tacos"),
        (ago(3), "The user ate pancakes for breakfast"),
    ];
    let (_tmp, index) = said_on(&said).await;
    assert_ne!(
        top(&index, "what did the user eat for dinner").await,
        said[1].1
    );
    let q = "what did the user eat for dinner yesterday";
    assert_eq!(top(&index, q).await, said[1].1);
    assert_eq!(
        top(&index, "what did the user eat 3 days ago").await,
        said[2].1
    );
}
