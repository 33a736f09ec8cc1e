//! Readers and a writer racing a promotion (issue 46): the `wide` space is active and
//! complete; reader threads search it (no space named: the active one, then after the
//! promotion the default one, which then holds the same vectors) the whole time, while a
//! writer rewrites documents, each revision bringing the vectors the store asks for (the
//! old default vector and the `wide` one before the promotion, the `wide` one alone as
//! `Chunk::vector` after it: a revision of the old form that lands after the promotion is
//! refused, typed, and written again in the new form). Meanwhile `drop_space("default")`
//! promotes `wide`. No search fails or panics, every hit is a live chunk of a revision at
//! least as new as the one committed before its search began, scored on its own text's
//! `wide` vector (never an older revision's, never the old model's); at the end every live
//! chunk is found by its `wide` vector and `verify` is clean.

use super::{
    cosine, every_chunk_found_by_its_wide_vector, open, revision, version_of, wide, Wide, WIDE,
};
use ratchetdb::{Chunk, Document, SearchOptions, WriteError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const DOCS: u64 = 24;
const CHUNKS: usize = 4;

/// Revision `version` of document `id`: before the promotion with its old default
/// vectors and its `wide` ones, after it with the `wide` ones as its own.
fn rewritten(id: &str, version: u64, promoted: bool) -> Document {
    let doc = revision(id, version, CHUNKS);
    let mut out = Document::new(doc.source.clone(), doc.id.clone(), doc.version);
    for chunk in doc.chunks {
        let v = wide(&chunk.text);
        out = out.with_chunk(if promoted {
            Chunk::new(chunk.text, v)
        } else {
            chunk.with_space_vector("wide", v)
        });
    }
    out
}

#[test]
fn readers_never_see_a_stale_chunk_while_a_promotion_races_writers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open(dir.path()));
    for d in 0..DOCS {
        store
            .upsert(revision(&format!("d{d}"), 1, CHUNKS))
            .expect("write");
    }
    store.add_space("wide", "wide-test", WIDE).expect("add");
    store
        .reembed("wide", &Wide, 16, &mut |_| {})
        .expect("reembed");
    store.activate("wide").expect("activate");
    let committed: Arc<Mutex<HashMap<String, u64>>> = Arc::new(Mutex::new(
        (0..DOCS).map(|d| (format!("d{d}"), 1)).collect(),
    ));
    let done = Arc::new(AtomicBool::new(false));
    let searches = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (store, committed, done, searches) = (
                store.clone(),
                committed.clone(),
                done.clone(),
                searches.clone(),
            );
            std::thread::spawn(move || {
                let mut i = r;
                while !done.load(Ordering::SeqCst) {
                    i += 1;
                    let id = format!("d{}", i % DOCS as usize);
                    let before = committed.lock().expect("lock").clone();
                    let text = format!("{id} v{} c{}", before[&id], i % CHUNKS);
                    let query = wide(&text);
                    let options = match i % 3 {
                        0 => SearchOptions::default(),
                        1 => SearchOptions::default().exact(true),
                        _ => SearchOptions::default().space("wide"),
                    };
                    let hits = store.search(&query, 5, &options).expect("search");
                    assert!(!hits.is_empty());
                    for hit in &hits {
                        let (hit_id, version) = version_of(&hit.text);
                        assert_eq!(hit.version.value, version, "{hit:?}");
                        assert!(
                            version >= before[&hit_id],
                            "{hit:?}: older than v{}, committed before the search",
                            before[&hit_id]
                        );
                        let expected = cosine(&query, &wide(&hit.text));
                        assert!(
                            (hit.score - expected).abs() < 1e-4,
                            "{hit:?}: scored {} where its text's wide vector scores {expected}",
                            hit.score
                        );
                    }
                    searches.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    let refused_after = Arc::new(AtomicU64::new(0));
    let writer = {
        let (store, committed, refused_after) =
            (store.clone(), committed.clone(), refused_after.clone());
        std::thread::spawn(move || {
            let mut promoted = false;
            for round in 2..40u64 {
                for d in (0..DOCS).filter(|d| (d + round) % 3 == 0) {
                    let id = format!("d{d}");
                    if !promoted {
                        match store.upsert(rewritten(&id, round, false)) {
                            Ok(_) => {
                                committed.lock().expect("lock").insert(id, round);
                                continue;
                            }
                            // The old dimension, after the promotion.
                            Err(WriteError::DimensionMismatch { .. }) => {
                                promoted = true;
                                refused_after.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(other) => panic!("rewrite {id} v{round}: {other:?}"),
                        }
                    }
                    store
                        .upsert(rewritten(&id, round, true))
                        .expect("rewrite with the promoted vectors");
                    committed.lock().expect("lock").insert(id, round);
                }
            }
            promoted
        })
    };
    while searches.load(Ordering::SeqCst) < 100 {
        std::thread::yield_now();
    }
    let replaced = store.drop_space("default").expect("promote");
    assert!(replaced >= DOCS * CHUNKS as u64);
    let after = searches.load(Ordering::SeqCst);
    let promoted = writer.join().expect("writer");
    while searches.load(Ordering::SeqCst) < after + 100 {
        std::thread::yield_now();
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        reader.join().expect("reader");
    }
    println!(
        "{} searches, {after} before the promotion; the writer saw it: {promoted} ({} refused)",
        searches.load(Ordering::SeqCst),
        refused_after.load(Ordering::SeqCst)
    );
    let spaces = store.spaces().expect("spaces");
    assert_eq!(spaces.len(), 1, "{spaces:?}");
    assert!(spaces[0].active && spaces[0].is_complete());
    every_chunk_found_by_its_wide_vector(&store, &SearchOptions::default());
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
}
