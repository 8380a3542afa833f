//! The embedding cache: when a process reads its file, what an erasure
//! keeps of it, and a text asked for twice at once embedded once.

use std::sync::Arc;
use std::time::Duration;

use memd::embed::{Embedder, openai::OpenAi};

use super::openai_config;
use crate::support::{Reply, embeddings_reply, scripted};

/// How many texts the scripted embedding server was asked to embed.
fn texts_embedded(server: &crate::support::Scripted) -> usize {
    let requests = server.requests.lock().unwrap();
    requests
        .iter()
        .map(|r| r["input"].as_array().map_or(0, Vec::len))
        .sum()
}

/// Append `n` records of other texts (8 dimensions) to the cache file in
/// `dir`, in its format, so that it is large.
fn pad_cache_file(dir: &std::path::Path, n: usize) {
    use std::io::Write;
    let file = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().ends_with(".bin"))
        .unwrap();
    let mut buf = Vec::with_capacity(n * 52);
    for i in 0..n as u64 {
        let mut key = [0u8; 16];
        key[..8].copy_from_slice(&i.to_le_bytes());
        key[8] = 0xAB;
        buf.extend_from_slice(&key);
        buf.extend_from_slice(&8u32.to_le_bytes());
        for x in 0..8 {
            buf.extend_from_slice(&(x as f32).to_le_bytes());
        }
    }
    let mut f = std::fs::OpenOptions::new().append(true).open(file).unwrap();
    f.write_all(&buf).unwrap();
}

fn texts(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix} {i}")).collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_large_embedding_cache_is_read_only_by_a_call_with_many_texts_to_embed() {
    use memd::embed::cache::Cached;
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let inner = || -> Arc<dyn Embedder> { Arc::new(OpenAi::new(&config).unwrap()) };
    let tmp = tempfile::tempdir().unwrap();
    let known = texts("a text embedded before", 10);
    let first = Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&known)
        .await
        .unwrap();
    assert_eq!(texts_embedded(&server), 10);

    // A small file is read at the first call: nothing embedded again.
    let again = Cached::open(inner(), tmp.path()).unwrap();
    assert_eq!(again.embed(&known[..1]).await.unwrap()[0], first[0]);
    assert_eq!(texts_embedded(&server), 10);

    // A large one (a search's query, in a one-shot process): the query is
    // embedded instead of reading it, with the same vector.
    pad_cache_file(tmp.path(), 90_000);
    let one_shot = Cached::open(inner(), tmp.path()).unwrap();
    assert_eq!(one_shot.embed(&known[..1]).await.unwrap()[0], first[0]);
    assert_eq!(texts_embedded(&server), 11);
    // ... and kept in memory for the rest of the process.
    one_shot.embed(&known[..1]).await.unwrap();
    assert_eq!(texts_embedded(&server), 11);

    // A call with many texts to embed reads the file: only the new ones
    // are embedded.
    let mut many = known.clone();
    many.extend(texts("a new text", 60));
    let rebuilt = Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&many)
        .await
        .unwrap();
    assert_eq!(texts_embedded(&server), 11 + 60);
    assert_eq!(rebuilt[..10], first[..]);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_erasure_in_a_process_that_never_read_the_embedding_cache_keeps_the_other_texts_embeddings()
 {
    use memd::embed::cache::Cached;
    let server = scripted(|_, body| Reply::Json(embeddings_reply(body, 8))).await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let inner = || -> Arc<dyn Embedder> { Arc::new(OpenAi::new(&config).unwrap()) };
    let tmp = tempfile::tempdir().unwrap();
    let kept = texts("a text kept", 3);
    let mut all = kept.clone();
    all.push("the erased text".into());
    Cached::open(inner(), tmp.path())
        .unwrap()
        .embed(&all)
        .await
        .unwrap();
    pad_cache_file(tmp.path(), 90_000);
    assert_eq!(texts_embedded(&server), 4);

    Cached::open(inner(), tmp.path())
        .unwrap()
        .retain(&kept)
        .await
        .unwrap();
    // The file now holds the kept texts alone (small: read at once).
    let after = Cached::open(inner(), tmp.path()).unwrap();
    after.embed(&kept).await.unwrap();
    assert_eq!(
        texts_embedded(&server),
        4,
        "the kept texts' embeddings stay"
    );
    after.embed(&all[3..]).await.unwrap();
    assert_eq!(texts_embedded(&server), 5, "the erased text's is gone");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_text_asked_for_while_it_is_being_embedded_is_embedded_once() {
    use memd::embed::cache::Cached;
    // Slow enough that the second call starts while the first waits.
    let server =
        scripted(|_, body| Reply::Slow(Duration::from_millis(300), embeddings_reply(body, 8)))
            .await;
    let config = openai_config(&server.url, 5, 1).embedder;
    let tmp = tempfile::tempdir().unwrap();
    let cache =
        Arc::new(Cached::open(Arc::new(OpenAi::new(&config).unwrap()), tmp.path()).unwrap());
    let fact = vec!["The user moved to Lisbon".to_string()];
    let (a, b) = (cache.clone(), cache.clone());
    let (f1, f2) = (fact.clone(), fact.clone());
    let first = tokio::spawn(async move { a.embed(&f1).await.unwrap() });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { b.embed(&f2).await.unwrap() });
    let (first, second) = (first.await.unwrap(), second.await.unwrap());
    assert_eq!(first, second);
    assert_eq!(texts_embedded(&server), 1);

    // A call that failed lets the ones waiting for it embed the text.
    let failing = scripted(|n, body| match n {
        0 => Reply::Slow(
            Duration::from_millis(300),
            serde_json::json!({"no": "data"}),
        ),
        _ => Reply::Json(embeddings_reply(body, 8)),
    })
    .await;
    let config = openai_config(&failing.url, 5, 1).embedder;
    let tmp = tempfile::tempdir().unwrap();
    let cache =
        Arc::new(Cached::open(Arc::new(OpenAi::new(&config).unwrap()), tmp.path()).unwrap());
    let (a, b) = (cache.clone(), cache.clone());
    let (f1, f2) = (fact.clone(), fact.clone());
    let first = tokio::spawn(async move { a.embed(&f1).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let second = tokio::spawn(async move { b.embed(&f2).await });
    assert!(first.await.unwrap().is_err());
    assert_eq!(second.await.unwrap().unwrap().len(), 1);
    assert_eq!(texts_embedded(&failing), 2);
}
