//! The shared vocabulary: what both backends take and return (documents, versions,
//! outcomes, counters, hits, stored documents, stats, listings, verify reports, index
//! information). Nothing here names redb or SQL.

pub(crate) mod counters;
pub(crate) mod document;
pub(crate) mod hit;
pub(crate) mod index_info;
pub(crate) mod listing;
pub(crate) mod report;
pub(crate) mod space;
pub(crate) mod stats;
pub(crate) mod stored;
pub(crate) mod version;

pub(crate) use document::*;
pub(crate) use hit::*;
pub(crate) use index_info::*;
pub(crate) use listing::*;
pub(crate) use report::*;
pub(crate) use space::*;
pub(crate) use stats::*;
pub(crate) use stored::*;
pub(crate) use version::*;
