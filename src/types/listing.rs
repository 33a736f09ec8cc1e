//! A listing: the set of ids a source last declared with `retain`.

use crate::types::Version;
use serde::{Deserialize, Serialize};

/// A listing [`Store::retain`](crate::Store::retain) recorded: everything that existed in
/// `source` at `version`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Listing {
    /// The source.
    pub source: String,
    /// The listing's version.
    pub version: Version,
    /// The ids it lists, sorted.
    pub present: Vec<String>,
}
