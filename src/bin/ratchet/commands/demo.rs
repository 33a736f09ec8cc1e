//! `ratchet demo`: the guarantee, visible. A small handbook bundled in the binary is
//! delivered through an adversarial schedule into a real store, checked, compared with
//! in-order delivery and with a naive last-write-wins index, and then searched.

mod corpus;
mod naive;
mod schedule;

use crate::commands::search::snippet;
use crate::embedder;
use crate::output::Output;
use crate::{exit, Failure};
use clap::Args;
use corpus::{CorpusDocument, End, SOURCE};
use naive::{audit, Audit, ChunkId, NaiveIndex, Retrievable};
use ratchetdb::{
    Chunk, Document, Embedder, Metric, Op, OpOutcome, OpenError, Options, Outcome, SearchOptions,
    SkipReason, Store, StoredDocument, Writer,
};
use schedule::{Delivery, Payload, Phase};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Instant;

pub const LONG_ABOUT: &str = "See the guarantee at work, with nothing but this binary.

Builds a store (default ./ratchet-demo.redb) from a small product handbook compiled into
ratchet (demo/corpus/: documents with several revisions each, some shrinking, some deleted,
some vanishing without an event), delivered through an adversarial schedule: retries, a
shuffled queue, two concurrent consumers through the group-commit writer, a dead-letter
replay of old payloads, a backfill of an old snapshot, a sync listing, and late stale writes
of deleted documents. Then it prints the outcome counters, runs verify, compares the final
state with in-order delivery into a second store, runs the same schedule through a naive
last-write-wins index (a plain map, for comparison only) to count the stale documents,
orphan chunks and resurrected deletes it keeps, and answers three questions from both.

Exit code 0 iff verify is clean, the state equals in-order delivery and nothing stale,
orphaned or deleted is retrievable.";

/// The store the demo builds when no --db is given.
const DEFAULT_DB: &str = "ratchet-demo.redb";

/// Characters of a chunk shown with a search hit.
const SNIPPET_CHARS: usize = 72;

/// Three questions whose answers changed over the handbook's history.
const QUESTIONS: &[&str] = &[
    "How many years of warranty does a Kettlebird kettle carry?",
    "How many days do I have to return a kettle for a refund?",
    "Can I still start the kettle with the legacy cloud API?",
];

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to build the demo store (default: ratchet-demo.redb in the current folder). A
    /// previous demo store there is replaced; any other file is left alone.
    #[arg(long, value_name = "PATH")]
    db: Option<PathBuf>,
    /// The all-MiniLM-L6-v2 model folder (default: $RATCHET_MODEL; without either, the
    /// built-in lexical hashing embedder).
    #[arg(long, value_name = "DIR")]
    model: Option<PathBuf>,
    /// The seed of the adversarial schedule.
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

/// Vectors of every chunk: `[document][revision - 1][position]`.
pub type Embeddings = Vec<Vec<Vec<Vec<f32>>>>;

