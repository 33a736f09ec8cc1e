//! The pure rules both backends follow: the guard's decision (`guard`), validation and
//! canonical JSON before any transaction (`prepare`), and what a document's plan would do
//! (`plan`).

pub(crate) mod filter;
pub(crate) mod guard;
pub(crate) mod plan;
pub(crate) mod prepare;
pub(crate) mod revision;
