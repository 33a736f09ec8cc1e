//! The concurrent [`Writer`](crate::Writer) on PostgreSQL: many producers, one committer
//! thread, ONE SQL transaction per group of queued operations (group commit), and each
//! producer answered with its own operation's outcome after that transaction committed.
//!
//! The same contract as the embedded writer (`writer.rs`): operations are validated in the
//! producer's thread (an invalid one is answered at once and never reaches a batch); the
//! committer takes what is queued, and what arrives while it takes it, up to
//! `max_batch_ops`, in submission order; a batch the server fails answers each of its
//! producers [`WriteError::BatchFailed`]. Durability is the server's (every commit is
//! durable under PostgreSQL's default `synchronous_commit`), so `durability` and
//! `sync_interval` do not apply.
//!
//! Invariant: a producer is answered only after the transaction holding its operation
//! committed (or failed).

use super::{write, PgStore};
use crate::error::WriteError;
use crate::policy::prepare::PreparedOp;
use crate::types::{Op, OpOutcome};
use crate::writer::{CommitQueue, Pending, QueueMessage, WriterOptions, WriterStats};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

type Reply = Result<OpOutcome, WriteError>;

enum Message {
    Op(PreparedOp, Sender<Reply>),
    Stop,
}

/// A cloneable group-commit writer over one [`PgStore`] (its connection).
#[derive(Clone)]
pub(crate) struct PgWriter {
    store: Arc<PgStore>,
    shared: Arc<Shared>,
}

impl QueueMessage for Message {
    fn stop() -> Self {
        Message::Stop
    }
}

type Shared = CommitQueue<Message>;

impl PgWriter {
    /// Starts the committer thread.
    pub(crate) fn start(store: Arc<PgStore>, options: WriterOptions) -> PgWriter {
        let (queue, incoming) = crossbeam_channel::bounded(options.queue_capacity.max(1));
        let shared = Arc::new(Shared {
            queue,
            committer: Mutex::new(None),
            batches: AtomicU64::new(0),
            ops: AtomicU64::new(0),
            max_batch_ops: AtomicU64::new(0),
        });
        let committer = Committer {
            store: store.clone(),
            incoming,
            options,
            shared: Arc::downgrade(&shared),
        };
        let handle = std::thread::Builder::new()
            .name("ratchetdb-pg-committer".into())
            .spawn(move || committer.run());
        // Without a thread every submit is answered `Closed`: the receiver is gone.
        if let Ok(handle) = handle {
            *shared.committer.lock() = Some(handle);
        }
        PgWriter { store, shared }
    }

    /// Validates `op` in the caller's thread and queues it (waiting while the queue is
    /// full, or [`WriteError::Full`]).
    pub(crate) fn submit(&self, op: Op, wait: bool) -> Result<Pending, WriteError> {
        self.store.writable()?;
        let prepared = write::prepare_op(&self.store, op)?;
        let (reply, pending) = crossbeam_channel::bounded(1);
        let message = Message::Op(prepared, reply);
        if wait {
            self.shared
                .queue
                .send(message)
                .map_err(|_| WriteError::Closed)?;
        } else {
            self.shared.queue.try_send(message).map_err(|e| match e {
                TrySendError::Full(_) => WriteError::Full,
                TrySendError::Disconnected(_) => WriteError::Closed,
            })?;
        }
        Ok(Pending::new(pending))
    }

    /// What the writer has committed so far.
    pub(crate) fn stats(&self) -> WriterStats {
        WriterStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            ops: self.shared.ops.load(Ordering::Relaxed),
            max_batch_ops: self.shared.max_batch_ops.load(Ordering::Relaxed),
        }
    }

    /// Commits what was accepted and stops the committer.
    pub(crate) fn shutdown(&self) {
        self.shared.stop();
    }
}

struct Committer {
    store: Arc<PgStore>,
    incoming: Receiver<Message>,
    options: WriterOptions,
    shared: std::sync::Weak<Shared>,
}

impl Committer {
    fn run(self) {
        let mut stop = false;
        while !stop {
            let Ok(first) = self.incoming.recv() else {
                return;
            };
            let mut ops = Vec::new();
            let mut replies = Vec::new();
            match first {
                Message::Op(op, reply) => {
                    ops.push(op);
                    replies.push(reply);
                }
                Message::Stop => return,
            }
            // A wait too long for the clock (`Duration::MAX`) has no deadline: the batch
            // waits for company until it is full.
            let deadline = Instant::now().checked_add(self.options.max_batch_wait);
            while ops.len() < self.options.max_batch_ops.max(1) {
                let next = match self.incoming.try_recv() {
                    Ok(message) => message,
                    Err(_) if self.options.max_batch_wait.is_zero() => break,
                    Err(_) => match deadline {
                        Some(deadline) => match self.incoming.recv_deadline(deadline) {
                            Ok(message) => message,
                            Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                                break
                            }
                        },
                        None => match self.incoming.recv() {
                            Ok(message) => message,
                            Err(_) => break,
                        },
                    },
                };
                match next {
                    Message::Op(op, reply) => {
                        ops.push(op);
                        replies.push(reply);
                    }
                    Message::Stop => {
                        stop = true;
                        break;
                    }
                }
            }
            self.commit(ops, replies);
        }
    }

    /// One SQL transaction for the group, then each producer's answer.
    fn commit(&self, ops: Vec<PreparedOp>, replies: Vec<Sender<Reply>>) {
        match write::run(&self.store, &ops) {
            Ok(outcomes) => {
                if let Some(shared) = self.shared.upgrade() {
                    shared.batches.fetch_add(1, Ordering::Relaxed);
                    shared
                        .ops
                        .fetch_add(outcomes.len() as u64, Ordering::Relaxed);
                    shared
                        .max_batch_ops
                        .fetch_max(outcomes.len() as u64, Ordering::Relaxed);
                }
                for (reply, outcome) in replies.into_iter().zip(outcomes) {
                    let _ = reply.send(outcome);
                }
            }
            Err(error) => {
                let cause = error.to_string();
                for reply in replies {
                    let _ = reply.send(Err(WriteError::BatchFailed {
                        cause: cause.clone(),
                    }));
                }
            }
        }
    }
}
