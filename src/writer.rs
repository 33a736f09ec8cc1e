//! The concurrent writer: many producers, one committer, one transaction and one fsync per
//! batch (group commit), and an exact outcome for every producer.
//!
//! Producers validate and hash their own operations (in their own threads), then queue them
//! on a bounded crossbeam channel. One committer thread takes what is queued into one write
//! transaction of the store's backend (`Backend::commit_group`: a redb write transaction,
//! or one SQL transaction on PostgreSQL), and keeps taking operations that arrive while it builds that
//! transaction (up to [`WriterOptions::max_batch_ops`] in all); it decides each operation
//! with the same guard as [`Store::upsert`](crate::Store::upsert), in submission order, commits once, and then
//! answers each producer with its own outcome.
//!
//! Invariant: a producer is answered only after the commit that contains its operation has
//! returned; under [`Durability::Immediate`] an answer means the operation is on disk.

use crate::backend::{Committer as Target, GroupCommit};
use crate::error::WriteError;
use crate::options::Durability;
use crate::policy::prepare::PreparedOp;
use crate::types::{Document, Op, OpOutcome, Outcome};
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TrySendError};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Settings of a [`Writer`], with documented defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterOptions {
    /// Operations the queue holds before producers wait (`submit`) or get
    /// [`WriteError::Full`] (`try_submit`). Bounds memory. Default 4096.
    pub queue_capacity: usize,
    /// The most operations one transaction takes. Default 1024.
    pub max_batch_ops: usize,
    /// How long the committer waits for more operations after the first of a batch, when
    /// the queue is empty. `0` (the default) waits for nothing: a batch is what was queued
    /// when it started plus what arrived while it was being built. Under load the queue
    /// fills while the previous batch commits, which is what batches the writes. A wait
    /// longer than the clock can count ([`Duration::MAX`]) waits until the batch holds
    /// `max_batch_ops` operations or the writer shuts down.
    pub max_batch_wait: Duration,
    /// The durability of each batch. Default: the store's.
    pub durability: Durability,
    /// With [`Durability::None`], how often the committer makes everything durable.
    /// Default 1 s.
    pub sync_interval: Duration,
}

impl WriterOptions {
    /// The defaults, with the given durability (`WriterOptions::for_store` takes the
    /// store's).
    pub(crate) fn with_durability(durability: Durability) -> WriterOptions {
        WriterOptions {
            queue_capacity: 4096,
            max_batch_ops: 1024,
            max_batch_wait: Duration::ZERO,
            durability,
            sync_interval: Duration::from_secs(1),
        }
    }

    /// Sets the queue capacity (at least 1).
    pub fn queue_capacity(mut self, capacity: usize) -> WriterOptions {
        self.queue_capacity = capacity.max(1);
        self
    }

    /// Sets the largest batch (at least 1).
    pub fn max_batch_ops(mut self, ops: usize) -> WriterOptions {
        self.max_batch_ops = ops.max(1);
        self
    }

    /// Sets how long a batch waits for company.
    pub fn max_batch_wait(mut self, wait: Duration) -> WriterOptions {
        self.max_batch_wait = wait;
        self
    }

    /// Sets the durability.
    pub fn durability(mut self, durability: Durability) -> WriterOptions {
        self.durability = durability;
        self
    }

    /// Sets the periodic sync interval for [`Durability::None`].
    pub fn sync_interval(mut self, interval: Duration) -> WriterOptions {
        self.sync_interval = interval;
        self
    }
}

/// What the writer has done so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriterStats {
    /// Batches that ran without a storage error (one transaction each; a batch whose every
    /// operation was refused for its input commits nothing, and counts).
    pub batches: u64,
    /// Operations answered in them with their own outcome (or error).
    pub ops: u64,
    /// The largest batch.
    pub max_batch_ops: u64,
}

type Reply = Result<OpOutcome, WriteError>;

/// A committer's message: a validated operation and where its outcome goes, or the order to
/// stop once those before it are done.
enum Message {
    Op(PreparedOp, Sender<Reply>),
    Stop,
}

/// The answer to one submitted operation, to wait for or poll.
#[derive(Debug)]
pub struct Pending {
    reply: Receiver<Reply>,
}

