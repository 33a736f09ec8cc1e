//! Readers racing a re-embed and writers (issue 46's per-space I5): while one thread
//! re-embeds every chunk into a second space and another rewrites documents (each revision
//! bringing its own vector for the space once it is complete), reader threads search the
//! second space (and the default one) the whole time. No search fails, and every hit is a
//! live chunk of the revision the search's own snapshot holds: its text carries the
//! document's version, which is never older than the version the reader saw committed
//! before the search began, and the hit's vector in the space is its own text's (the
//! query is an exact copy of one chunk's vector, so it must come back first whenever that
//! chunk is live with its vector). At the end the space is complete and `verify` is clean.

use super::{cosine, open, revision, version_of, wide, Wide, WIDE};
use ratchetdb::{Chunk, Document, SearchOptions, WriteError};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

const DOCS: u64 = 24;
const CHUNKS: usize = 4;

/// Revision `version` of document `id`, with its vectors in the space when `with_space`.
fn rewritten(id: &str, version: u64, with_space: bool) -> Document {
    let doc = revision(id, version, CHUNKS);
    if !with_space {
        return doc;
    }
    let mut out = Document::new(doc.source.clone(), doc.id.clone(), doc.version);
    for chunk in doc.chunks {
        let v = wide(&chunk.text);
        out = out.with_chunk(Chunk { ..chunk }.with_space_vector("wide", v));
    }
    out
}

#[test]
fn readers_never_see_a_stale_chunk_while_a_reembed_races_writers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(open(dir.path()));
    for d in 0..DOCS {
        store
            .upsert(revision(&format!("d{d}"), 1, CHUNKS))
            .expect("write");
    }
    store.add_space("wide", "wide-test", WIDE).expect("add");
    // The newest version each document is known to be committed at.
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
                    let d = i % DOCS as usize;
                    let id = format!("d{d}");
                    let before = committed.lock().expect("lock").clone();
                    let floor = before[&id];
                    let text = format!("{id} v{floor} c{}", i % CHUNKS);
                    let options = SearchOptions::default().space("wide").exact(i % 2 == 0);
                    let query = wide(&text);
                    let hits = store.search(&query, 5, &options).expect("search the space");
                    for hit in &hits {
                        let (hit_id, version) = version_of(&hit.text);
                        assert_eq!(
                            hit.version.value, version,
                            "{hit:?}: text of another revision"
                        );
                        assert!(
                            version >= before[&hit_id],
                            "{hit:?}: older than v{}, committed before the search",
                            before[&hit_id]
                        );
                        // Its vector in the space is its own text's, not an older one's.
                        let expected = cosine(&query, &wide(&hit.text));
                        assert!(
                            (hit.score - expected).abs() < 1e-4,
                            "{hit:?}: scored {} where its text's vector scores {expected}",
                            hit.score
                        );
                    }
                    let default = store
                        .search(
                            &crate::common::vector(&text),
                            3,
                            &SearchOptions::default().space("default"),
                        )
                        .expect("search the default space");
                    for hit in default {
                        let (hit_id, version) = version_of(&hit.text);
                        assert_eq!(hit.version.value, version);
                        assert!(version >= before[&hit_id], "{hit:?}");
                    }
                    searches.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();

    let writer = {
        let store = store.clone();
        let committed = committed.clone();
        std::thread::spawn(move || {
            for round in 2..12u64 {
                for d in (0..DOCS).filter(|d| (d + round) % 3 == 0) {
                    let id = format!("d{d}");
                    // Without the space's vectors first; a complete space refuses that.
                    let result = match store.upsert(rewritten(&id, round, false)) {
                        Err(WriteError::MissingSpaceVector { .. }) => {
                            store.upsert(rewritten(&id, round, true))
                        }
                        other => other,
                    };
                    result.expect("rewrite");
                    committed.lock().expect("lock").insert(id, round);
                }
            }
        })
    };
    let mut outcome = store
        .reembed("wide", &Wide, 5, &mut |_| {})
        .expect("reembed");
    writer.join().expect("writer");
    // Whatever the writer's last rounds left without a vector.
    let last = store
        .reembed("wide", &Wide, 5, &mut |_| {})
        .expect("reembed");
    outcome.writes.written += last.writes.written;
    assert!(last.complete);
    store.activate("wide").expect("activate");
    while searches.load(Ordering::SeqCst) < 200 {
        std::thread::yield_now();
    }
    done.store(true, Ordering::SeqCst);
    for reader in readers {
        reader.join().expect("reader");
    }
    println!(
        "{} searches; re-embed wrote {}, {} superseded",
        searches.load(Ordering::SeqCst),
        outcome.writes.written,
        outcome.writes.superseded
    );
    let report = store.verify().expect("verify");
    assert!(report.is_ok(), "{:#?}", report.violations);
    let space = &store.spaces().expect("spaces")[1];
    assert!(space.is_complete() && space.active, "{space:?}");
}
