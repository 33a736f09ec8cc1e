//! PostgreSQL's `text` cannot hold a NUL character: on that backend a chunk text holding one
//! is an input error naming `chunks[0].text`, refused before anything is written (the
//! embedded file stores such text as it is; docs/postgres.md says so).

use crate::pg;
use ratchetdb::{Chunk, Document, Options, Version, WriteError};

#[test]
fn a_nul_in_chunk_text_is_refused_on_postgres() {
    let Some((store, url)) = pg::fresh("nul_text", Options::default()) else {
        return;
    };
    let before = store.documents(true).expect("export");
    let counters = store.stats().expect("stats").counters;
    let refused = store
        .upsert(
            Document::new("s", "b", Version::number(1))
                .with_chunk(Chunk::new("nul\0here", vec![1.0, 0.0, 0.0])),
        )
        .expect_err("a NUL in the text is refused");
    assert!(
        matches!(&refused, WriteError::Input(e) if e.field == "chunks[0].text"),
        "{refused:?}"
    );
    assert_eq!(store.documents(true).expect("export"), before);
    assert_eq!(store.stats().expect("stats").counters, counters);
    drop(store);
    pg::drop_schema(&url, &pg::schema("nul_text"));
}