impl Pending {
    /// Waits for the outcome.
    pub fn wait(self) -> Result<OpOutcome, WriteError> {
        self.reply.recv().unwrap_or(Err(WriteError::Closed))
    }

    /// The outcome if it is there, else `self` back.
    pub fn poll(self) -> Result<Result<OpOutcome, WriteError>, Pending> {
        match self.reply.try_recv() {
            Ok(reply) => Ok(reply),
            Err(crossbeam_channel::TryRecvError::Empty) => Err(self),
            Err(crossbeam_channel::TryRecvError::Disconnected) => Ok(Err(WriteError::Closed)),
        }
    }
}

/// What a writer's handles share: the queue, the committer thread, and the counters.
/// Dropping the last handle stops the committer after it has committed everything queued.
struct Shared {
    queue: Sender<Message>,
    committer: Mutex<Option<JoinHandle<()>>>,
    counts: Arc<Counts>,
}

/// What the committer has done: held by the committer itself too, so that counting never
/// takes the last reference to [`Shared`] (whose drop joins the committer: from the
/// committer's own thread, that join would fail).
#[derive(Default)]
struct Counts {
    batches: AtomicU64,
    ops: AtomicU64,
    max_batch_ops: AtomicU64,
    /// Turns of the committer's loop (a test counts them: an idle committer never turns).
    #[cfg(test)]
    turns: AtomicU64,
}

impl Shared {
    /// Stops the committer (once) after everything queued before is committed.
    fn stop(&self) {
        let handle = self.committer.lock().take();
        if let Some(handle) = handle {
            // Everything queued before Stop is committed first (the queue is FIFO).
            let _ = self.queue.send(Message::Stop);
            let _ = handle.join();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A cloneable handle for writing from many threads with group commit.
///
/// ```
/// use ratchetdb::{Chunk, Document, Options, Outcome, Store, Version};
/// # let dir = tempfile::tempdir()?;
/// let store = Store::open(dir.path().join("index.redb"), Options::default())?;
/// let writer = store.writer();
/// let handles: Vec<_> = (0..4)
///     .map(|t| {
///         let writer = writer.clone();
///         std::thread::spawn(move || {
///             let doc = Document::new("s", format!("doc{t}"), Version::number(1))
///                 .with_chunk(Chunk::new(format!("text {t}"), vec![1.0, t as f32]));
///             writer.upsert(doc)
///         })
///     })
///     .collect();
/// for handle in handles {
///     assert!(matches!(handle.join().unwrap()?, Outcome::Written { .. }));
/// }
/// writer.shutdown();
/// assert_eq!(store.stats()?.documents, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Writer {
    target: Target,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("stats", &self.stats())
            .finish()
    }
}

impl Writer {
    /// Starts the committer thread over `target`, the writing part of a store's backend.
    pub(crate) fn start(target: Target, options: WriterOptions) -> Writer {
        let (shared, committer) = Committer::new(target.clone(), options);
        let handle = std::thread::Builder::new()
            .name("ratchetdb-committer".into())
            .spawn(move || committer.run());
        // Without a thread every submit is answered `Closed`: the receiver is gone.
        if let Ok(handle) = handle {
            *shared.committer.lock() = Some(handle);
        }
        Writer { target, shared }
    }

    fn queue(&self, op: Op, wait: bool) -> Result<Pending, WriteError> {
        if self.target.is_read_only() {
            return Err(WriteError::ReadOnly {
                path: self.target.path().to_path_buf(),
            });
        }
        let prepared = self.target.prepare(op)?;
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
        Ok(Pending { reply: pending })
    }

    /// Validates `op` here, in the caller's thread, and queues it, waiting while the queue is
    /// full. A validation error is returned at once and never reaches a batch; on a
    /// read-only store every operation is refused with [`WriteError::ReadOnly`].
    pub fn submit(&self, op: Op) -> Result<Pending, WriteError> {
        self.queue(op, true)
    }

    /// Like [`Writer::submit`], but returns [`WriteError::Full`] instead of waiting.
    pub fn try_submit(&self, op: Op) -> Result<Pending, WriteError> {
        self.queue(op, false)
    }

