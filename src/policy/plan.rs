//! Planning a write before any embedding is paid for: what the guard would decide now,
//! and which chunks already have a vector in the stored revision.

use crate::error::{InputError, ReadError, WriteError};
use crate::options::{Metric, Options};
use crate::policy::guard::{self, ContentHash, Stored, UpsertDecision};
use crate::policy::prepare::{self, PreparedDoc};
use crate::types::Document;
use crate::types::SkipReason;
use crate::types::Version;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Before any embedding is paid for: what a write of this revision would do, and which
/// chunks need a vector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// What the guard would decide now (it decides again at write time; a plan is advice).
    pub action: PlannedAction,
    /// Positions whose text already has a vector in the stored revision: send these chunks
    /// without a vector and the store reuses it.
    pub reusable: Vec<usize>,
    /// Positions that need embedding (empty unless `action` is `Write`).
    pub to_embed: Vec<usize>,
}

/// The guard's decision as a plan reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
#[non_exhaustive]
pub enum PlannedAction {
    /// The revision would be written.
    Write,
    /// The content is identical; only the version would be raised (the write's outcome would
    /// be `Outcome::Unchanged`). Nothing to embed.
    BumpVersion,
    /// The revision would be refused. Nothing to embed.
    Skip {
        /// Why.
        reason: SkipReason,
        /// What is stored.
        stored_version: Version,
    },
}

/// What the stored state says about a document, for a plan: the guard's stored state (or
/// a listing's tombstone), and the text hashes that already have a vector.
pub(crate) type PlanState = (Option<Stored>, HashSet<ContentHash>);

/// A plan from any backend's stored state: the document is validated here (as a write
/// would, without vectors), `state` reads what is stored, and the guard decides.
pub(crate) fn plan_with(
    doc: &Document,
    metric: Metric,
    dimension: Option<usize>,
    options: &Options,
    state: impl FnOnce(&PreparedDoc) -> Result<PlanState, ReadError>,
) -> Result<Plan, ReadError> {
    // Before the clone below: cloning metadata nested deeper than the stack overflows it.
    prepare::check_depths(doc, &options.limits)?;
    let draft = Document {
        source: doc.source.clone(),
        id: doc.id.clone(),
        version: doc.version,
        meta: doc.meta.clone(),
        chunks: doc
            .chunks
            .iter()
            .map(|c| crate::types::Chunk {
                text: c.text.clone(),
                vector: None,
                meta: c.meta.clone(),
                spaces: Default::default(),
            })
            .collect(),
    };
    let prepared = prepare::prepare_document(draft, metric, dimension, &options.limits).map_err(
        |e| match e {
            WriteError::Input(input) => ReadError::Input(input),
            other => ReadError::Input(InputError::new("document", other.to_string())),
        },
    )?;
    let (stored, known_texts) = state(&prepared)?;
    let decision = guard::decide_upsert(
        stored.as_ref(),
        prepared.version,
        guard::content_key(&prepared.content_hash),
        options.conflict_policy,
    );
    let action = match decision {
        UpsertDecision::Write(_) => PlannedAction::Write,
        UpsertDecision::Unchanged => PlannedAction::BumpVersion,
        UpsertDecision::Skip { reason, .. } => PlannedAction::Skip {
            reason,
            stored_version: stored.map(|s| s.version).unwrap_or(prepared.version),
        },
        UpsertDecision::KindMismatch { stored } => {
            return Err(ReadError::Input(InputError::new(
                "version",
                format!(
                    "is a {} version; the document is versioned by {stored}",
                    prepared.version.kind
                ),
            )))
        }
    };
    let (mut reusable, mut to_embed) = (Vec::new(), Vec::new());
    for (position, chunk) in prepared.chunks.iter().enumerate() {
        if known_texts.contains(&chunk.text_hash) {
            reusable.push(position);
        } else if action == PlannedAction::Write {
            to_embed.push(position);
        }
    }
    Ok(Plan {
        action,
        reusable,
        to_embed,
    })
}
