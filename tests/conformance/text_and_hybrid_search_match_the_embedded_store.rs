//! Text and hybrid search rank as the embedded store (the reference) does: the same writes
//! (a corpus, revisions that shrink documents and change a chunk, deletes, a listing that
//! removes documents) applied to a redb file and to the backend's store, then the same
//! queries (plain, with a source restriction, with a metadata filter, BM25 and fusion
//! settings) give the same hits in the same order with scores within 1e-4, and no hit is a
//! superseded, deleted or removed chunk (a word only such chunks held finds nothing). On
//! PostgreSQL the server holds text rows for exactly the live chunks.

use crate::common::assert_verified;
use crate::fixture::Fixture;
use ratchetdb::{
    Bm25, Chunk, Document, Filter, Fusion, Hit, Options, SearchOptions, Store, Version,
};
use serde_json::json;
use std::collections::BTreeMap;

crate::conformance!(text_and_hybrid_search_match_the_embedded_store);

const DIMENSION: usize = 8;
const WORDS: [&str; 16] = [
    "ratchet", "pawl", "gear", "spring", "lever", "axle", "tooth", "wheel", "crank", "shaft",
    "bearing", "clutch", "brake", "cam", "hinge", "bolt",
];
/// Held only by chunks the later writes supersede, delete or remove.
const GHOST: &str = "zeppelin";

/// A deterministic generator (an LCG), so both stores get the same corpus.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    fn vector(&mut self) -> Vec<f32> {
        (0..DIMENSION)
            .map(|_| (self.next() % 10_000) as f32 / 10_000.0 - 0.5)
            .collect()
    }
}

/// Chunk texts of distinct lengths (each new chunk one word longer than the last), so BM25
/// has no ties and the two stores' vector ids (which break ties) never matter.
struct Corpus {
    rng: Lcg,
    next_len: usize,
}

impl Corpus {
    fn chunk(&mut self, ghost: bool) -> Chunk {
        let len = self.next_len;
        self.next_len += 1;
        let mut words: Vec<&str> = (0..len)
            .map(|_| WORDS[(self.rng.next() % WORDS.len() as u64) as usize])
            .collect();
        if ghost {
            words[0] = GHOST;
        }
        let vector = self.rng.vector();
        let band = ["low", "mid", "high"][(self.rng.next() % 3) as usize];
        Chunk::new(words.join(" "), vector).with_meta(json!({ "band": band }))
    }
}

fn write_all(stores: &[&Store], f: impl Fn(&Store)) {
    for store in stores {
        f(store);
    }
}

/// The writes: 24 documents in two sources, then shrinking revisions (first chunk kept,
/// a changed one, the rest dropped; the dropped ones held the ghost word), deletes and a
/// listing that omits two documents of the other source.
fn apply_writes(stores: &[&Store]) {
    let mut corpus = Corpus {
        rng: Lcg(42),
        next_len: 3,
    };
    let mut docs: BTreeMap<(String, String), Vec<Chunk>> = BTreeMap::new();
    for n in 0..24 {
        let source = if n % 2 == 0 { "wiki" } else { "mail" };
        let id = format!("d{n:02}");
        let chunks: Vec<Chunk> = (0..3).map(|c| corpus.chunk(c == 2 && n < 12)).collect();
        docs.insert((source.to_string(), id), chunks);
    }
    for ((source, id), chunks) in &docs {
        let mut doc = Document::new(source, id, Version::number(1)).with_meta(json!({"n": id}));
        for chunk in chunks {
            doc = doc.with_chunk(chunk.clone());
        }
        write_all(stores, |s| {
            s.upsert(doc.clone()).expect("upsert");
        });
    }
    // Shrinking revisions of the ghost-holding documents: the first chunk kept, a new
    // second chunk.
    for ((source, id), chunks) in docs.iter().filter(|(k, _)| k.1.as_str() < "d12") {
        let doc = Document::new(source, id, Version::number(2))
            .with_meta(json!({"n": id}))
            .with_chunk(chunks[0].clone())
            .with_chunk(corpus.chunk(false));
        write_all(stores, |s| {
            s.upsert(doc.clone()).expect("revision");
        });
    }
    // A ghost chunk written and then deleted with its document.
    let doomed = Document::new("wiki", "doomed", Version::number(1))
        .with_chunk(corpus.chunk(true))
        .with_chunk(corpus.chunk(true));
    write_all(stores, |s| {
        s.upsert(doomed.clone()).expect("upsert");
        s.delete("wiki", "d14", Version::number(5)).expect("delete");
        s.delete("wiki", "doomed", Version::number(5))
            .expect("delete");
    });
    // A listing of `mail` at 6 that omits two of its documents (ghost chunks in one).
    let present: Vec<String> = docs
        .keys()
        .filter(|(s, id)| s == "mail" && id != "d13" && id != "d15")
        .map(|(_, id)| id.clone())
        .collect();
    let ghost_mail = Document::new("mail", "d13", Version::number(3))
        .with_meta(json!({"n": "d13"}))
        .with_chunk(corpus.chunk(true));
    write_all(stores, |s| {
        s.upsert(ghost_mail.clone()).expect("revision");
        s.retain("mail", present.clone(), Version::number(6))
            .expect("retain");
    });
}