pub fn run(args: DemoArgs) -> Result<ExitCode, Failure> {
    let started = Instant::now();
    let db = args.db.unwrap_or_else(|| PathBuf::from(DEFAULT_DB));
    // The demo writes (and clears) a store of its own: a file, never a server's schema, and
    // an address that may hold a password is not printed in its summary.
    if crate::is_postgres_url(&db) {
        return Err(Failure(
            "the demo writes a store of its own to a file (--db PATH); it does not take a \
             PostgreSQL URL (not shown: it may hold a password)"
                .into(),
        ));
    }
    let corpus = corpus::load().map_err(Failure)?;
    let model_dir = embedder::configured_model_dir(args.model.as_deref());
    let embedder = embedder::for_ingest(model_dir.as_deref())?;
    clear_previous_demo(&db)?;
    let embeddings = embed_corpus(&corpus, embedder.as_ref())?;
    let options = Options::default()
        .model(embedder.name())
        .dimension(embedder.dimension())
        .metric(Metric::Cosine);
    let store = Store::open(&db, options.clone()).map_err(crate::open_failure)?;

    let mut out = Output::stdout();
    let ended = introduce(&mut out, &corpus, &db, embedder.name())?;
    // Deliver the schedule through the concurrent writer.
    let arrivals = deliver_schedule(&mut out, &store, &corpus, &embeddings, args.seed)?;
    // Check it.
    let (report, difference) = check_state(&mut out, &store, &corpus, &embeddings, options)?;
    // The same arrivals through the naive index.
    let (naive, ratchet_audit) = compare_with_naive(
        &mut out,
        &store,
        &corpus,
        &embeddings,
        &arrivals,
        args.seed,
        ended,
    )?;
    // Questions.
    ask_questions(&mut out, &store, &corpus, embedder.as_ref(), &naive)?;

    let passed = report.is_ok() && difference.is_none() && ratchet_audit.is_clean();
    let elapsed = started.elapsed().as_secs_f64();
    if passed {
        out.text_line(&format!(
            "verification passed: verify clean, equal to in-order delivery, nothing stale, \
             orphaned or deleted retrievable ({elapsed:.1}s). Inspect it: {} stats --db {}",
            crate::program_name(),
            db.display()
        ))?;
    } else {
        out.text_line(&format!(
            "VERIFICATION FAILED ({elapsed:.1}s): {}",
            failure_summary(&report, difference.as_deref(), &ratchet_audit)
        ))?;
    }
    out.finish()?;
    Ok(if passed { exit::ok() } else { exit::error() })
}

/// Prints what the demo delivers; returns how many documents end deleted or vanished.
fn introduce(
    out: &mut Output,
    corpus: &[CorpusDocument],
    db: &Path,
    embedder_name: &str,
) -> Result<usize, Failure> {
    let revisions: usize = corpus.iter().map(|d| d.revisions.len()).sum();
    let shrinking = corpus
        .iter()
        .filter(|d| d.revisions.windows(2).any(|w| w[1].len() < w[0].len()))
        .count();
    let deleted = count_end(corpus, |end| matches!(end, End::Deleted(_)));
    let vanished = count_end(corpus, |end| matches!(end, End::Vanished(_)));
    out.text_line(&format!(
        "ratchet demo: the Kettlebird handbook, {} documents with {revisions} revisions \
         ({shrinking} documents shrink in a later revision); {deleted} are deleted at the \
         source, {vanished} vanish without an event",
        corpus.len()
    ))?;
    out.text_line(&format!(
        "store {}, embedder {}",
        db.display(),
        embedder::describe(embedder_name)
    ))?;
    out.text_line("")?;

    Ok(deleted + vanished)
}

/// Delivers the adversarial schedule of `seed` through the concurrent writer, printing each
/// phase's tally and the store's counters; returns every delivery in arrival order.
fn deliver_schedule(
    out: &mut Output,
    store: &Store,
    corpus: &[CorpusDocument],
    embeddings: &Embeddings,
    seed: u64,
) -> Result<Vec<Delivery>, Failure> {
    let schedule = schedule::adversarial(corpus, seed);
    out.text_line(&format!(
        "delivering through an adversarial schedule (seed {}):",
        seed
    ))?;
    out.text_line(&format!(
        "  {:<46}{:>6}{:>9}{:>9}{:>11}{:>7}{:>12}",
        "phase", "sent", "written", "deleted", "duplicate", "older", "tombstoned"
    ))?;
    let writer = store.writer();
    let mut arrivals: Vec<Delivery> = Vec::new();
    for (number, phase) in schedule.iter().enumerate() {
        let (tally, arrived) = deliver(&writer, phase, corpus, embeddings)?;
        arrivals.extend(arrived);
        out.text_line(&format!(
            "  {:<46}{:>6}{:>9}{:>9}{:>11}{:>7}{:>12}",
            format!("{} {}", number + 1, phase.title),
            tally.sent,
            tally.written + tally.unchanged,
            tally.deleted,
            tally.duplicate,
            tally.older,
            tally.tombstoned + tally.conflict,
        ))?;
        out.flush()?;
    }
    writer.shutdown();
    out.text_line(
        "  (the two live consumers race for real: how many racing revisions are refused as \
         older varies between runs; the final state does not)",
    )?;
    let counters = store.stats()?.counters;
    out.text_line(&format!(
        "store counters: written {} (new {}, newer {}), deleted {} (+{} by the listing), \
         refused {} (older {}, duplicate {}, tombstoned {}, conflict {}); chunks written {}, \
         reused {}, removed {}",
        counters.written_new + counters.written_newer,
        counters.written_new,
        counters.written_newer,
        counters.deleted,
        counters.retain_documents_removed,
        counters.skipped(),
        counters.skipped_older,
        counters.skipped_duplicate,
        counters.skipped_tombstoned,
        counters.skipped_conflict,
        counters.chunks_written,
        counters.chunks_reused,
        counters.chunks_removed,
    ))?;
    out.text_line("")?;

    Ok(arrivals)
}

