//! A revision on PostgreSQL decides where each chunk's vector comes from as the embedded
//! store does (one rule, `policy::revision`): the same revisions applied to a redb file and
//! to a PostgreSQL store give the same counts, keep the same old vector (by its position
//! in the old revision) for each new position, and store bit-identical vectors. Among the
//! revisions: chunks kept in place, moved, dropped, repeated (a copy), sent with another
//! vector, and sent with a vector equal to the stored one as floats but not as bits
//! (`-0.0` for `0.0`), which both stores write as a new vector.

use crate::pg;
use ratchetdb::{Chunk, Document, Metric, Options, Outcome, Store, Version, WriteError};

/// Per new position: which old position's vector id it kept (`None`: a new id), and its
/// vector's bits.
type Placement = Vec<(Option<usize>, Vec<u32>)>;

fn placement(store: &Store, old_ids: &[u64]) -> (Placement, Vec<u64>) {
    let doc = store
        .documents(true)
        .expect("documents")
        .into_iter()
        .find(|d| d.id == "d")
        .expect("the document");
    let ids: Vec<u64> = doc.chunks.iter().map(|c| c.vector_id).collect();
    let placement = doc
        .chunks
        .iter()
        .map(|c| {
            let kept = old_ids.iter().position(|id| *id == c.vector_id);
            let bits = c
                .vector
                .as_ref()
                .expect("the vector")
                .iter()
                .map(|x| x.to_bits())
                .collect();
            (kept, bits)
        })
        .collect();
    (placement, ids)
}

fn counts(outcome: &Outcome) -> Option<(u64, u64, u64)> {
    match outcome {
        Outcome::Written {
            chunks_written,
            chunks_reused,
            chunks_removed,
            ..
        } => Some((*chunks_written, *chunks_reused, *chunks_removed)),
        _ => None,
    }
}

fn revision(version: u64, chunks: &[(&str, Option<[f32; 2]>)]) -> Document {
    // Each revision's metadata differs, so none is the stored content unchanged.
    let mut doc = Document::new("s", "d", Version::number(version))
        .with_meta(serde_json::json!({ "revision": version }));
    for (text, vector) in chunks {
        doc = doc.with_chunk(match vector {
            Some(vector) => Chunk::new(*text, vector.to_vec()),
            None => Chunk::without_vector(*text),
        });
    }
    doc
}

#[test]
fn revisions_on_postgres_reuse_vectors_as_the_embedded_store() {
    let Some(url) = pg::fresh_url("revision_reuse") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    // L2 keeps vectors as given (cosine would normalise them).
    let options = Options::default().dimension(2).metric(Metric::L2);
    let file = Store::open(dir.path().join("store.redb"), options.clone()).expect("open file");
    let server = Store::open(&url, options).expect("open PostgreSQL");
    let revisions = [
        revision(
            1,
            &[
                ("a", Some([0.0, 1.0])),
                ("b", Some([1.0, 1.0])),
                ("c", Some([2.0, 1.0])),
            ],
        ),
        // In place.
        revision(2, &[("a", None), ("b", None), ("c", Some([2.0, 1.0]))]),
        // "c" moves to the front, "b" goes, "a" is repeated (a copy), "d" is new.
        revision(
            3,
            &[
                ("c", None),
                ("a", None),
                ("a", None),
                ("d", Some([3.0, 1.0])),
            ],
        ),
        // "c" with another vector, "a" with -0.0 for its stored 0.0, "d" unchanged.
        revision(
            4,
            &[
                ("c", Some([9.0, 9.0])),
                ("a", Some([-0.0, 1.0])),
                ("d", Some([3.0, 1.0])),
            ],
        ),
    ];
    let mut ids = (Vec::new(), Vec::new());
    let mut last = Vec::new();
    for (n, doc) in revisions.into_iter().enumerate() {
        let on_file = file.upsert(doc.clone()).expect("upsert on the file");
        let on_server = server.upsert(doc).expect("upsert on PostgreSQL");
        assert!(counts(&on_file).is_some(), "revision {n}: {on_file:?}");
        assert_eq!(counts(&on_file), counts(&on_server), "revision {n}");
        let (file_placement, file_ids) = placement(&file, &ids.0);
        let (server_placement, server_ids) = placement(&server, &ids.1);
        assert_eq!(file_placement, server_placement, "revision {n}");
        ids = (file_ids, server_ids);
        last = server_placement;
    }
    // The -0.0 was written as a new vector with its own bits on both.
    assert_eq!(last[1], (None, vec![(-0.0f32).to_bits(), 1.0f32.to_bits()]));
    // A chunk without a vector and no stored one for its text is refused on both.
    let orphan = revision(5, &[("d", None), ("nowhere", None)]);
    assert!(matches!(
        file.upsert(orphan.clone()),
        Err(WriteError::MissingVector { position: 1 })
    ));
    assert!(matches!(
        server.upsert(orphan),
        Err(WriteError::MissingVector { position: 1 })
    ));
    pg::assert_store_verified(&server);
}
