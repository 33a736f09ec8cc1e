//! The reference model of the guard, written apart from `guard` and `write`, and reading a store
//! back in its terms.

use crate::store::Store;
use crate::types::SkipReason;
use crate::types::{Op, OpOutcome, Outcome, RetainOutcome};
use crate::types::{Version, VersionKind};
use std::collections::{BTreeMap, BTreeSet};

/// A document row as the model (and, read back, the store) holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelRow {
    /// The version value (the model uses `Number` versions only).
    pub version: u64,
    /// A tombstone.
    pub deleted: bool,
    /// Canonical JSON of the document metadata and the chunks' texts and metadata (what the
    /// content hash covers); `null` for a tombstone.
    pub content: String,
    /// The live revision's chunk count; 0 for a tombstone.
    pub chunks: u64,
}

/// What the model says an operation does, in the detail the store reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModelOutcome {
    /// Written (new, newer, or brought back from a tombstone): the revision's chunk count, and
    /// the chunks of the previous revision beyond it (a shrinking revision's surplus).
    Written {
        /// Chunks the revision has (written or reused).
        chunks: u64,
        /// Chunks of the previous live revision that this one no longer has.
        chunks_removed: u64,
    },
    /// Same content at a newer version: the version was raised to this.
    Unchanged {
        /// The new version.
        version: u64,
    },
    /// A tombstone written or raised, and the live chunks it removed.
    Deleted {
        /// Chunks the deleted revision had.
        chunks_removed: u64,
    },
    /// Refused, with the versions compared.
    Skipped {
        /// Why.
        reason: SkipReason,
        /// What the guard compared against (a listing's version for an id it omitted).
        stored: u64,
        /// The incoming version.
        incoming: u64,
    },
    /// A listing: refused as a whole, or recorded with what it removed.
    Retained(RetainOutcome),
}

impl ModelOutcome {
    /// The store's answer in the model's terms.
    pub fn of(outcome: &OpOutcome) -> ModelOutcome {
        match outcome {
            OpOutcome::Document(Outcome::Written {
                chunks_written,
                chunks_reused,
                chunks_removed,
                ..
            }) => ModelOutcome::Written {
                chunks: chunks_written + chunks_reused,
                chunks_removed: *chunks_removed,
            },
            OpOutcome::Document(Outcome::Unchanged { version }) => ModelOutcome::Unchanged {
                version: version.value,
            },
            OpOutcome::Document(Outcome::Deleted { chunks_removed }) => ModelOutcome::Deleted {
                chunks_removed: *chunks_removed,
            },
            OpOutcome::Document(Outcome::Skipped {
                reason,
                stored_version,
                incoming_version,
            }) => ModelOutcome::Skipped {
                reason: *reason,
                stored: stored_version.value,
                incoming: incoming_version.value,
            },
            OpOutcome::Retain(r) => ModelOutcome::Retained(r.clone()),
        }
    }
}

/// The counters the model predicts, named as in [`Counters`](crate::Counters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelCounters {
    /// New documents written.
    pub written_new: u64,
    /// Newer revisions written.
    pub written_newer: u64,
    /// Newer versions with the same content (version raised, no chunk touched).
    pub unchanged: u64,
    /// Tombstones written or raised.
    pub deleted: u64,
    /// Deletes that met a live revision of the same version (the delete wins).
    pub deletes_over_equal_version: u64,
    /// Refused as older.
    pub skipped_older: u64,
    /// Refused as a redelivery.
    pub skipped_duplicate: u64,
    /// Refused as an equal version with other content.
    pub skipped_conflict: u64,
    /// Refused as not newer than a tombstone.
    pub skipped_tombstoned: u64,
    /// Refusals at a version equal to the stored one.
    pub skipped_equal_version: u64,
    /// Listings recorded.
    pub retain_listings: u64,
    /// Live documents listings removed.
    pub retain_documents_removed: u64,
}

impl ModelCounters {
    /// The store's counters in the model's terms.
    pub fn of(c: &crate::Counters) -> ModelCounters {
        ModelCounters {
            written_new: c.written_new,
            written_newer: c.written_newer,
            unchanged: c.unchanged,
            deleted: c.deleted,
            deletes_over_equal_version: c.deletes_over_equal_version,
            skipped_older: c.skipped_older,
            skipped_duplicate: c.skipped_duplicate,
            skipped_conflict: c.skipped_conflict,
            skipped_tombstoned: c.skipped_tombstoned,
            skipped_equal_version: c.skipped_equal_version,
            retain_listings: c.retain_listings,
            retain_documents_removed: c.retain_documents_removed,
        }
    }
}