/// Runs `verify` and compares the store with an in-order delivery into a second one,
/// printing both; returns the report and the first difference, if any.
fn check_state(
    out: &mut Output,
    store: &Store,
    corpus: &[CorpusDocument],
    embeddings: &Embeddings,
    options: Options,
) -> Result<(ratchetdb::VerifyReport, Option<String>), Failure> {
    let report = store.verify()?;
    if report.is_ok() {
        out.text_line(&format!(
            "verify: clean: {} documents, {} tombstones, {} chunks, {} vectors; every invariant holds",
            report.documents, report.tombstones, report.chunks, report.vectors
        ))?;
    } else {
        for violation in &report.violations {
            out.text_line(&format!("verify: violation: {violation}"))?;
        }
    }
    let reference = in_order_store(corpus, embeddings, options)?;
    let difference = first_difference(store, &reference)?;
    match &difference {
        None => out.text_line(&format!(
            "in-order delivery into a second store: identical final state ({} documents \
             compared: versions, deletions, chunk texts and vectors)",
            corpus.len()
        ))?,
        Some(difference) => out.text_line(&format!(
            "in-order delivery into a second store: DIFFERENT: {difference}"
        ))?,
    }

    Ok((report, difference))
}

/// Replays the same arrivals into the naive index and prints both audits side by side;
/// returns the naive index and the store's audit.
fn compare_with_naive(
    out: &mut Output,
    store: &Store,
    corpus: &[CorpusDocument],
    embeddings: &Embeddings,
    arrivals: &[Delivery],
    seed: u64,
    ended: usize,
) -> Result<(NaiveIndex, Audit), Failure> {
    let mut naive = NaiveIndex::new(seed);
    for delivery in arrivals {
        naive.apply(delivery, corpus, embeddings);
    }
    let naive_audit = audit(corpus, naive.retrievable());
    let ratchet_documents = documents(store)?;
    let ratchet_audit = audit(corpus, retrievable(corpus, &ratchet_documents)?);
    let live = corpus.iter().filter(|d| d.end == End::Live).count();
    let current_chunks: usize = corpus
        .iter()
        .filter_map(|d| d.final_chunks().map(<[String]>::len))
        .sum();
    out.text_line("")?;
    out.text_line(&format!(
        "after the same deliveries, in the same order:   {:>22}{:>12}",
        "naive last-write-wins", "ratchetdb"
    ))?;
    let rows = [
        (
            format!("stale documents (of {live} that exist)"),
            naive_audit.stale_documents,
            ratchet_audit.stale_documents,
        ),
        (
            "orphan chunks".to_string(),
            naive_audit.orphan_chunks,
            ratchet_audit.orphan_chunks,
        ),
        (
            format!("resurrected deletes (of {ended})"),
            naive_audit.resurrected_deletes,
            ratchet_audit.resurrected_deletes,
        ),
        (
            format!("retrievable chunks (the source has {current_chunks})"),
            naive_audit.retrievable,
            ratchet_audit.retrievable,
        ),
    ];
    for (name, naive_value, ratchet_value) in rows {
        out.text_line(&format!("  {name:<46}{naive_value:>22}{ratchet_value:>12}"))?;
    }
    out.text_line(
        "  (naive: a map keyed by (source, id, chunk id), last write wins; for comparison only)",
    )?;
    out.text_line("")?;

    Ok((naive, ratchet_audit))
}

