//! A pipeline the way ratchetdb means it to be built:
//!
//! 1. a ticket is taken when a job is **enqueued** (not when it is sent or retried), so a
//!    retry carries its original place in line;
//! 2. a worker **plans** before embedding: a revision the store would refuse, or one whose
//!    text is already stored, costs no embedding; a changed revision embeds only its changed
//!    chunks;
//! 3. writes go through the concurrent **Writer**: many workers, one group commit.
//!
//! Run: `cargo run --example pipeline`

use crossbeam_channel::unbounded;
use ratchetdb::{
    chunk_text, Chunk, ChunkerOptions, Document, Embedder, HashingEmbedder, Options, PlannedAction,
    Store, Version,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// A job on the queue: what changed, and the ticket it got when it was enqueued.
#[derive(Clone)]
struct Job {
    ticket: Version,
    id: &'static str,
    text: String,
}

const INTRO: &str = "Kettlebird kettles boil a litre in ninety seconds.";
const SAFETY: &str = "Never fill above the MAX line.";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = tempfile::tempdir()?;
    let embedder = HashingEmbedder::default();
    let store = Store::open(
        dir.path().join("pipeline.redb"),
        Options::default()
            .model(embedder.name())
            .dimension(embedder.dimension()),
    )?;
    let chunker = ChunkerOptions {
        max_chars: 60,
        overlap_chars: 0,
    };

    // Enqueue: each job is stamped with a store-issued ticket now.
    let (queue, jobs) = unbounded::<Job>();
    let enqueue = |id: &'static str, text: String| -> Result<Job, Box<dyn std::error::Error>> {
        let job = Job {
            ticket: store.ticket()?,
            id,
            text,
        };
        queue.send(job.clone())?;
        Ok(job)
    };
    let first = enqueue(
        "manual.md",
        format!("{INTRO}\n\n{SAFETY}\n\nDescale monthly."),
    )?;
    enqueue("faq.md", "Can I boil milk? No, only water.".to_string())?;
    // An edit of one paragraph: only that chunk needs a new vector.
    enqueue(
        "manual.md",
        format!("{INTRO}\n\n{SAFETY}\n\nDescale every three months."),
    )?;
    // The first job's acknowledgement was lost: it is redelivered, with its original ticket.
    queue.send(first)?;
    drop(queue);

    let writer = store.writer();
    let embedded = AtomicU64::new(0);
    let planned_away = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for worker in 0..2 {
            let (jobs, writer, store) = (jobs.clone(), writer.clone(), &store);
            let (embedder, embedded, planned_away) = (&embedder, &embedded, &planned_away);
            scope.spawn(move || -> Result<(), String> {
                for job in jobs {
                    let mut doc = Document::new("docs", job.id, job.ticket);
                    for text in chunk_text(&job.text, &chunker) {
                        doc.chunks.push(Chunk::without_vector(text));
                    }
                    let plan = store.plan(&doc).map_err(|e| e.to_string())?;
                    if let PlannedAction::Skip { reason, .. } = plan.action {
                        planned_away.fetch_add(1, Ordering::Relaxed);
                        println!(
                            "worker {worker}: {} {} skipped before embedding ({reason})",
                            job.id, job.ticket
                        );
                        continue;
                    }
                    let texts: Vec<&str> = plan
                        .to_embed
                        .iter()
                        .map(|&i| doc.chunks[i].text.as_str())
                        .collect();
                    let vectors = embedder.embed_batch(&texts).map_err(|e| e.to_string())?;
                    embedded.fetch_add(vectors.len() as u64, Ordering::Relaxed);
                    for (&position, vector) in plan.to_embed.iter().zip(vectors) {
                        doc.chunks[position].vector = Some(vector);
                    }
                    // The guard decides again at write time: the plan was advice.
                    let outcome = writer.upsert(doc).map_err(|e| e.to_string())?;
                    println!(
                        "worker {worker}: {} {}: embedded {}, reused {}: {outcome:?}",
                        job.id,
                        job.ticket,
                        plan.to_embed.len(),
                        plan.reusable.len()
                    );
                }
                Ok(())
            });
        }
    });
    writer.shutdown();

    let manual = store
        .get("docs", "manual.md")?
        .ok_or("manual.md is missing")?;
    println!(
        "\nmanual.md ends at {} with {:?}",
        manual.version,
        manual.chunks.last().map(|c| &c.text)
    );
    assert!(manual
        .chunks
        .last()
        .is_some_and(|c| c.text.contains("three months")));
    let counters = store.stats()?.counters;
    println!(
        "chunks embedded {}, reused by the store {}; jobs planned away before embedding {}",
        embedded.load(Ordering::Relaxed),
        counters.chunks_reused,
        planned_away.load(Ordering::Relaxed)
    );
    assert!(store.verify()?.is_ok());
    println!("verify: ok");
    Ok(())
}
