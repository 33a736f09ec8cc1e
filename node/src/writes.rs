//! Writes from JavaScript through one [`Writer`] per store, off the event loop.
//!
//! A call hands its operation and a deferred promise to the *submitting* thread, which queues
//! it on the writer (waiting there, not on the event loop, when the writer's queue is full)
//! and passes the pending outcome to the *settling* thread, which waits for each commit in
//! submission order and settles the promise. Many calls in flight (`Promise.all` of a
//! thousand upserts) are thus queued at once and share group commits.

use crate::convert::outcome_json;
use crate::errors::{from_write, internal};
use crossbeam_channel::{unbounded, Sender};
use napi::{Env, JsDeferred};
use ratchetdb::{Op, Pending, Version, Writer};
use serde_json::Value;
use std::thread::JoinHandle;

type Settle = Box<dyn FnOnce(Env) -> napi::Result<Value> + Send>;

/// A promise to settle with an operation's outcome.
pub type Deferred = JsDeferred<Value, Settle>;

struct Submitted {
    op: Op,
    incoming: Version,
    deferred: Deferred,
}

struct Waiting {
    pending: Pending,
    incoming: Version,
    deferred: Deferred,
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
    /// Starts the threads for `writer`.
    pub fn start(writer: Writer) -> std::io::Result<Writes> {
        let (submit, submitted) = unbounded::<Submitted>();
        let (wait, waiting) = unbounded::<Waiting>();
        let queue = writer.clone();
        let submitter = std::thread::Builder::new()
            .name("ratchetdb-node-submit".into())
            .spawn(move || {
                for job in submitted {
                    match queue.submit(job.op) {
                        Ok(pending) => {
                            let waiting = Waiting {
                                pending,
                                incoming: job.incoming,
                                deferred: job.deferred,
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
                    match job.pending.wait() {
                        Ok(outcome) => resolve(job.deferred, outcome_json(&outcome, job.incoming)),
                        Err(error) => job.deferred.reject(from_write(error)),
                    }
                }
            })?;
        Ok(Writes {
            submit: Some(submit),
            threads: vec![submitter, settler],
            writer,
        })
    }

    /// Queues `op`; `deferred` is settled when it has committed (or been refused).
    pub fn send(&self, op: Op, incoming: Version, deferred: Deferred) {
        let job = Submitted {
            op,
            incoming,
            deferred,
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