/// Asks the demo's questions of the store and of the naive index, printing both answers.
fn ask_questions(
    out: &mut Output,
    store: &Store,
    corpus: &[CorpusDocument],
    embedder: &dyn Embedder,
    naive: &NaiveIndex,
) -> Result<(), Failure> {
    let lexical = embedder::is_lexical(embedder.name());
    out.text_line(&format!(
        "three questions ({})",
        if lexical {
            "lexical hashing embedder: word overlap, not meaning"
        } else {
            "semantic embedder"
        }
    ))?;
    for question in QUESTIONS {
        let query = embedder.embed(question)?;
        out.text_line(&format!("Q: {question}"))?;
        for hit in store.search(&query, 2, &SearchOptions::default())? {
            let doc = document_index(corpus, &hit.id)?;
            out.text_line(&format!(
                "   ratchetdb {:.3}  {} #{}  [{}]  {}",
                hit.score,
                hit.id,
                hit.position,
                label(&corpus[doc], hit.position, &hit.text, None),
                snippet(&hit.text, SNIPPET_CHARS)
            ))?;
        }
        for (score, chunk_id, chunk) in naive.search(&query, 3) {
            let document = &corpus[chunk.doc];
            let copy = match chunk_id {
                ChunkId::Position(_) => "",
                ChunkId::Random(_) => ", a redelivered copy",
            };
            out.text_line(&format!(
                "   naive     {:.3}  {} #{}  [{}{copy}]  {}",
                score,
                document.id,
                chunk.position,
                label(document, chunk.position, &chunk.text, Some(chunk.revision)),
                snippet(&chunk.text, SNIPPET_CHARS)
            ))?;
        }
    }
    out.text_line("")?;

    Ok(())
}

fn count_end(corpus: &[CorpusDocument], which: impl Fn(End) -> bool) -> usize {
    corpus.iter().filter(|d| which(d.end)).count()
}

fn failure_summary(
    report: &ratchetdb::VerifyReport,
    difference: Option<&str>,
    audit: &Audit,
) -> String {
    let mut problems = Vec::new();
    if !report.is_ok() {
        problems.push(format!("{} verify violations", report.violations.len()));
    }
    if let Some(difference) = difference {
        problems.push(format!("differs from in-order delivery ({difference})"));
    }
    if !audit.is_clean() {
        problems.push(format!("{audit:?}"));
    }
    problems.join("; ")
}

/// Removes a store left by an earlier demo at `db`; refuses to touch anything else.
fn clear_previous_demo(db: &Path) -> Result<(), Failure> {
    let not_ours = || {
        Failure(format!(
            "{} exists and is not a ratchet demo store; remove it or pass --db another path",
            db.display()
        ))
    };
    match std::fs::metadata(db) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Failure(format!("cannot use {}: {e}", db.display()))),
        Ok(meta) if !meta.is_file() => return Err(not_ours()),
        Ok(meta) if meta.len() == 0 => {}
        Ok(_) => {
            let store = match Store::open(db, Options::default().must_exist()) {
                Ok(store) => store,
                Err(error @ OpenError::Locked { .. }) => return Err(crate::open_failure(error)),
                Err(_) => return Err(not_ours()),
            };
            let ours = store
                .snapshot()?
                .documents(false)?
                .all(|d| d.is_ok_and(|d| d.source == SOURCE));
            drop(store);
            if !ours {
                return Err(not_ours());
            }
        }
    }
    std::fs::remove_file(db).map_err(|e| Failure(format!("cannot replace {}: {e}", db.display())))
}