    /// Submits an upsert and waits for its outcome.
    pub fn upsert(&self, doc: Document) -> Result<Outcome, WriteError> {
        document_outcome(self.submit(Op::Upsert(doc)))
    }

    /// Submits a delete and waits for its outcome.
    pub fn delete(
        &self,
        source: &str,
        id: &str,
        version: crate::Version,
    ) -> Result<Outcome, WriteError> {
        let op = Op::Delete {
            source: source.to_string(),
            id: id.to_string(),
            version,
        };
        document_outcome(self.submit(op))
    }

    /// What the writer has committed so far.
    pub fn stats(&self) -> WriterStats {
        let counts = &self.shared.counts;
        WriterStats {
            batches: counts.batches.load(Ordering::Relaxed),
            ops: counts.ops.load(Ordering::Relaxed),
            max_batch_ops: counts.max_batch_ops.load(Ordering::Relaxed),
        }
    }

    /// Commits everything accepted so far and stops the committer. Later submissions, from
    /// this or any clone, get [`WriteError::Closed`]. Dropping the last handle does the same.
    pub fn shutdown(&self) {
        self.shared.stop();
    }
}

/// A document operation's outcome from a submitted operation's answer.
fn document_outcome(pending: Result<Pending, WriteError>) -> Result<Outcome, WriteError> {
    match pending?.wait()? {
        OpOutcome::Document(outcome) => Ok(outcome),
        OpOutcome::Retain(_) => Err(WriteError::Corrupted {
            what: "writer".into(),
            detail: "a document operation was answered with a listing's outcome".into(),
        }),
    }
}

struct Committer {
    target: Target,
    incoming: Receiver<Message>,
    options: WriterOptions,
    counts: Arc<Counts>,
}

impl Committer {
    fn new(target: Target, options: WriterOptions) -> (Arc<Shared>, Committer) {
        let (queue, incoming) = crossbeam_channel::bounded(options.queue_capacity.max(1));
        let counts = Arc::new(Counts::default());
        let shared = Arc::new(Shared {
            queue,
            committer: Mutex::new(None),
            counts: counts.clone(),
        });
        let committer = Committer {
            target,
            incoming,
            options,
            counts,
        };
        (shared, committer)
    }

    fn run(self) {
        let mut unsynced = false;
        let mut last_sync = Instant::now();
        loop {
            #[cfg(test)]
            self.counts.turns.fetch_add(1, Ordering::Relaxed);
            // Only unsynced commits need a deadline: an idle committer with nothing to make
            // durable blocks (a zero interval never spins).
            let first = if unsynced {
                let wait = self
                    .options
                    .sync_interval
                    .saturating_sub(last_sync.elapsed());
                match self.incoming.recv_timeout(wait) {
                    Ok(message) => message,
                    Err(RecvTimeoutError::Timeout) => {
                        if unsynced && self.target.sync().is_ok() {
                            unsynced = false;
                        }
                        last_sync = Instant::now();
                        continue;
                    }
                    Err(RecvTimeoutError::Disconnected) => break,
                }
            } else {
                match self.incoming.recv() {
                    Ok(message) => message,
                    Err(_) => break,
                }
            };
            let mut jobs = Vec::new();
            let mut stop = false;
            let mut next = Some(first);
            // A wait too long for the clock (`Duration::MAX`) has no deadline: the batch
            // waits for company until it is full.
            let deadline = Instant::now().checked_add(self.options.max_batch_wait);
            while let Some(message) = next.take() {
                match message {
                    Message::Op(op, reply) => jobs.push((op, reply)),
                    Message::Stop => stop = true,
                }
                if stop || jobs.len() >= self.options.max_batch_ops {
                    break;
                }
                next = match deadline {
                    _ if self.options.max_batch_wait.is_zero() => self.incoming.try_recv().ok(),
                    Some(deadline) => self.incoming.recv_deadline(deadline).ok(),
                    None => self.incoming.recv().ok(),
                };
            }
            if !jobs.is_empty() {
                self.commit(jobs, &mut stop);
                unsynced = self.options.durability == Durability::None;
            }
            // Under sustained load the queue never runs dry, so the timeout above never
            // fires: the interval is checked after every batch too.
            if unsynced && last_sync.elapsed() >= self.options.sync_interval {
                if self.target.sync().is_ok() {
                    unsynced = false;
                }
                last_sync = Instant::now();
            }
            if stop {
                break;
            }
        }
        // Anything that raced past Stop is refused; what was accepted before it is committed.
        while let Ok(message) = self.incoming.try_recv() {
            if let Message::Op(_, reply) = message {
                let _ = reply.send(Err(WriteError::Closed));
            }
        }
        if unsynced {
            let _ = self.target.sync();
        }
    }

