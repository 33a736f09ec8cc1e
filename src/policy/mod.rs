//! The pure rules both backends follow, case-tested without storage: the guard's decision
//! (`guard`), validation and canonical JSON before any transaction (`prepare`), where each
//! position of a new revision takes its vector from (`revision`), the filter language
//! (`filter`), what a plan reports (`plan`), what a restored history may hold
//! (`history`), and the vector spaces' rules (`space`). Nothing here names redb or SQL.

pub(crate) mod filter;
pub(crate) mod guard;
pub(crate) mod history;
pub(crate) mod plan;
pub(crate) mod prepare;
pub(crate) mod revision;
pub(crate) mod space;