/// Every chunk of every revision, embedded in one batch.
fn embed_corpus(corpus: &[CorpusDocument], embedder: &dyn Embedder) -> Result<Embeddings, Failure> {
    let texts: Vec<&str> = corpus
        .iter()
        .flat_map(|d| d.revisions.iter().flatten().map(String::as_str))
        .collect();
    let vectors = embedder.embed_batch(&texts)?;
    if vectors.len() != texts.len() {
        return Err(Failure(format!(
            "the embedder returned {} vectors for {} texts",
            vectors.len(),
            texts.len()
        )));
    }
    let mut vectors = vectors.into_iter();
    Ok(corpus
        .iter()
        .map(|d| {
            d.revisions
                .iter()
                .map(|chunks| chunks.iter().filter_map(|_| vectors.next()).collect())
                .collect()
        })
        .collect())
}

/// The store operation a message carries.
fn operation(payload: Payload, corpus: &[CorpusDocument], embeddings: &Embeddings) -> Op {
    match payload {
        Payload::Upsert { doc, revision } => {
            let mut document = Document::new(SOURCE, corpus[doc].id, payload.version());
            for (text, vector) in corpus[doc].revisions[revision - 1]
                .iter()
                .zip(&embeddings[doc][revision - 1])
            {
                document
                    .chunks
                    .push(Chunk::new(text.clone(), vector.clone()));
            }
            Op::Upsert(document)
        }
        Payload::Delete { doc, .. } => Op::Delete {
            source: SOURCE.to_string(),
            id: corpus[doc].id.to_string(),
            version: payload.version(),
        },
        Payload::Retain => Op::Retain {
            source: SOURCE.to_string(),
            present: corpus
                .iter()
                .filter(|d| d.end == End::Live)
                .map(|d| d.id.to_string())
                .collect(),
            version: payload.version(),
        },
    }
}

/// What one phase's deliveries came to.
#[derive(Default)]
struct PhaseTally {
    sent: u64,
    written: u64,
    unchanged: u64,
    deleted: u64,
    duplicate: u64,
    older: u64,
    tombstoned: u64,
    conflict: u64,
}

impl PhaseTally {
    fn add(&mut self, outcome: &OpOutcome) {
        self.sent += 1;
        match outcome {
            OpOutcome::Document(Outcome::Written { .. }) => self.written += 1,
            OpOutcome::Document(Outcome::Unchanged { .. }) => self.unchanged += 1,
            OpOutcome::Document(Outcome::Deleted { .. }) => self.deleted += 1,
            OpOutcome::Document(Outcome::Skipped { reason, .. }) => match reason {
                SkipReason::Older => self.older += 1,
                SkipReason::Duplicate => self.duplicate += 1,
                SkipReason::Tombstoned => self.tombstoned += 1,
                _ => self.conflict += 1,
            },
            OpOutcome::Retain(retain) => self.deleted += retain.documents_removed,
            _ => {}
        }
    }

    fn merge(&mut self, other: PhaseTally) {
        self.sent += other.sent;
        self.written += other.written;
        self.unchanged += other.unchanged;
        self.deleted += other.deleted;
        self.duplicate += other.duplicate;
        self.older += other.older;
        self.tombstoned += other.tombstoned;
        self.conflict += other.conflict;
    }
}

/// Runs a phase: each consumer in its own thread, submitting to the shared writer and
/// waiting for each outcome (at-least-once consumers acknowledge after the write). Returns
/// the tally and the deliveries in the order the writer received them.
fn deliver(
    writer: &Writer,
    phase: &Phase,
    corpus: &[CorpusDocument],
    embeddings: &Embeddings,
) -> Result<(PhaseTally, Vec<Delivery>), Failure> {
    let arrivals = Mutex::new(Vec::new());
    let results: Vec<Result<PhaseTally, Failure>> = std::thread::scope(|scope| {
        let consumers: Vec<_> = phase
            .consumers
            .iter()
            .map(|deliveries| {
                let arrivals = &arrivals;
                scope.spawn(move || {
                    let mut tally = PhaseTally::default();
                    for delivery in deliveries {
                        let op = operation(delivery.payload, corpus, embeddings);
                        // The log and the writer's queue see the same order.
                        let pending = {
                            let mut log = arrivals.lock().unwrap_or_else(|e| e.into_inner());
                            log.push(*delivery);
                            writer.submit(op)?
                        };
                        tally.add(&pending.wait()?);
                    }
                    Ok(tally)
                })
            })
            .collect();
        consumers
            .into_iter()
            .map(|consumer| {
                consumer
                    .join()
                    .unwrap_or_else(|_| Err(Failure("a consumer thread panicked".into())))
            })
            .collect()
    });
    let mut total = PhaseTally::default();
    for result in results {
        total.merge(result?);
    }
    Ok((
        total,
        arrivals.into_inner().unwrap_or_else(|e| e.into_inner()),
    ))
}