type Key = (String, String, u32, String);

fn key(hit: &Hit) -> Key {
    (
        hit.source.clone(),
        hit.id.clone(),
        hit.position,
        hit.text.clone(),
    )
}

/// The same hits in the same order, scores within 1e-4.
fn assert_same(what: &str, file: &[Hit], server: &[Hit]) {
    let file_keys: Vec<Key> = file.iter().map(key).collect();
    let server_keys: Vec<Key> = server.iter().map(key).collect();
    assert_eq!(file_keys, server_keys, "{what}: hits differ");
    for (f, s) in file.iter().zip(server) {
        assert!(
            (f.score - s.score).abs() < 1e-4,
            "{what}: {:?} scores {} on the file, {} on PostgreSQL",
            key(f),
            f.score,
            s.score
        );
    }
}

/// Every hit is a live chunk: its document is live and holds this text at this position,
/// at the hit's generation.
fn assert_live(what: &str, store: &Store, hits: &[Hit]) {
    for hit in hits {
        let doc = store
            .get(&hit.source, &hit.id)
            .expect("get")
            .unwrap_or_else(|| panic!("{what}: hit of a missing document {:?}", key(hit)));
        assert!(
            !doc.deleted,
            "{what}: hit of a deleted document {:?}",
            key(hit)
        );
        assert_eq!(doc.generation, hit.generation, "{what}: a superseded chunk");
        let chunk = &doc.chunks[hit.position as usize];
        assert_eq!(chunk.text, hit.text, "{what}: a superseded chunk's text");
    }
}

fn text_and_hybrid_search_match_the_embedded_store(b: &dyn Fixture) {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = Options::default().dimension(DIMENSION);
    let file = Store::open(dir.path().join("store.redb"), options.clone()).expect("open file");
    let server = b.open_with("db", options);
    assert!(file.has_text_index() && server.has_text_index());
    apply_writes(&[&file, &server]);
    assert_verified(&server);
    let file_report = file.verify().expect("verify");
    assert!(file_report.is_ok(), "{:?}", file_report.violations);

    let mut rng = Lcg(7);
    let filter = Filter::parse(&json!({"band": "mid"})).expect("filter");
    let with = |f: &dyn Fn(&mut SearchOptions)| {
        let mut options = SearchOptions::default();
        // Exact vector rankings, so hybrid compares fusion, not two HNSW graphs.
        options.exact = true;
        f(&mut options);
        options
    };
    let variants: Vec<(&str, SearchOptions)> = vec![
        ("plain", with(&|_| {})),
        ("source", with(&|o| o.sources = vec!["wiki".to_string()])),
        ("filter", with(&|o| o.filter = Some(filter.clone()))),
        (
            "bm25 and weighted fusion",
            with(&|o| {
                o.bm25 = Bm25 { k1: 0.9, b: 0.4 };
                o.fusion = Fusion::Weighted { vector_weight: 0.3 };
            }),
        ),
    ];
    let queries = [
        "ratchet",
        "pawl gear",
        "spring lever axle tooth",
        "the wheel and the crank",
        "Bearing, CLUTCH; brake!",
    ];
    let mut compared = 0;
    for (name, options) in &variants {
        for query in queries {
            for k in [3, 200] {
                let what = format!("{name}, {query:?}, k {k}");
                let on_file = file.search_text(query, k, options).expect("file text");
                let on_server = server.search_text(query, k, options).expect("server text");
                assert!(!on_file.is_empty(), "{what}: the corpus has these words");
                assert_same(&format!("text, {what}"), &on_file, &on_server);
                assert_live(&what, &server, &on_server);
                compared += on_file.len();

                let vector = rng.vector();
                let on_file = file
                    .search_hybrid(query, &vector, k, options)
                    .expect("file hybrid");
                let on_server = server
                    .search_hybrid(query, &vector, k, options)
                    .expect("server hybrid");
                assert!(!on_file.is_empty(), "hybrid, {what}: no hits");
                assert_same(&format!("hybrid, {what}"), &on_file, &on_server);
                assert_live(&what, &server, &on_server);
            }
        }
    }
    assert!(compared > 100, "only {compared} text hits compared");

    // The ghost word was only in chunks the revisions, deletes and listing removed.
    for store in [&file, &server] {
        let hits = store
            .search_text(GHOST, 200, &SearchOptions::default())
            .expect("ghost search");
        assert!(hits.is_empty(), "a removed chunk was returned: {hits:?}");
    }
    // The server holds text rows for exactly its live chunks.
    #[cfg(feature = "postgres")]
    if let Some(pg) = b.as_postgres() {
        let live = server.stats().expect("stats").chunks;
        let rows = ratchetdb::testkit::pg_query_i64(
            pg.url(),
            &format!("SELECT count(*) FROM {}.chunk_lengths", pg.schema("db")),
        )
        .expect("count the rows");
        assert_eq!(rows as u64, live, "chunk_lengths rows vs live chunks");
    }
}
