//! A dead-letter replay is harmless: replaying every failed payload, however old, leaves the
//! index exactly as it was. Each stale payload is refused by the version guard and counted.
//!
//! Run: `cargo run --example replay`

use ratchetdb::{
    Chunk, Document, Embedder, HashingEmbedder, Op, OpOutcome, Options, Store, Version,
};

fn revision(
    embedder: &HashingEmbedder,
    id: &str,
    version: u64,
    text: &str,
) -> Result<Document, Box<dyn std::error::Error>> {
    Ok(Document::new("wiki", id, Version::number(version))
        .with_chunk(Chunk::new(text, embedder.embed(text)?)))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let embedder = HashingEmbedder::default();
    let store = Store::open(
        dir.path().join("replay.redb"),
        Options::default()
            .model(embedder.name())
            .dimension(embedder.dimension()),
    )?;

    // Live traffic. Some deliveries failed on the way and went to the dead-letter queue.
    let mut dead_letters = Vec::new();
    for version in 1..=3 {
        for id in ["pricing", "roadmap", "team"] {
            let doc = revision(&embedder, id, version, &format!("{id}, revision {version}"))?;
            if version < 3 {
                dead_letters.push(Op::Upsert(doc.clone()));
            }
            store.upsert(doc)?;
        }
    }
    // The roadmap page was deleted at the source at version 4.
    store.delete("wiki", "roadmap", Version::number(4))?;
    dead_letters.push(Op::Upsert(revision(
        &embedder,
        "roadmap",
        3,
        "roadmap, revision 3",
    )?));

    let before: Vec<_> = store
        .snapshot()?
        .documents(true)?
        .collect::<Result<_, _>>()?;

    // Months later someone replays the whole dead-letter queue, in one batch.
    println!("replaying {} dead letters:", dead_letters.len());
    for result in store.write_batch(dead_letters)? {
        match result? {
            OpOutcome::Document(outcome) => println!("  {outcome:?}"),
            other => println!("  {other:?}"),
        }
    }

    let after: Vec<_> = store
        .snapshot()?
        .documents(true)?
        .collect::<Result<_, _>>()?;
    assert_eq!(before, after, "a replay must not change the index");
    let counters = store.stats()?.counters;
    println!(
        "index unchanged; refused: older {}, duplicate {}, tombstoned {}",
        counters.skipped_older, counters.skipped_duplicate, counters.skipped_tombstoned
    );
    assert!(store.verify()?.is_ok());
    println!("verify: ok");
    Ok(())
}
