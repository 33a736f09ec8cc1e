//! Every table of the file, its key and value types, and the names in the `meta` and
//! `counters` tables.

use redb::TableDefinition;

/// name -> bytes: format marker, schema version, dimension, metric, model.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// name -> u64: the sequences (internal doc id, generation, vector id, ticket high water,
/// commit sequence) and the persisted counters.
pub(crate) const COUNTERS: TableDefinition<&str, u64> = TableDefinition::new("counters");
/// (source, doc id) -> [`DocRow`](super::DocRow).
pub(crate) const DOCS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("docs");
/// internal doc id -> the live revision's encoded [`ChunksRow`](super::ChunksRow) but for the bytes its
/// vectors row carries (`spill.rs`: [`RevisionRows`](super::RevisionRows),
/// [`join_chunks`](super::join_chunks)).
pub(crate) const CHUNKS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_chunks");
/// internal doc id -> [`VectorsRow`](super::VectorsRow) bytes: the live revision's vectors, in position order,
/// then the last bytes of its encoded chunks row.
pub(crate) const VECTORS: TableDefinition<u64, &[u8]> = TableDefinition::new("doc_vectors");
/// commit sequence -> [`ChangelogRow`](super::ChangelogRow): vector ids added and removed by that commit.
pub(crate) const CHANGELOG: TableDefinition<u64, &[u8]> = TableDefinition::new("changelog");
/// skip sequence -> [`SkipRow`](super::SkipRow): the most recent refusals, bounded.
pub(crate) const SKIP_LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("skip_log");
/// (source, listing version value) -> [`ListingRow`](super::ListingRow).
pub(crate) const LISTINGS: TableDefinition<(&str, u64), &[u8]> = TableDefinition::new("listings");
/// (source, listing version value, doc id) -> (): the ids a listing says exist.
pub(crate) const LISTING_MEMBERS: TableDefinition<(&str, u64, &str), ()> =
    TableDefinition::new("listing_members");

/// space name -> [`SpaceRow`](super::SpaceRow): the vector spaces other than the default
/// one (whose vectors are [`VECTORS`]'), schema 7.
pub(crate) const SPACES: TableDefinition<&str, &[u8]> = TableDefinition::new("spaces");
/// (space id, vector id) -> the chunk's vector in that space (little-endian f32s): one row
/// per live chunk with a vector there, under the id of the chunk's default vector, so a
/// space's rows are one key range (walked and dropped together), and a row is exactly as
/// current as the chunk it names (a revision that replaces the chunk removes it).
pub(crate) const SPACE_VECTORS: TableDefinition<(u32, u64), &[u8]> =
    TableDefinition::new("space_vectors");
/// commit sequence -> [`SpaceChangeRow`](super::SpaceChangeRow): the space vectors that
/// commit added (its removals are the changelog's: every removed vector id goes from every
/// space). Kept and trimmed with [`CHANGELOG`].
pub(crate) const SPACE_CHANGELOG: TableDefinition<u64, &[u8]> =
    TableDefinition::new("space_changelog");

/// part number -> bytes: the persisted ANN graph (see `index::persisted`), written whole in
/// one transaction and checksummed, so it is either complete or ignored.
pub(crate) const INDEX_SNAPSHOT: TableDefinition<u32, &[u8]> =
    TableDefinition::new("index_snapshot");

/// part number -> bytes: the persisted index under `Options::memory_budget` (see
/// `index::budget::persist`: centroids, codes, links, ids, stamped with the commit it
/// covers), written whole in one transaction and checksummed, so it is either complete or
/// ignored. Beside [`INDEX_SNAPSHOT`], never instead of it: a store opened with and without
/// a budget keeps both.
pub(crate) const BUDGET_SNAPSHOT: TableDefinition<u32, &[u8]> =
    TableDefinition::new("budget_snapshot");