/// The content of a revision as the model and the comparison see it.
pub fn content_of(meta: &serde_json::Value, chunks: &[(String, serde_json::Value)]) -> String {
    let chunks: Vec<serde_json::Value> = chunks
        .iter()
        .map(|(text, meta)| serde_json::json!({ "text": text, "meta": meta }))
        .collect();
    crate::policy::prepare::canonical_json(&serde_json::json!({ "meta": meta, "chunks": chunks }))
}

/// The guard as a plain, sequential reference: document rows, recorded listings and the
/// counters, `Number` versions, [`ConflictPolicy::Refuse`](crate::ConflictPolicy::Refuse).
/// Written apart from `guard` and `write` on purpose, from the rules in `docs/design.md`
/// (F1–F12); the one model of the fuzz targets and `tests/concurrency/model_based_schedules.rs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Model {
    /// `(source, id)` -> row.
    pub rows: BTreeMap<(String, String), ModelRow>,
    /// `(source, version)` -> the ids the listing says exist.
    pub listings: BTreeMap<(String, u64), BTreeSet<String>>,
    /// What the store's counters should say.
    pub counters: ModelCounters,
}

impl Model {
    /// An empty store.
    pub fn new() -> Model {
        Model::default()
    }

    /// The row, or the tombstone of the highest listing not older than `version` that omits
    /// the id (a listing deletes ids never seen).
    fn stored(&self, source: &str, id: &str, version: u64) -> Option<ModelRow> {
        if let Some(row) = self.rows.get(&(source.to_string(), id.to_string())) {
            return Some(row.clone());
        }
        self.listings
            .range((source.to_string(), version)..=(source.to_string(), u64::MAX))
            .rev()
            .find(|(_, members)| !members.contains(id))
            .map(|((_, listing), _)| ModelRow {
                version: *listing,
                deleted: true,
                content: "null".to_string(),
                chunks: 0,
            })
    }

    fn set(&mut self, source: &str, id: &str, row: ModelRow) {
        self.rows.insert((source.to_string(), id.to_string()), row);
    }

    fn tombstone(&mut self, source: &str, id: &str, version: u64) {
        let row = ModelRow {
            version,
            deleted: true,
            content: "null".to_string(),
            chunks: 0,
        };
        self.set(source, id, row);
    }

    fn skip(&mut self, reason: SkipReason, stored: u64, incoming: u64) -> ModelOutcome {
        let counters = &mut self.counters;
        match reason {
            SkipReason::Older => counters.skipped_older += 1,
            SkipReason::Duplicate => counters.skipped_duplicate += 1,
            SkipReason::Conflict => counters.skipped_conflict += 1,
            SkipReason::Tombstoned => counters.skipped_tombstoned += 1,
        }
        if stored == incoming {
            counters.skipped_equal_version += 1;
        }
        ModelOutcome::Skipped {
            reason,
            stored,
            incoming,
        }
    }

    /// Applies one operation; `Err` for what the model does not cover (other version kinds).
    pub fn apply(&mut self, op: &Op) -> Result<ModelOutcome, String> {
        let number = |v: &Version| {
            if v.kind == VersionKind::Number {
                Ok(v.value)
            } else {
                Err(format!("the model covers Number versions only, not {v}"))
            }
        };
        match op {
            Op::Upsert(doc) => {
                let version = number(&doc.version)?;
                let chunks: Vec<(String, serde_json::Value)> = doc
                    .chunks
                    .iter()
                    .map(|c| (c.text.clone(), c.meta.clone()))
                    .collect();
                let row = ModelRow {
                    version,
                    deleted: false,
                    content: content_of(&doc.meta, &chunks),
                    chunks: chunks.len() as u64,
                };
                Ok(self.upsert(&doc.source, &doc.id, row))
            }
            Op::Delete {
                source,
                id,
                version,
            } => Ok(self.delete(source, id, number(version)?)),
            Op::Retain {
                source,
                present,
                version,
            } => Ok(self.retain(source, present, number(version)?)),
        }
    }

    fn upsert(&mut self, source: &str, id: &str, row: ModelRow) -> ModelOutcome {
        let (version, chunks) = (row.version, row.chunks);
        let chunks_removed = match self.stored(source, id, version) {
            None => {
                self.counters.written_new += 1;
                0
            }
            Some(stored) if stored.deleted && version > stored.version => {
                self.counters.written_new += 1;
                0
            }
            Some(stored) if stored.deleted => {
                return self.skip(SkipReason::Tombstoned, stored.version, version)
            }
            Some(stored) if version > stored.version && row.content == stored.content => {
                self.set(source, id, row);
                self.counters.unchanged += 1;
                return ModelOutcome::Unchanged { version };
            }
            Some(stored) if version > stored.version => {
                self.counters.written_newer += 1;
                stored.chunks.saturating_sub(chunks)
            }
            Some(stored) if version == stored.version => {
                let reason = if row.content == stored.content {
                    SkipReason::Duplicate
                } else {
                    SkipReason::Conflict
                };
                return self.skip(reason, stored.version, version);
            }
            Some(stored) => return self.skip(SkipReason::Older, stored.version, version),
        };
        self.set(source, id, row);
        ModelOutcome::Written {
            chunks,
            chunks_removed,
        }
    }

