//! Backends other than the embedded redb file.
//!
//! The engine's seam (`engine.rs`: one write transaction per batch, the typed `Apply`
//! operations, the pure `guard::decide_*`) is what a backend reimplements on its own
//! storage: the decisions stay in `guard.rs`, the validation in `prepare.rs`, the filter
//! language in `filter.rs`; a backend only reads the stored state, asks the guard, and
//! carries the answer out inside one transaction of its own.
//!
//! - `postgres/` (the `postgres` feature): PostgreSQL with pgvector, [`PgStore`](crate::PgStore).

pub(crate) mod postgres;
