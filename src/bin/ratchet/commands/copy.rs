//! `ratchet copy --from A --to B`: moves every document (versions, tombstones, metadata,
//! chunks and their vectors) between a redb file and a PostgreSQL store
//! (`postgres://...`), either way, through the guarded write path, then runs `verify` on
//! both ends and checks that the destination holds every document of the source at the
//! same version with the same content hash. Built with the `postgres` feature.

use crate::output::Output;
use crate::{exit, open_failure, Failure};
use clap::Args;
use ratchetdb::{Chunk, Document, Op, Options, PgStore, Store, StoredDocument, VerifyReport};
use std::collections::BTreeMap;
use std::process::ExitCode;

/// Operations per write transaction on the destination.
const BATCH: usize = 256;

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// The store to read: a redb file, or `postgres://user@host:port/database`.
    #[arg(long, value_name = "PATH|URL")]
    from: String,
    /// The store to write (created if missing): a redb file, or a `postgres://` URL.
    #[arg(long, value_name = "PATH|URL")]
    to: String,
}

/// Either backend, for the few calls `copy` makes.
enum Either {
    File(Store),
    Server(Box<PgStore>),
}

fn is_url(target: &str) -> bool {
    target.starts_with("postgres://") || target.starts_with("postgresql://")
}

impl Either {
    fn open(target: &str, options: Options) -> Result<Either, Failure> {
        if is_url(target) {
            Ok(Either::Server(Box::new(PgStore::open(target, options)?)))
        } else {
            Ok(Either::File(
                Store::open(target, options).map_err(open_failure)?,
            ))
        }
    }

    fn documents(&self) -> Result<Vec<StoredDocument>, Failure> {
        match self {
            Either::File(store) => {
                let snapshot = store.snapshot()?;
                let mut docs = Vec::new();
                for doc in snapshot.documents(true)? {
                    docs.push(doc?);
                }
                Ok(docs)
            }
            Either::Server(store) => Ok(store.documents()?),
        }
    }

    fn write_batch(
        &self,
        ops: Vec<Op>,
    ) -> Result<Vec<Result<ratchetdb::OpOutcome, String>>, Failure> {
        let results = match self {
            Either::File(store) => store.write_batch(ops)?,
            Either::Server(store) => store.write_batch(ops)?,
        };
        Ok(results
            .into_iter()
            .map(|r| r.map_err(|e| e.to_string()))
            .collect())
    }

    fn verify(&self) -> Result<VerifyReport, Failure> {
        Ok(match self {
            Either::File(store) => store.verify()?,
            Either::Server(store) => store.verify()?,
        })
    }

    fn metric(&self) -> ratchetdb::Metric {
        match self {
            Either::File(store) => store.metric(),
            Either::Server(store) => store.metric(),
        }
    }
}

/// A stored document as the operation that recreates it.
fn op_of(doc: StoredDocument) -> Op {
    if doc.deleted {
        return Op::Delete {
            source: doc.source,
            id: doc.id,
            version: doc.version,
        };
    }
    let mut document = Document::new(doc.source, doc.id, doc.version).with_meta(doc.meta);
    for chunk in doc.chunks {
        document = document.with_chunk(Chunk {
            text: chunk.text,
            vector: chunk.vector,
            meta: chunk.meta,
        });
    }
    Op::Upsert(document)
}

pub fn run(args: CopyArgs) -> Result<ExitCode, Failure> {
    let from = Either::open(&args.from, Options::default().must_exist())?;
    let to = Either::open(&args.to, Options::default().metric(from.metric()))?;
    let docs = from.documents()?;
    let expected: BTreeMap<(String, String), (ratchetdb::Version, bool, String)> = docs
        .iter()
        .map(|d| {
            (
                (d.source.clone(), d.id.clone()),
                (d.version, d.deleted, d.content_hash.clone()),
            )
        })
        .collect();
    let mut out = Output::stdout();
    let (mut applied, mut refused) = (0u64, Vec::new());
    let mut ops = docs.into_iter().map(op_of).peekable();
    while ops.peek().is_some() {
        let batch: Vec<Op> = ops.by_ref().take(BATCH).collect();
        for result in to.write_batch(batch)? {
            match result {
                Ok(outcome) => match outcome {
                    ratchetdb::OpOutcome::Document(ratchetdb::Outcome::Skipped { .. }) => {
                        refused.push(format!("{outcome:?}"))
                    }
                    _ => applied += 1,
                },
                Err(error) => refused.push(error),
            }
        }
    }
    let copied: BTreeMap<(String, String), (ratchetdb::Version, bool, String)> = to
        .documents()?
        .into_iter()
        .map(|d| ((d.source, d.id), (d.version, d.deleted, d.content_hash)))
        .collect();
    let mut problems: Vec<String> = Vec::new();
    for (key, want) in &expected {
        match copied.get(key) {
            Some(have) if have == want => {}
            Some(have) => problems.push(format!("{}/{}: {have:?}, not {want:?}", key.0, key.1)),
            None => problems.push(format!("{}/{}: missing", key.0, key.1)),
        }
    }
    for (name, report) in [("source", from.verify()?), ("destination", to.verify()?)] {
        for violation in &report.violations {
            problems.push(format!("{name}: {violation}"));
        }
    }
    for line in &refused {
        out.text_line(&format!("refused: {line}"))?;
    }
    for problem in &problems {
        out.text_line(&format!("violation: {problem}"))?;
    }
    let ok = problems.is_empty() && refused.is_empty();
    out.text_line(&format!(
        "{}: {applied} of {} documents copied from {} to {}; verify ran on both ends",
        if ok { "ok" } else { "FAILED" },
        expected.len(),
        args.from,
        redact(&args.to),
    ))?;
    out.finish()?;
    Ok(if ok { exit::ok() } else { exit::error() })
}

/// A URL without its password (for the summary line).
fn redact(target: &str) -> String {
    match (target.find("://"), target.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &target[scheme + 3..at];
            match userinfo.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &target[..scheme + 3], &target[at..]),
                None => target.to_string(),
            }
        }
        _ => target.to_string(),
    }
}