    fn delete(&mut self, source: &str, id: &str, version: u64) -> ModelOutcome {
        let (chunks_removed, over_equal_version) = match self.stored(source, id, version) {
            None => (0, false),
            // A delete at a version not older than a live revision wins, equal included.
            Some(stored) if !stored.deleted && version >= stored.version => {
                (stored.chunks, version == stored.version)
            }
            Some(stored) if version > stored.version => (0, false),
            Some(stored) if version == stored.version => {
                return self.skip(SkipReason::Duplicate, stored.version, version)
            }
            Some(stored) => return self.skip(SkipReason::Older, stored.version, version),
        };
        self.tombstone(source, id, version);
        self.counters.deleted += 1;
        if over_equal_version {
            self.counters.deletes_over_equal_version += 1;
        }
        ModelOutcome::Deleted { chunks_removed }
    }

    fn retain(&mut self, source: &str, present: &[String], version: u64) -> ModelOutcome {
        let members: BTreeSet<String> = present.iter().cloned().collect();
        if let Some(existing) = self.listings.get(&(source.to_string(), version)) {
            let reason = if *existing == members {
                SkipReason::Duplicate
            } else {
                SkipReason::Conflict
            };
            self.skip(reason, version, version);
            return ModelOutcome::Retained(RetainOutcome {
                skipped: Some(reason),
                ..RetainOutcome::default()
            });
        }
        let mut outcome = RetainOutcome::default();
        let mut omitted = Vec::new();
        for ((row_source, id), row) in &self.rows {
            if row_source != source || members.contains(id) {
                continue;
            }
            if !row.deleted && version >= row.version {
                outcome.documents_removed += 1;
                outcome.chunks_removed += row.chunks;
                omitted.push(id.clone());
            } else if row.deleted && version > row.version {
                omitted.push(id.clone());
            } else if !row.deleted {
                outcome.newer_kept += 1;
            }
        }
        for id in omitted {
            self.tombstone(source, &id, version);
        }
        self.listings.insert((source.to_string(), version), members);
        self.counters.retain_listings += 1;
        self.counters.retain_documents_removed += outcome.documents_removed;
        ModelOutcome::Retained(outcome)
    }

    /// The live documents: `(source, id)` -> `(version, content)`.
    pub fn live(&self) -> BTreeMap<(String, String), (u64, String)> {
        self.rows
            .iter()
            .filter(|(_, row)| !row.deleted)
            .map(|(key, row)| (key.clone(), (row.version, row.content.clone())))
            .collect()
    }
}

/// Every document row of the store as the model represents it, read from one snapshot.
pub fn store_rows(store: &Store) -> Result<BTreeMap<(String, String), ModelRow>, String> {
    let snapshot = store.snapshot().map_err(|e| format!("snapshot: {e}"))?;
    let mut rows = BTreeMap::new();
    for doc in snapshot
        .documents(false)
        .map_err(|e| format!("documents: {e}"))?
    {
        let doc = doc.map_err(|e| format!("reading a document: {e}"))?;
        let content = if doc.deleted {
            "null".to_string()
        } else {
            let chunks: Vec<(String, serde_json::Value)> = doc
                .chunks
                .iter()
                .map(|c| (c.text.clone(), c.meta.clone()))
                .collect();
            content_of(&doc.meta, &chunks)
        };
        rows.insert(
            (doc.source, doc.id),
            ModelRow {
                version: doc.version.value,
                deleted: doc.deleted,
                content,
                chunks: if doc.deleted {
                    0
                } else {
                    doc.chunks.len() as u64
                },
            },
        );
    }
    Ok(rows)
}

/// `Ok` when `verify()` finds nothing, else the violations.
pub fn verify_clean(store: &Store) -> Result<(), String> {
    let report = store.verify().map_err(|e| format!("verify failed: {e}"))?;
    if report.is_ok() {
        Ok(())
    } else {
        let list: Vec<String> = report.violations.iter().map(|v| v.to_string()).collect();
        Err(format!("verify found violations: {list:?}"))
    }
}
