//! Quickstart: open a store, write documents, search them, and watch a stale retry bounce.
//!
//! Run: `cargo run --example quickstart`
//!
//! Uses the built-in hashing embedder (lexical: it matches words, not meaning). With the
//! `minilm` feature, `ratchetdb::MiniLmEmbedder::load(dir)` drops in for semantic search.

use ratchetdb::{
    chunk_text, Chunk, ChunkerOptions, Document, Embedder, HashingEmbedder, Options, SearchOptions,
    Store, Version,
};

/// Chunks `text`, embeds the chunks, and makes a document of them.
fn document(
    embedder: &dyn Embedder,
    id: &str,
    version: u64,
    text: &str,
) -> Result<Document, Box<dyn std::error::Error>> {
    let chunks = chunk_text(text, &ChunkerOptions::default());
    let texts: Vec<&str> = chunks.iter().map(String::as_str).collect();
    let vectors = embedder.embed_batch(&texts)?;
    let mut doc = Document::new("handbook", id, Version::number(version));
    for (text, vector) in chunks.iter().zip(vectors) {
        doc = doc.with_chunk(Chunk::new(text.as_str(), vector));
    }
    Ok(doc)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let embedder = HashingEmbedder::default();
    // The store records the embedder's name and dimension: another embedder is refused later.
    let store = Store::open(
        dir.path().join("quickstart.redb"),
        Options::default()
            .model(embedder.name())
            .dimension(embedder.dimension()),
    )?;

    let pages = [
        (
            "warranty.md",
            2,
            "Every kettle carries a three-year warranty from delivery.",
        ),
        (
            "returns.md",
            1,
            "Return a kettle within 60 days for a full refund.",
        ),
        (
            "descaling.md",
            1,
            "Descale monthly with citric acid; rinse three times.",
        ),
    ];
    for (id, version, text) in pages {
        let outcome = store.upsert(document(&embedder, id, version, text)?)?;
        println!("upsert {id} v{version}: {outcome:?}");
    }

    let question = "how long is the kettle warranty";
    println!("\nsearch: {question:?}");
    let query = embedder.embed(question)?;
    for hit in store.search(&query, 2, &SearchOptions::default())? {
        println!(
            "  {:.3}  {}/{} #{}  {}",
            hit.score, hit.source, hit.id, hit.position, hit.text
        );
    }

    // A retry of revision 1 arrives late: refused and counted, the index keeps revision 2.
    let stale = document(
        &embedder,
        "warranty.md",
        1,
        "Every kettle carries a one-year warranty.",
    )?;
    println!("\nlate retry of warranty.md v1: {:?}", store.upsert(stale)?);
    let stored = store
        .get("handbook", "warranty.md")?
        .ok_or("warranty.md is missing")?;
    println!(
        "warranty.md is still v{}: {}",
        stored.version.value, stored.chunks[0].text
    );
    assert!(store.verify()?.is_ok());
    println!("verify: ok");
    Ok(())
}
