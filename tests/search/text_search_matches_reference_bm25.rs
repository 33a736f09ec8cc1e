//! `Store::search_text` scores and ranks exactly as a small BM25 reference written here
//! does, on a fixed corpus after revisions that shrink, replace and delete documents (so the
//! document frequencies and totals the store keeps must have followed every change): the
//! same chunks, in the same order, with the same scores, for default and custom k1/b, and
//! with a source filter.

use ratchetdb::{Chunk, Document, Options, SearchOptions, Store, Version};
use std::collections::{BTreeMap, HashMap, HashSet};

/// (source, id) -> chunk texts of the live revision.
type Corpus = BTreeMap<(String, String), Vec<String>>;

const TEXTS: [&str; 12] = [
    "The ratchet turns one way and never back",
    "A pawl holds the ratchet gear in place",
    "Gear ratios decide how fast the wheel turns",
    "Error E1234 means the disk is full",
    "The disk controller reported error E9 twice",
    "Coffee is brewed from roasted coffee beans",
    "Tea and coffee are the most common hot drinks",
    "The wheel the gear and the pawl form a ratchet",
    "Full text search ranks chunks by their words",
    "Vectors find meaning while words find names",
    "A ratchet ratchet ratchet is still one ratchet",
    "Beans and rice and beans",
];

/// The reference tokenizer: ASCII words, lower-cased (the corpus has no punctuation inside
/// words, so this is what Unicode word segmentation gives it).
fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The reference BM25 over the live chunks: ((source, id, position), score), best first,
/// for the chunks of `sources` (empty: all).
fn reference(
    corpus: &Corpus,
    query: &str,
    k1: f64,
    b: f64,
    sources: &[&str],
) -> Vec<((String, String, u32), f64)> {
    let chunks: Vec<((String, String, u32), Vec<String>)> = corpus
        .iter()
        .flat_map(|((s, i), texts)| {
            texts
                .iter()
                .enumerate()
                .map(move |(p, t)| ((s.clone(), i.clone(), p as u32), tokens(t)))
        })
        .collect();
    let n = chunks.len() as f64;
    let avg = chunks.iter().map(|(_, t)| t.len()).sum::<usize>() as f64 / n;
    let terms: HashSet<String> = tokens(query).into_iter().collect();
    let mut scored = Vec::new();
    for (key, words) in &chunks {
        if !sources.is_empty() && !sources.contains(&key.0.as_str()) {
            continue;
        }
        let mut score = 0.0;
        let mut any = false;
        for term in &terms {
            let df = chunks.iter().filter(|(_, w)| w.contains(term)).count() as f64;
            let tf = words.iter().filter(|w| *w == term).count() as f64;
            if tf == 0.0 {
                continue;
            }
            any = true;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            let len = words.len() as f64;
            score += idf * tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * len / avg));
        }
        if any {
            scored.push((key.clone(), score));
        }
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
}

fn doc(source: &str, id: &str, version: u64, texts: &[String]) -> Document {
    let mut doc = Document::new(source, id, Version::number(version));
    for (p, text) in texts.iter().enumerate() {
        doc = doc.with_chunk(Chunk::new(text.clone(), vec![1.0, p as f32 + 1.0]));
    }
    doc
}

fn check(store: &Store, corpus: &Corpus, query: &str, k: usize, options: &SearchOptions) {
    let sources: Vec<&str> = options.sources.iter().map(String::as_str).collect();
    let expected = reference(
        corpus,
        query,
        f64::from(options.bm25.k1),
        f64::from(options.bm25.b),
        &sources,
    );
    let hits = store.search_text(query, k, options).expect("search_text");
    let want = expected.len().min(k);
    assert_eq!(hits.len(), want, "{query:?}: hit count");
    let score_of: HashMap<_, f64> = expected.iter().cloned().collect();
    for (rank, hit) in hits.iter().enumerate() {
        let key = (hit.source.clone(), hit.id.clone(), hit.position);
        let reference_score = score_of
            .get(&key)
            .unwrap_or_else(|| panic!("{query:?}: {key:?} is not a reference match"));
        assert!(
            (f64::from(hit.score) - reference_score).abs() < 1e-4 * reference_score.max(1.0),
            "{query:?}: {key:?} scores {} against the reference's {reference_score}",
            hit.score
        );
        // The same rank as the reference, up to exact ties.
        let (_, at_rank) = &expected[rank];
        assert!(
            (f64::from(hit.score) - at_rank).abs() < 1e-4 * at_rank.max(1.0),
            "{query:?}: rank {rank} is {key:?} ({}), the reference's scores {at_rank}",
            hit.score
        );
        let text = &corpus[&(hit.source.clone(), hit.id.clone())][hit.position as usize];
        assert_eq!(&hit.text, text, "{query:?}: the hit's text");
    }
}

#[test]
fn text_search_matches_reference_bm25() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("text.redb"), Options::default()).expect("open");
    let mut corpus = Corpus::new();
    // Twelve documents of one to three chunks over two sources.
    for d in 0..12usize {
        let source = if d % 3 == 0 { "manuals" } else { "notes" };
        let texts: Vec<String> = (0..=(d % 3))
            .map(|p| TEXTS[(d + p * 5) % TEXTS.len()].to_string())
            .collect();
        let id = format!("doc{d}");
        store.upsert(doc(source, &id, 1, &texts)).expect("upsert");
        corpus.insert((source.to_string(), id), texts);
    }
    // Shrink one document, rewrite another, delete a third, and send a stale revision.
    let shrink = ("notes".to_string(), "doc2".to_string());
    let shrunk = vec![corpus[&shrink][0].clone()];
    store
        .upsert(doc("notes", "doc2", 2, &shrunk))
        .expect("shrink");
    corpus.insert(shrink, shrunk);
    let rewrite = ("notes".to_string(), "doc4".to_string());
    let rewritten = vec![
        "Rewritten chunk about coffee and tea".to_string(),
        TEXTS[3].to_string(),
    ];
    store
        .upsert(doc("notes", "doc4", 2, &rewritten))
        .expect("rewrite");
    corpus.insert(rewrite, rewritten);
    store
        .delete("notes", "doc5", Version::number(2))
        .expect("delete");
    corpus.remove(&("notes".to_string(), "doc5".to_string()));
    store
        .upsert(doc("notes", "doc4", 1, &["stale coffee".to_string()]))
        .expect("stale");
    assert!(store.verify().expect("verify").is_ok());

    let queries = [
        "ratchet",
        "coffee beans",
        "error E1234 disk",
        "the gear and the pawl",
        "words find names",
        "nothing matches this xyzzy",
        "Coffee COFFEE coffee",
    ];
    for query in queries {
        for k in [1, 3, 50] {
            check(&store, &corpus, query, k, &SearchOptions::default());
            check(
                &store,
                &corpus,
                query,
                k,
                &SearchOptions::default().bm25(2.0, 0.3),
            );
            check(
                &store,
                &corpus,
                query,
                k,
                &SearchOptions::default().source("manuals"),
            );
        }
    }
    // After a reopen the index answers the same (it is the file's, not memory's).
    drop(store);
    let store = Store::open(dir.path().join("text.redb"), Options::default()).expect("reopen");
    for query in queries {
        check(&store, &corpus, query, 10, &SearchOptions::default());
    }
}
