//! `Store::plan` answers, before any embedding is paid for, whether a revision would be
//! written and which chunk positions already have a vector for the same text; a pipeline
//! embeds only the rest and sends the others without a vector. The guard decides again at
//! write time: a plan is advice, and the write is still checked.

use crate::common;

use common::{assert_verified, open};
use ratchetdb::{
    Chunk, Document, Outcome, Plan, PlannedAction, SkipReason, Store, Version, WriteError,
};

/// A deterministic, non-zero vector for a text (the "embedding model").
fn embed(text: &str) -> Vec<f32> {
    common::vector(text)
}

/// A draft: texts only, no vectors yet.
fn draft(version: u64, texts: &[&str]) -> Document {
    let mut doc = Document::new("notes", "meeting", Version::number(version));
    for text in texts {
        doc = doc.with_chunk(Chunk::without_vector(*text));
    }
    doc
}

/// Embeds exactly the positions the plan asks for.
fn embed_planned(mut doc: Document, plan: &Plan) -> Document {
    for &position in &plan.to_embed {
        let text = doc.chunks[position].text.clone();
        doc.chunks[position].vector = Some(embed(&text));
    }
    doc
}

fn stored(store: &Store) -> ratchetdb::StoredDocument {
    common::stored_with_vectors(store, "notes", "meeting")
}

const V1: [&str; 5] = ["agenda", "budget", "hiring", "roadmap", "next steps"];
const V2: [&str; 5] = [
    "agenda",
    "budget: approved",
    "hiring",
    "roadmap v2",
    "next steps",
];

#[test]
fn plan_says_what_to_embed_and_the_write_reuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());

    // A new document: everything needs embedding.
    let plan = store.plan(&draft(1, &V1)).unwrap();
    assert_eq!(
        plan,
        Plan {
            action: PlannedAction::Write,
            reusable: vec![],
            to_embed: vec![0, 1, 2, 3, 4],
        }
    );
    let outcome = store.upsert(embed_planned(draft(1, &V1), &plan)).unwrap();
    assert!(matches!(
        outcome,
        Outcome::Written {
            chunks_written: 5,
            chunks_reused: 0,
            ..
        }
    ));
    assert_verified(&store);
    let first = stored(&store);

    // Revision 2 changes positions 1 and 3.
    let plan = store.plan(&draft(2, &V2)).unwrap();
    assert_eq!(
        plan,
        Plan {
            action: PlannedAction::Write,
            reusable: vec![0, 2, 4],
            to_embed: vec![1, 3],
        }
    );
    let before = store.stats().unwrap().counters;
    let outcome = store.upsert(embed_planned(draft(2, &V2), &plan)).unwrap();
    let Outcome::Written { generation, .. } = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        outcome,
        Outcome::Written {
            generation,
            chunks_written: 2,
            chunks_reused: 3,
            chunks_removed: 0,
        }
    );
    let mut expected = before;
    expected.written_newer += 1;
    expected.chunks_written += 2;
    expected.chunks_reused += 3;
    expected.commits += 1;
    assert_eq!(store.stats().unwrap().counters, expected);
    assert_verified(&store);
    let second = stored(&store);
    let texts: Vec<&str> = second.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, V2);
    assert!(second.chunks.iter().all(|c| c.generation == generation));
    for position in [0, 2, 4] {
        assert_eq!(
            second.chunks[position].vector_id,
            first.chunks[position].vector_id
        );
        assert_eq!(
            second.chunks[position].vector,
            first.chunks[position].vector
        );
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.chunks, stats.vectors), (5, 5));

    // A stale revision: nothing to embed, and the reason.
    let plan = store.plan(&draft(1, &V1)).unwrap();
    assert_eq!(
        plan.action,
        PlannedAction::Skip {
            reason: SkipReason::Older,
            stored_version: Version::number(2),
        }
    );
    assert!(plan.to_embed.is_empty());
    // The same content at a newer version: only the version moves.
    let plan = store.plan(&draft(3, &V2)).unwrap();
    assert_eq!(plan.action, PlannedAction::BumpVersion);
    assert!(plan.to_embed.is_empty());
    // A redelivery of the stored revision.
    let plan = store.plan(&draft(2, &V2)).unwrap();
    assert_eq!(
        plan.action,
        PlannedAction::Skip {
            reason: SkipReason::Duplicate,
            stored_version: Version::number(2),
        }
    );
    // Planning writes nothing.
    assert_eq!(store.stats().unwrap(), stats);
}

#[test]
fn a_chunk_inserted_at_the_front_still_reuses_by_text() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    let plan = store.plan(&draft(1, &V1)).unwrap();
    store.upsert(embed_planned(draft(1, &V1), &plan)).unwrap();
    let first = stored(&store);

    let shifted = [
        "summary",
        "agenda",
        "budget",
        "hiring",
        "roadmap",
        "next steps",
    ];
    let plan = store.plan(&draft(2, &shifted)).unwrap();
    assert_eq!(
        plan,
        Plan {
            action: PlannedAction::Write,
            reusable: vec![1, 2, 3, 4, 5],
            to_embed: vec![0],
        }
    );
    let outcome = store
        .upsert(embed_planned(draft(2, &shifted), &plan))
        .unwrap();
    assert!(
        matches!(
            outcome,
            Outcome::Written {
                chunks_written: 1,
                chunks_reused: 5,
                chunks_removed: 0,
                ..
            }
        ),
        "{outcome:?}"
    );
    assert_verified(&store);
    let second = stored(&store);
    let texts: Vec<&str> = second.chunks.iter().map(|c| c.text.as_str()).collect();
    assert_eq!(texts, shifted);
    // Each moved text kept its vector row (id and values), now at its new position.
    for old_position in 0..5 {
        let moved = &second.chunks[old_position + 1];
        assert_eq!(moved.vector_id, first.chunks[old_position].vector_id);
        assert_eq!(moved.vector, first.chunks[old_position].vector);
        assert_eq!(moved.generation, second.generation);
    }
    let stats = store.stats().unwrap();
    assert_eq!((stats.chunks, stats.vectors), (6, 6));
}

#[test]
fn a_plan_is_advice_the_write_is_checked_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path());
    store
        .upsert(embed_planned(
            draft(1, &V1),
            &store.plan(&draft(1, &V1)).unwrap(),
        ))
        .unwrap();

    // Planned against revision 1; revision 2 lands before the write, and drops "hiring".
    let plan = store.plan(&draft(3, &V1)).unwrap();
    assert_eq!(plan.reusable, vec![0, 1, 2, 3, 4]);
    let v2 = ["agenda", "budget", "roadmap", "next steps"];
    store
        .upsert(embed_planned(
            draft(2, &v2),
            &store.plan(&draft(2, &v2)).unwrap(),
        ))
        .unwrap();
    let before = store.stats().unwrap();
    let error = store
        .upsert(embed_planned(draft(3, &V1), &plan))
        .unwrap_err();
    assert!(
        matches!(error, WriteError::MissingVector { position: 2 }),
        "{error:?}"
    );
    assert_eq!(store.stats().unwrap(), before);
    assert_verified(&store);
    // Planned again, it asks for exactly that chunk.
    let plan = store.plan(&draft(3, &V1)).unwrap();
    assert_eq!(plan.to_embed, vec![2]);
    assert!(matches!(
        store.upsert(embed_planned(draft(3, &V1), &plan)).unwrap(),
        Outcome::Written {
            chunks_written: 1,
            chunks_reused: 4,
            ..
        }
    ));
    assert_verified(&store);
}