/// internal document id -> the text row of its live chunks (`text/row.rs`): each chunk's
/// slot, length in terms, and distinct terms with their counts. The full-text index, one row
/// per document like the chunks row, so a revision rewrites one row (an earlier format kept a
/// row per chunk, `text_chunks`: 8 removals and 8 insertions for an 8-chunk revision, the
/// larger part of the index's write cost). Searches invert these rows in memory
/// (the text cache, `backend/redb/derived/text_cache.rs`).
pub(crate) const TEXT_DOCS: TableDefinition<u64, &[u8]> = TableDefinition::new("text_docs");
/// The text index of builds before the one-row-per-document format: vector id -> the
/// chunk's terms, and its totals. A writer's open replaces them with [`TEXT_DOCS`] and the
/// [`text_key`] counters (`text::prepare_on_open`); nothing reads them.
pub(crate) const LEGACY_TEXT_CHUNKS: TableDefinition<u64, &[u8]> =
    TableDefinition::new("text_chunks");
/// See [`LEGACY_TEXT_CHUNKS`].
pub(crate) const LEGACY_TEXT_TOTALS: TableDefinition<&str, u64> =
    TableDefinition::new("text_totals");

/// The text index's totals, in the `counters` table (written in the same leaf as the
/// sequences every transaction writes anyway; a table of their own cost a page and a
/// table-root update per write).
pub(crate) mod text_key {
    /// Live chunks indexed.
    pub(crate) const CHUNKS: &str = "text.chunks";
    /// The sum of their lengths in terms.
    pub(crate) const TERMS: &str = "text.terms";
    /// The commit sequence (`seq.commit`) the text index was last brought up to: a build
    /// that maintains the index writes it in every transaction that changes chunks, so a
    /// file another build wrote since shows a different commit and is re-indexed on open.
    pub(crate) const COMMIT: &str = "text.commit";
    /// The same, in the earlier format's `text_totals` table.
    pub(crate) const LEGACY_COMMIT: &str = "commit";
}

/// Names in the `meta` table.
pub(crate) mod meta_key {
    pub(crate) const FORMAT: &str = "format";
    pub(crate) const SCHEMA_VERSION: &str = "schema_version";
    pub(crate) const DIMENSION: &str = "dimension";
    pub(crate) const METRIC: &str = "metric";
    pub(crate) const MODEL: &str = "model";
    /// The name of the vector space searches use by default (absent: `default`).
    pub(crate) const ACTIVE_SPACE: &str = "active_space";
    /// The name the default space answers to beside `default`: the name of the space a
    /// promotion (`Store::drop_space("default")`) made the default one (absent: none).
    pub(crate) const DEFAULT_SPACE_NAME: &str = "default_space_name";
    /// The commit sequence (u64 LE) of the last promotion, which replaced every vector of
    /// `doc_vectors` under the same ids: an index of the default space covering an earlier
    /// commit is loaded again rather than caught up (absent: never).
    pub(crate) const VECTORS_REPLACED: &str = "vectors_replaced";
    /// The commit sequence the persisted graph snapshot was taken at (u64 LE).
    pub(crate) const INDEX_SNAPSHOT_SEQ: &str = "index_snapshot_seq";
    /// JSON of the `TextOptions` the text index (`text_docs`) was built with; absent: no
    /// text index.
    pub(crate) const TEXT_INDEX: &str = "text_index";
    /// The same, recorded by builds whose text index was `text_chunks` (a writer's open
    /// removes it with those tables).
    pub(crate) const LEGACY_TEXT_ANALYZER: &str = "text_analyzer";
    /// The FSST symbol table chunk texts are compressed with (schema 9, `text_code.rs`);
    /// absent: none trained yet, every text raw.
    pub(crate) const TEXT_CODEC: &str = "text_codec";
}

/// Names of the sequences in the `counters` table.
pub(crate) mod seq_key {
    pub(crate) const NEXT_DOC: &str = "seq.next_doc";
    pub(crate) const NEXT_GENERATION: &str = "seq.next_generation";
    pub(crate) const NEXT_SKIP: &str = "seq.next_skip";
    pub(crate) const COMMIT: &str = "seq.commit";
    pub(crate) const TICKET_HIGH_WATER: &str = "seq.ticket_high_water";
    /// The next vector space id (the default space is 0; ids are never reused).
    pub(crate) const NEXT_SPACE: &str = "seq.next_space";
}
