//! Vector spaces on the embedded store (issue 46): re-embedding online under readers and
//! writers, a re-embed stopped anywhere and resumed, a rewrite racing a re-embed, and the
//! input a space refuses; what a re-embed refuses of its embedder (another model, a wrong
//! count of vectors, a refused vector) and of its space (replaced meanwhile, chunks no write
//! takes); a damaged space row; the default space dropped by promoting the active one in its place,
//! under racing readers and writers, a reader of its own, and refused when there is nothing
//! to promote. (What holds on both backends, and PostgreSQL's `Unsupported`, is
//! `tests/conformance/vector_spaces_are_added_filled_activated_and_dropped.rs`; the schema-6
//! conversion is `tests/storage/`; the CLI's `reembed` is `tests/cli/`.)

#[path = "../common/mod.rs"]
mod common;

mod a_backup_keeps_every_space;
mod a_damaged_space_row_stops_only_what_needs_that_space;
mod a_promoted_space_replaces_the_default_one;
mod a_promotion_the_memory_budget_cannot_hold_is_refused_and_changes_nothing;
mod a_promotion_under_a_memory_budget_loads_the_budgeted_index_again;
mod a_reader_forgets_a_space_another_process_dropped;
mod a_reader_opened_before_a_promotion_follows_it;
mod a_reader_settles_after_each_of_many_promotions;
mod a_reembed_never_writes_into_a_space_added_again_under_its_name;
mod a_reembed_stopped_at_random_points_resumes_without_repeating;
mod a_reembed_that_can_write_nothing_stops_instead_of_walking_for_ever;
mod a_reembed_with_another_model_than_its_space_s_is_refused;
mod a_rewrite_during_a_reembed_is_never_overwritten_by_an_older_vector;
mod a_space_dimension_past_32_bits_is_refused_not_wrapped;
mod a_vector_the_store_refuses_names_the_chunk_it_was_made_for;
mod an_active_space_naming_no_space_is_a_corruption_not_an_input;
mod an_embedder_returning_too_few_vectors_stops_the_reembed;
mod bad_space_input_is_refused_and_changes_nothing;
mod dropping_the_default_space_while_it_is_active_changes_nothing;
mod readers_never_see_a_stale_chunk_while_a_promotion_races_writers;
mod readers_never_see_a_stale_chunk_while_a_reembed_races_writers;

use ratchetdb::{Chunk, Document, EmbedError, Embedder, Options, Store, Version};
use std::path::Path;

/// The second space's width.
pub const WIDE: usize = 8;

/// A deterministic embedder for the second space: `WIDE` dimensions from the text's bytes.
pub struct Wide;

/// The second space's vector for `text`.
pub fn wide(text: &str) -> Vec<f32> {
    let mut v = vec![0.25f32; WIDE];
    for (i, b) in text.bytes().enumerate() {
        v[(i * 7 + usize::from(b)) % WIDE] += 1.0 + f32::from(b) / 255.0;
    }
    v
}

impl Embedder for Wide {
    fn name(&self) -> &str {
        "wide-test"
    }

    fn dimension(&self) -> usize {
        WIDE
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| wide(t)).collect())
    }
}

/// `store.reembed(space, embedder, batch)` on a thread of its own, its result within a
/// minute: a re-embed that does not return by then fails the test, saying `stuck` (what a
/// re-embed that never returns was doing).
pub fn reembed_within_a_minute<E: Embedder + Send + Sync + 'static>(
    store: &Store,
    space: &str,
    embedder: E,
    batch: usize,
    stuck: &str,
) -> Result<ratchetdb::ReembedOutcome, ratchetdb::ReembedError> {
    let (done, result) = std::sync::mpsc::channel();
    let (running, space) = (store.clone(), space.to_owned());
    std::thread::spawn(move || {
        let _ = done.send(running.reembed(&space, &embedder, batch, &mut |_| {}));
    });
    result
        .recv_timeout(std::time::Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the re-embed returns ({stuck})"))
}

/// The store `db.redb` in `dir` (3 dimensions, see `common::vector`).
pub fn open(dir: &Path) -> Store {
    Store::open(dir.join("db.redb"), Options::default().dimension(3)).expect("open")
}

/// Document `id` at `version` with `chunks` chunks whose texts carry the version, so every
/// revision's chunks are new texts.
pub fn revision(id: &str, version: u64, chunks: usize) -> Document {
    let mut doc = Document::new("s", id, Version::number(version));
    for i in 0..chunks {
        let text = format!("{id} v{version} c{i}");
        doc = doc.with_chunk(Chunk::new(text.clone(), common::vector(&text)));
    }
    doc
}

/// A store of `docs` documents of 3 chunks, one more of 300 long chunks (its rows spill:
/// the chunks row's tail rides in the vectors row, and is split again when the vectors are
/// replaced) and one deleted, with the `wide` space filled and active.
pub fn moved_to_wide(dir: &Path, docs: usize) -> Store {
    moved_to_wide_with(dir, docs, Options::default())
}

/// [`moved_to_wide`], the store opened with `options` (3 dimensions).
pub fn moved_to_wide_with(dir: &Path, docs: usize, options: Options) -> Store {
    let store = Store::open(dir.join("db.redb"), options.dimension(3)).expect("open");
    for d in 0..docs {
        store
            .upsert(revision(&format!("d{d}"), 1, 3))
            .expect("write");
    }
    let mut long = Document::new("s", "long", Version::number(1));
    for i in 0..300 {
        let text = format!("long chunk {i} {}", "words of a long chunk ".repeat(8));
        long = long.with_chunk(Chunk::new(text.clone(), common::vector(&text)));
    }
    store.upsert(long).expect("long");
    store.upsert(revision("gone", 1, 2)).expect("gone");
    store
        .delete("s", "gone", Version::number(2))
        .expect("delete");
    store.add_space("wide", "wide-test", WIDE).expect("add");
    store
        .reembed("wide", &Wide, 64, &mut |_| {})
        .expect("reembed");
    store.activate("wide").expect("activate");
    store
}

/// Every live chunk is a best hit of a search with its `wide` vector (among the hits tied
/// with the first: 8 dimensions give some texts the same vector).
pub fn every_chunk_found_by_its_wide_vector(store: &Store, options: &ratchetdb::SearchOptions) {
    for text in live_texts(store) {
        let hits = store.search(&wide(&text), 20, options).expect("search");
        let best = hits.first().map(|h| h.score).expect("a hit");
        assert!(
            hits.iter()
                .any(|h| h.text == text && (h.score - best).abs() <= 1e-5),
            "{text:?} is not a best hit: {:?}",
            hits.iter().map(|h| (&h.text, h.score)).collect::<Vec<_>>()
        );
    }
}

/// The live chunk texts of the store, sorted.
pub fn live_texts(store: &Store) -> Vec<String> {
    let mut texts: Vec<String> = store
        .documents(false)
        .expect("documents")
        .into_iter()
        .flat_map(|d| d.chunks.into_iter().map(|c| c.text))
        .collect();
    texts.sort();
    texts
}

/// Cosine similarity, as the store scores it.
pub fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b))
}

/// The document and version a hit's text carries (`"{id} v{version} c{i}"`, as
/// [`revision`] writes it).
pub fn version_of(text: &str) -> (String, u64) {
    let mut parts = text.split(' ');
    let id = parts.next().unwrap_or_default().to_owned();
    let version = parts
        .next()
        .and_then(|v| v.strip_prefix('v'))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("unexpected text {text:?}"));
    (id, version)
}
