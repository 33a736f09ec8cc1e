//! The file format, in one place: every table and key (`tables`), the row codecs (`rows`),
//! a live revision's vectors row and the chunks-row bytes it carries (`spill`), and the
//! conversions of files of schemas 1 to 8 (`migrate`), the coded layout of a vectors
//! row's floats (`vector_code`) and the compressed chunk texts (`text_code`).
//!
//! Rows are encoded with bincode (standard configuration, serde) except vectors, which are raw
//! little-endian bytes behind a small header, or (schema 8) coded losslessly where that
//! saves pages (`vector_code.rs`). Every decode returns a
//! [`Corruption`](crate::error::Corruption) on bad bytes; nothing here panics on the file's
//! contents.
//!
//! A document's revision is three rows whatever its chunk count: its [`DocRow`], one
//! [`ChunksRow`] with every chunk's text in position order, and one vectors row with every
//! chunk's vector ([`VectorsRow`]). Fewer, larger rows are what redb writes fastest (the
//! `group_commit` bench measures the floor both ways). A vector's id is its document's
//! internal id and a per-document slot ([`vector_id`]): a slot is never reused within a
//! document, so an id names one vector for the life of the file, and the id alone says which
//! row holds it.
//!
//! redb gives a value larger than a page a run of pages of its own, a power of two long, so
//! a 12 KB vectors row takes 16 KiB. The encoded chunks row fills that slack (schema 3): how
//! many of its bytes ride at the end of the vectors row, and how the two rows are split and
//! joined, is known to `spill.rs` alone; every reader and writer goes through
//! [`RevisionRows`] and [`join_chunks`]. A document of eight 384-d chunks and 8 KB of text
//! then writes 24 KiB of rows instead of 32 KiB; a scan of the vectors still reads one row
//! per document.

pub(crate) mod migrate;
mod rows;
mod spill;
mod tables;
mod text_code;
mod vector_code;

pub(crate) use rows::*;
pub(crate) use spill::*;
pub(crate) use tables::*;
pub(crate) use text_code::{decode_stored, TextCodec, TRAIN_BYTES};

/// The schema version this build writes and the newest it reads.
pub(crate) const SCHEMA_VERSION: u32 = 10;

/// The oldest schema whose files this build reads without converting them (a read-only
/// open reads them as they are; a writable one stamps them [`SCHEMA_VERSION`]): schema 8
/// only adds the coded layout of a vectors row, which schema 7's raw rows are not, and
/// schema 9 compressed chunk texts, which schema 8's raw texts are not, and schema 10 the
/// text index's terms, which schema 9's raw terms are not.
pub(crate) const READ_AS_IS_FROM: u32 = 7;

/// The marker stored under `meta["format"]`.
pub(crate) const FORMAT_MAGIC: &[u8] = b"ratchetdb";