/// A second store, in memory, fed every event once in version order.
fn in_order_store(
    corpus: &[CorpusDocument],
    embeddings: &Embeddings,
    options: Options,
) -> Result<Store, Failure> {
    let store = Store::open_with_backend(redb::backends::InMemoryBackend::new(), options)?;
    let ops = schedule::in_order(corpus)
        .into_iter()
        .map(|payload| operation(payload, corpus, embeddings))
        .collect();
    for result in store.write_batch(ops)? {
        result?;
    }
    Ok(store)
}

/// Every document of a store (tombstones included) with vectors, from one snapshot.
fn documents(store: &Store) -> Result<Vec<StoredDocument>, Failure> {
    let snapshot = store.snapshot()?;
    let documents = snapshot.documents(true)?.collect::<Result<Vec<_>, _>>()?;
    Ok(documents)
}

/// The first way two stores' final states differ (generations and vector ids aside: they
/// count writes, which differ by schedule), or `None`.
fn first_difference(a: &Store, b: &Store) -> Result<Option<String>, Failure> {
    let (a, b) = (documents(a)?, documents(b)?);
    if a.len() != b.len() {
        return Ok(Some(format!("{} documents against {}", a.len(), b.len())));
    }
    for (x, y) in a.iter().zip(&b) {
        let same = x.source == y.source
            && x.id == y.id
            && x.version == y.version
            && x.deleted == y.deleted
            && x.content_hash == y.content_hash
            && x.meta == y.meta
            && x.chunks.len() == y.chunks.len()
            && x.chunks.iter().zip(&y.chunks).all(|(c, d)| {
                c.position == d.position
                    && c.text == d.text
                    && c.meta == d.meta
                    && c.vector == d.vector
            });
        if !same {
            return Ok(Some(format!(
                "{}/{}: version {} deleted {} against version {} deleted {}",
                x.source, x.id, x.version, x.deleted, y.version, y.deleted
            )));
        }
    }
    Ok(None)
}

fn document_index(corpus: &[CorpusDocument], id: &str) -> Result<usize, Failure> {
    corpus.iter().position(|d| d.id == id).ok_or_else(|| {
        Failure(format!(
            "the store holds {id:?}, which is not in the corpus"
        ))
    })
}

/// The chunks of a store's live documents, for [`audit`].
fn retrievable<'a>(
    corpus: &[CorpusDocument],
    documents: &'a [StoredDocument],
) -> Result<Vec<Retrievable<'a>>, Failure> {
    let mut chunks = Vec::new();
    for document in documents.iter().filter(|d| !d.deleted) {
        let doc = document_index(corpus, &document.id)?;
        for chunk in &document.chunks {
            chunks.push(Retrievable {
                doc,
                position: Some(chunk.position),
                text: &chunk.text,
            });
        }
    }
    Ok(chunks)
}

/// Whether a returned chunk is the source's current text.
fn label(document: &CorpusDocument, position: u32, text: &str, revision: Option<usize>) -> String {
    let of = document.revisions.len();
    match document.final_chunks() {
        None => "DELETED at the source".to_string(),
        Some(current) if current.get(position as usize).map(String::as_str) == Some(text) => {
            "current".to_string()
        }
        Some(_) => match revision {
            Some(revision) => format!("STALE: revision {revision} of {of}"),
            None => "STALE".to_string(),
        },
    }
}