    /// Commits `jobs` and whatever arrives while the backend builds their transaction (up to
    /// `max_batch_ops` in all, never past a stop), then answers every producer: each with
    /// its own outcome, or all with [`WriteError::BatchFailed`] should the group fail (even
    /// before it starts: a read-only or poisoned store).
    fn commit(&self, jobs: Vec<(PreparedOp, Sender<Reply>)>, stop: &mut bool) {
        let max = self.options.max_batch_ops;
        let (ops, mut replies): (Vec<PreparedOp>, Vec<Sender<Reply>>) = jobs.into_iter().unzip();
        let mut taken = ops.len();
        let mut late = Vec::new();
        let arrivals = std::iter::from_fn(|| {
            if *stop || taken >= max {
                return None;
            }
            match self.incoming.try_recv() {
                Ok(Message::Op(op, reply)) => {
                    taken += 1;
                    late.push(reply);
                    Some(op)
                }
                Ok(Message::Stop) => {
                    *stop = true;
                    None
                }
                Err(_) => None,
            }
        });
        let mut group = ops.into_iter().chain(arrivals);
        let result = self
            .target
            .commit_group(&mut group, self.options.durability);
        drop(group);
        replies.append(&mut late);
        match result {
            Ok(outcomes) => {
                let n = outcomes.len() as u64;
                self.counts.batches.fetch_add(1, Ordering::Relaxed);
                self.counts.ops.fetch_add(n, Ordering::Relaxed);
                self.counts.max_batch_ops.fetch_max(n, Ordering::Relaxed);
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

#[cfg(test)]
mod tests {
    //! The committer's batching, driven by hand: operations are queued before a batch
    //! starts, so what it takes does not depend on timing.

    use super::*;
    use crate::testkit::{Disk, FaultMode, IoKind};
    use crate::{Chunk, Options, Store};

    struct Rig {
        _dir: tempfile::TempDir,
        store: Store,
        queue: Sender<Message>,
        shared: Arc<Shared>,
        committer: Committer,
    }

    fn rig(max_batch_ops: usize) -> Rig {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
        let options = WriterOptions::for_store(&store).max_batch_ops(max_batch_ops);
        rig_on(dir, store, options)
    }

    fn rig_on(dir: tempfile::TempDir, store: Store, options: WriterOptions) -> Rig {
        let (shared, committer) =
            Committer::new(store.backend().committer(), options.queue_capacity(64));
        let queue = shared.queue.clone();
        Rig {
            _dir: dir,
            store,
            queue,
            shared,
            committer,
        }
    }

    /// A rig on a simulated disk (see [`crate::testkit::Disk`]).
    fn rig_on_disk(options: impl Fn(WriterOptions) -> WriterOptions) -> (Rig, Disk) {
        let disk = Disk::new();
        let store = Store::open_with_backend(disk.backend(), Options::default()).expect("open");
        let options = options(WriterOptions::for_store(&store));
        let dir = tempfile::tempdir().expect("tempdir");
        (rig_on(dir, store, options), disk)
    }

    fn op(store: &Store, i: usize) -> PreparedOp {
        let doc = Document::new("s", format!("d{i}"), crate::Version::number(1))
            .with_chunk(Chunk::new(format!("text {i}"), vec![1.0, 0.5]));
        store
            .embedded()
            .engine()
            .prepare(Op::Upsert(doc))
            .expect("prepare")
    }

    /// Operation `i` queued as a job, answered on `reply`.
    fn job(store: &Store, i: usize, reply: Sender<Reply>) -> (PreparedOp, Sender<Reply>) {
        (op(store, i), reply)
    }

    /// Queues operations `from..to`; returns their answers.
    fn queue_ops(rig: &Rig, from: usize, to: usize) -> Vec<Receiver<Reply>> {
        (from..to)
            .map(|i| {
                let (reply, answer) = crossbeam_channel::bounded(1);
                let (op, reply) = job(&rig.store, i, reply);
                rig.queue.send(Message::Op(op, reply)).expect("queue");
                answer
            })
            .collect()
    }

    /// A rig whose queue holds operations `from..3`, a `Stop`, then operation 3; the
    /// answers of the operations before the stop and after it.
    fn queued_around_a_stop(from: usize) -> (Rig, Vec<Receiver<Reply>>, Vec<Receiver<Reply>>) {
        let rig = rig(1024);
        let before = queue_ops(&rig, from, 3);
        rig.queue.send(Message::Stop).expect("stop");
        let after = queue_ops(&rig, 3, 4);
        (rig, before, after)
    }

    /// Runs one batch that starts with operation `first` (as `run` does once it has it).
    fn batch(rig: &Rig, first: usize) -> (Receiver<Reply>, bool) {
        let (reply, answer) = crossbeam_channel::bounded(1);
        let mut stop = false;
        rig.committer
            .commit(vec![job(&rig.store, first, reply)], &mut stop);
        (answer, stop)
    }

    /// Runs the committer's loop until it stops (the queue must end with a `Stop`).
    fn run_to_the_end(rig: Rig) {
        let Rig {
            _dir, committer, ..
        } = rig;
        committer.run();
    }

    fn written(answer: &Receiver<Reply>) -> bool {
        matches!(
            answer.try_recv(),
            Ok(Ok(OpOutcome::Document(Outcome::Written { .. })))
        )
    }

    #[test]
    fn operations_still_queued_when_a_batch_is_built_join_it() {
        let rig = rig(1024);
        let later = queue_ops(&rig, 1, 10);
        let (first, stop) = batch(&rig, 0);
        assert!(!stop);
        assert!(written(&first));
        assert!(later.iter().all(written));
        assert_eq!(rig.shared.counts.batches.load(Ordering::Relaxed), 1);
        assert_eq!(rig.shared.counts.ops.load(Ordering::Relaxed), 10);
        assert!(rig.committer.incoming.is_empty());
        assert_eq!(rig.store.stats().expect("stats").documents, 10);
    }

    #[test]
    fn a_batch_takes_no_more_than_max_batch_ops() {
        let rig = rig(4);
        let later = queue_ops(&rig, 1, 10);
        let (first, _) = batch(&rig, 0);
        assert!(written(&first));
        assert!(later[..3].iter().all(written));
        assert!(later[3..].iter().all(|answer| answer.is_empty()));
        assert_eq!(rig.shared.counts.ops.load(Ordering::Relaxed), 4);
        assert_eq!(rig.committer.incoming.len(), 6);
        assert_eq!(rig.store.stats().expect("stats").documents, 4);
    }

    #[test]
    fn a_stop_ends_the_batch_it_arrives_in() {
        let (rig, before, after) = queued_around_a_stop(1);
        let (first, stop) = batch(&rig, 0);
        assert!(stop, "the batch saw the stop");
        assert!(written(&first));
        assert!(before.iter().all(written));
        assert!(
            after[0].is_empty(),
            "nothing after the stop joined the batch"
        );
        assert_eq!(rig.shared.counts.ops.load(Ordering::Relaxed), 3);
        assert_eq!(rig.committer.incoming.len(), 1);
    }

    #[test]
    fn a_stop_commits_what_came_before_it_and_refuses_what_came_after() {
        let (rig, before, after) = queued_around_a_stop(0);
        run_to_the_end(rig);
        assert!(before.iter().all(written));
        assert!(matches!(after[0].try_recv(), Ok(Err(WriteError::Closed))));
    }

    #[test]
    fn late_arrivals_share_their_batchs_storage_failure() {
        let (rig, disk) = rig_on_disk(|options| options);
        let later = queue_ops(&rig, 1, 6);
        // Every write from now on fails: the commit of the batch below.
        disk.fail_after(0, FaultMode::Forever);
        let (first, _) = batch(&rig, 0);
        for answer in std::iter::once(&first).chain(&later) {
            assert!(
                matches!(answer.try_recv(), Ok(Err(WriteError::BatchFailed { .. }))),
                "every operation of the failed batch gets its error"
            );
        }
        assert!(rig.committer.incoming.is_empty(), "all of them were in it");
        assert!(disk.faults_hit() > 0);
        assert_eq!(rig.store.get("s", "d0").expect("read"), None);
        assert_eq!(rig.store.get("s", "d5").expect("read"), None);
    }

    // Regression: with `Durability::None`, the periodic durable commit ran only when the
    // committer found the queue empty for a moment (its receive timed out), so under
    // sustained load nothing became durable until the load stopped, breaking "what was
    // acknowledged more than one sync interval ago survives a crash".
    #[test]
    fn the_periodic_sync_runs_while_the_queue_never_empties() {
        let (rig, disk) = rig_on_disk(|options| {
            options
                .durability(Durability::None)
                .sync_interval(Duration::ZERO)
                .max_batch_ops(8)
        });
        // Five batches' worth, all queued before the committer starts, then a stop.
        let answers = queue_ops(&rig, 0, 40);
        rig.queue.send(Message::Stop).expect("stop");
        disk.start_trace();
        run_to_the_end(rig);
        assert!(answers.iter().all(written));
        let trace = disk.trace();
        // A durable commit after each of the five batches, so four of them (at least)
        // before the last batch's writes; before the fix, only the one at shutdown.
        let last_write = trace
            .iter()
            .rposition(|(kind, _)| *kind == IoKind::Write)
            .expect("writes");
        let during_load = trace[..last_write]
            .iter()
            .filter(|(kind, _)| *kind == IoKind::Sync)
            .count();
        assert!(
            during_load >= 4,
            "{during_load} syncs during the load: {trace:?}"
        );
    }

    // Regression: with `Durability::None` and a zero sync interval, the committer waited
    // for its next operation with a zero timeout even when nothing was left to sync, so an
    // idle writer spun on a core.
    #[test]
    fn an_idle_committer_with_a_zero_sync_interval_does_not_spin() {
        let (rig, _disk) = rig_on_disk(|options| {
            options
                .durability(Durability::None)
                .sync_interval(Duration::ZERO)
        });
        let answers = queue_ops(&rig, 0, 3);
        let Rig {
            _dir,
            store,
            queue,
            committer,
            ..
        } = rig;
        let counts = Arc::clone(&committer.counts);
        let thread = std::thread::spawn(move || committer.run());
        for answer in &answers {
            assert!(matches!(
                answer.recv(),
                Ok(Ok(OpOutcome::Document(Outcome::Written { .. })))
            ));
        }
        // Idle now: give a spinning loop time to show itself.
        std::thread::sleep(Duration::from_millis(200));
        let turns = counts.turns.load(Ordering::Relaxed);
        queue.send(Message::Stop).expect("stop");
        thread.join().expect("committer");
        drop(store);
        // One turn per batch (at most three), one to sync, one that blocks.
        assert!(turns <= 8, "{turns} turns of an idle committer's loop");
    }

    // Regression (issue 47's review): when one group-commit loop came to serve both
    // backends, the `Writer` held the whole embedded backend, so a writer that outlived its
    // store kept the indexer, its background threads and its caches alive (and its graph
    // snapshots competing with the writes for the file). It holds the engine alone.
    #[test]
    fn a_writer_keeps_no_derived_state_alive_after_its_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("db.redb"), Options::default()).expect("open");
        let indexer = Arc::downgrade(store.embedded().indexer_arc());
        let writer = store.writer();
        drop(store);
        assert!(
            indexer.upgrade().is_none(),
            "the writer kept the derived state's owner alive"
        );
        let doc = Document::new("s", "d", crate::Version::number(1))
            .with_chunk(Chunk::new("text", vec![1.0, 0.5]));
        assert!(matches!(writer.upsert(doc), Ok(Outcome::Written { .. })));
        writer.shutdown();
    }
}
