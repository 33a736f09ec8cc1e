//! Text analysis and ranking, shared by both backends: text to terms (Unicode words, case
//! folding, optional stemming and stop words per language: `analyze`), BM25's parameters,
//! rank fusion of a vector and a text ranking, and a text query's bounds (`rank`). Where
//! the index lives is a backend's business (`backend/redb/text/`, or PostgreSQL's tables).

mod analyze;
mod rank;

pub use crate::options::{TextLanguage, TextOptions};
pub(crate) use analyze::Analyzer;
#[cfg(feature = "postgres")]
pub(crate) use analyze::Terms;
pub(crate) use analyze::WriteBuffers;
pub(crate) use rank::{check_query, fuse, fusion_depth};
pub use rank::{Bm25, Fusion};
