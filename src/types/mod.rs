//! The shared vocabulary: what both backends take and return (documents, versions,
//! outcomes, counters, hits, stored documents, stats, listings, verify reports, index
//! information). Nothing here names redb or SQL.

pub(crate) mod counters;
pub(crate) mod document;
pub(crate) mod version;

pub(crate) use document::*;
pub(crate) use version::*;
