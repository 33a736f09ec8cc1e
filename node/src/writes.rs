//! Writes from JavaScript through one [`Writer`] per store, off the event loop.
//!
//! A call hands its operation and a deferred promise to the *submitting* thread, which queues
//! it on the writer (waiting there, not on the event loop, when the writer's queue is full)
//! and passes the pending outcome to the *settling* thread, which waits for each commit in
//! submission order and settles the promise. Many calls in flight (`Promise.all` of a
//! thousand upserts) are thus queued at once and share group commits.

use crate::convert::outcome_json;
use crate::embedder::{embed_missing, embed_spaces, embeds_default, lacks_vectors};
use crate::errors::{from_write, internal};
use crossbeam_channel::{unbounded, Sender};
use napi::{Env, JsDeferred};
use ratchetdb::{Document, Embedder, Op, OpOutcome, Pending, Store, Version, WriteError, Writer};
use serde_json::Value;
use std::sync::Arc;
use std::thread::JoinHandle;

type Settle = Box<dyn FnOnce(Env) -> napi::Result<Value> + Send>;

/// A promise to settle with an operation's outcome.
pub type Deferred = JsDeferred<Value, Settle>;

struct Submitted {
    op: Op,
    incoming: Version,
    deferred: Deferred,
    embedder: Option<Arc<dyn Embedder>>,
}

struct Waiting {
    pending: Pending,
    incoming: Version,
    deferred: Deferred,
    /// An upsert whose vectors were partly reused: the document (vectors embedded so far) and
    /// the embedder, to embed the rest and write again if the store no longer holds them.
    retry: Option<Retry>,
}

/// An upsert to embed in full and write again: the document and the embedder.
type Retry = (Document, Arc<dyn Embedder>);

/// Embeds what an upsert lacks (`embedder` given), returning the op to submit and what a
/// retry needs.
fn prepare(
    store: &Store,
    op: Op,
    embedder: Option<Arc<dyn Embedder>>,
) -> napi::Result<(Op, Option<Retry>)> {
    match (op, embedder) {
        (Op::Upsert(mut doc), Some(embedder)) => {
            embed_spaces(store, embedder.as_ref(), &mut doc)?;
            if !lacks_vectors(&doc) || !embeds_default(store, embedder.as_ref()) {
                return Ok((Op::Upsert(doc), None));
            }
            embed_missing(store, embedder.as_ref(), &mut doc, false)?;
            let retry = lacks_vectors(&doc).then(|| (doc.clone(), embedder));
            Ok((Op::Upsert(doc), retry))
        }
        (op, _) => Ok((op, None)),
    }
}

/// The outcome of a write whose reused vectors were gone at commit: every vector embedded,
/// written again.
fn write_again(
    writer: &Writer,
    store: &Store,
    (mut doc, embedder): Retry,
) -> napi::Result<OpOutcome> {
    embed_missing(store, embedder.as_ref(), &mut doc, true)?;
    writer
        .submit(Op::Upsert(doc))
        .and_then(|pending| pending.wait())
        .map_err(from_write)
}

/// The two threads between JavaScript and a store's writer.
pub struct Writes {
    submit: Option<Sender<Submitted>>,
    threads: Vec<JoinHandle<()>>,
    writer: Writer,
}

fn resolve(deferred: Deferred, value: Value) {
    deferred.resolve(Box::new(move |_env| Ok(value)));
}

impl Writes {
    /// Starts the threads for `store`'s writer.
    pub fn start(store: Store) -> std::io::Result<Writes> {
        let writer = store.writer();
        let (submit, submitted) = unbounded::<Submitted>();
        let (wait, waiting) = unbounded::<Waiting>();
        let queue = writer.clone();
        let again = writer.clone();
        let settling_store = store.clone();
        let submitter = std::thread::Builder::new()
            .name("ratchetdb-node-submit".into())
            .spawn(move || {
                for job in submitted {
                    let (op, retry) = match prepare(&store, job.op, job.embedder) {
                        Ok(prepared) => prepared,
                        Err(error) => {
                            job.deferred.reject(error);
                            continue;
                        }
                    };
                    match queue.submit(op) {
                        Ok(pending) => {
                            let waiting = Waiting {
                                pending,
                                incoming: job.incoming,
                                deferred: job.deferred,
                                retry,
                            };
                            if let Err(unsent) = wait.send(waiting) {
                                unsent
                                    .0
                                    .deferred
                                    .reject(internal("the store's settling thread stopped"));
                            }
                        }
                        Err(error) => job.deferred.reject(from_write(error)),
                    }
                }
            })?;
        let settler = std::thread::Builder::new()
            .name("ratchetdb-node-settle".into())
            .spawn(move || {
                for job in waiting {
                    let result = match (job.pending.wait(), job.retry) {
                        (Err(WriteError::MissingVector { .. }), Some(retry)) => {
                            write_again(&again, &settling_store, retry)
                        }
                        (result, _) => result.map_err(from_write),
                    };
                    match result {
                        Ok(outcome) => resolve(job.deferred, outcome_json(&outcome, job.incoming)),
                        Err(error) => job.deferred.reject(error),
                    }
                }
            })?;
        Ok(Writes {
            submit: Some(submit),
            threads: vec![submitter, settler],
            writer,
        })
    }

    /// Queues `op`; `deferred` is settled when it has committed (or been refused). With an
    /// `embedder`, an upsert's chunks without a vector are embedded first (on the submitting
    /// thread), except those whose vector the store can reuse.
    pub fn send(
        &self,
        op: Op,
        incoming: Version,
        deferred: Deferred,
        embedder: Option<Arc<dyn Embedder>>,
    ) {
        let job = Submitted {
            op,
            incoming,
            deferred,
            embedder,
        };
        match &self.submit {
            Some(submit) => {
                if let Err(unsent) = submit.send(job) {
                    unsent
                        .0
                        .deferred
                        .reject(internal("the store's submitting thread stopped"));
                }
            }
            None => job
                .deferred
                .reject(from_write(ratchetdb::WriteError::Closed)),
        }
    }

    /// Settles everything queued, then stops both threads and the writer.
    pub fn stop(&mut self) {
        self.submit = None;
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
        self.writer.shutdown();
    }
}

impl Drop for Writes {
    fn drop(&mut self) {
        self.stop();
    }
}
