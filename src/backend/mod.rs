//! Where a store keeps its rows: the embedded redb file (`redb/`) or, with the `postgres`
//! feature, a PostgreSQL server with pgvector (`postgres/`).
//!
//! Both carry out the same shared policy (`crate::policy`: the guard's decision, validation
//! and canonical JSON, the revision plan, the filter language; `crate::text`: analysis and
//! ranking) on their own storage: a backend reads the stored state, asks the policy, and
//! carries the answer out inside one transaction of its own.

#[cfg(feature = "postgres")]
pub(crate) mod postgres;
pub(crate) mod redb;
