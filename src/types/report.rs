//! What `verify` found: every violation of an invariant the stored rows can show.

use serde::{Deserialize, Serialize};

/// One broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Violation {
    /// The document's source, when the problem belongs to one document.
    pub source: Option<String>,
    /// The document's id, when the problem belongs to one document.
    pub id: Option<String>,
    /// What is wrong.
    pub problem: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.source, &self.id) {
            (Some(source), Some(id)) => write!(f, "{source}/{id}: {}", self.problem),
            _ => f.write_str(&self.problem),
        }
    }
}

/// What `verify` checked and found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerifyReport {
    /// Live documents checked.
    pub documents: u64,
    /// Tombstones checked.
    pub tombstones: u64,
    /// Live chunks checked.
    pub chunks: u64,
    /// Live vectors checked.
    pub vectors: u64,
    /// Every violation found (empty when all invariants hold).
    pub violations: Vec<Violation>,
}

impl VerifyReport {
    /// Whether every invariant holds.
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    pub(crate) fn doc(&mut self, source: &str, id: &str, problem: impl Into<String>) {
        self.violations.push(Violation {
            source: Some(source.to_string()),
            id: Some(id.to_string()),
            problem: problem.into(),
        });
    }

    pub(crate) fn store(&mut self, problem: impl Into<String>) {
        self.violations.push(Violation {
            source: None,
            id: None,
            problem: problem.into(),
        });
    }
}
