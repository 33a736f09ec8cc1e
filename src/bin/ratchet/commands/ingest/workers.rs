//! `ingest --jsonl FILE --workers N`: the same lines, outcomes and report as the
//! single-threaded run, through the concurrent writer.
//!
//! Four stages, each on its own thread(s), joined by bounded channels:
//!
//! ```text
//! reader ──lines──► N parsers ──┐
//!    └──slots, in input order──► submitter ──► Writer (group commit) ──► reporter (this thread)
//! ```
//!
//! Parsing, the costly part, runs on N threads. The submitter hands the operations to the
//! writer in input order. That order is the point: the writer decides operations in its
//! queue's order, one batch after another, so every line gets the outcome, and every
//! document the generation, that the single-threaded run gives it. Two lines about one
//! document can never swap, and the first vector fixes the dimension as it does there.
//! The reporter waits for each line's outcome in input order, so a report line still
//! describes a committed outcome.
//!
//! Memory is bounded: a reader waits while [`MAX_LINES_IN_FLIGHT`] lines or
//! [`BATCH_BYTES`](super::BATCH_BYTES) of them are between it and the reporter.

use super::{op_error, read_error, too_long, Ingest};
use crate::Failure;
use crossbeam_channel::{bounded, Receiver, Sender};
use ratchetdb::jsonl::{self, Header, LineError, LineReader, ReadLine};
use ratchetdb::{Op, Pending, VersionKind, WriteError, Writer, WriterOptions};
use std::io::BufRead;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};

/// Lines read but not yet reported, at most.
const MAX_LINES_IN_FLIGHT: usize = 4096;

/// A line as the parsers leave it.
enum Parsed {
    Blank,
    Rejected(LineError),
    Op(Header, Op),
    Store(Header, jsonl::StoreLine),
}

/// A line for a parser, with where its result goes.
struct Job {
    text: Vec<u8>,
    reply: Sender<Parsed>,
}

/// A line's place in input order, with its (future) parse result.
struct Slot {
    line: u64,
    bytes: usize,
    parsed: Receiver<Parsed>,
}

/// A line as the submitter leaves it.
enum Submitted {
    Blank,
    Rejected(LineError),
    Op(Header, Result<Pending, WriteError>),
    Store(Header, u64, Result<(), super::StoreLineError>),
}

struct Done {
    line: u64,
    bytes: usize,
    submitted: Submitted,
}

/// The bound on lines between the reader and the reporter.
#[derive(Default)]
struct Budget {
    /// (lines, bytes) in flight.
    in_flight: Mutex<(usize, usize)>,
    freed: Condvar,
}

impl Budget {
    fn acquire(&self, bytes: usize) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        // One line always goes, however long, so that a line longer than the byte bound
        // cannot wait forever.
        while in_flight.0 > 0
            && (in_flight.0 >= MAX_LINES_IN_FLIGHT || in_flight.1 + bytes > super::BATCH_BYTES)
        {
            in_flight = self
                .freed
                .wait(in_flight)
                .unwrap_or_else(|e| e.into_inner());
        }
        in_flight.0 += 1;
        in_flight.1 += bytes;
    }

    fn release(&self, bytes: usize) {
        let mut in_flight = self.in_flight.lock().unwrap_or_else(|e| e.into_inner());
        in_flight.0 -= 1;
        in_flight.1 -= bytes;
        self.freed.notify_all();
    }
}

/// Whether a writer error ends the run (the batch did not commit, or the store no longer
/// takes writes), rather than refusing one line for its input.
pub(super) fn is_fatal(error: &WriteError) -> bool {
    !matches!(
        error,
        WriteError::Input(_)
            | WriteError::DimensionMismatch { .. }
            | WriteError::VersionKindMismatch { .. }
            | WriteError::MissingVector { .. }
            | WriteError::MissingSpaceVector { .. }
    )
}

/// A parser thread: parses each job's line and answers it.
fn parse_jobs(jobs: Receiver<Job>, default_kind: VersionKind) {
    for job in jobs {
        let parsed = match jsonl::parse_line(&job.text, default_kind) {
            Ok(parsed) => match parsed.op {
                jsonl::Line::Op(op) => Parsed::Op(parsed.header, op),
                jsonl::Line::Store(wanted) => Parsed::Store(parsed.header, wanted),
            },
            Err(error) => Parsed::Rejected(error),
        };
        let _ = job.reply.send(parsed);
    }
}

/// The submitter: takes each line's parse in input order and submits its operation to the
/// writer, passing it on to the reporter.
/// A `store` line is carried out here, in input order among the submissions (raising what
/// counts as issued early never refuses a write).
fn submit_in_order(
    slots: Receiver<Slot>,
    done_queue: Sender<Done>,
    submitter: &Writer,
    store: &ratchetdb::Store,
) {
    for slot in slots {
        let parsed = slot.parsed.recv().unwrap_or_else(|_| {
            Parsed::Rejected(LineError::whole("not parsed: a parser thread ended"))
        });
        let submitted = match parsed {
            Parsed::Blank => Submitted::Blank,
            Parsed::Rejected(error) => Submitted::Rejected(error),
            Parsed::Op(header, op) => Submitted::Op(header, submitter.submit(op)),
            Parsed::Store(header, wanted) => Submitted::Store(
                header,
                wanted.tickets_issued,
                super::apply_store_line(store, &wanted),
            ),
        };
        // After a `store` line the store disagrees with, nothing more is submitted: the
        // lines after it were made for another store (the reporter ends the run).
        let disagrees = matches!(
            &submitted,
            Submitted::Store(_, _, Err(super::StoreLineError::Disagrees(_)))
        );
        let done = Done {
            line: slot.line,
            bytes: slot.bytes,
            submitted,
        };
        if done_queue.send(done).is_err() || disagrees {
            break;
        }
    }
}

/// Reports one line once its outcome is known; a fatal writer error sets `stop` and
/// records why the run ends in `fatal`.
fn report(
    ingest: &mut Ingest,
    line: u64,
    submitted: Submitted,
    stop: &AtomicBool,
    fatal: &mut Option<String>,
) -> Result<(), Failure> {
    match submitted {
        Submitted::Blank => ingest.report_blank(line),
        Submitted::Rejected(error) => ingest.report_rejected(line, None, &error),
        Submitted::Op(header, submitted) => match submitted.and_then(|pending| pending.wait()) {
            Ok(outcome) => ingest.report_outcome(line, &header, &outcome),
            Err(error) if is_fatal(&error) => {
                stop.store(true, Ordering::SeqCst);
                fatal.get_or_insert_with(|| {
                    format!("{error}; line {line} and the lines after it were not applied")
                });
                ingest.report_not_applied(line, &header, &error)
            }
            Err(error) => ingest.report_rejected(line, Some(&header), &op_error(&error)),
        },
        Submitted::Store(header, issued, result) => {
            if matches!(&result, Err(super::StoreLineError::Write(error)) if is_fatal(error))
                || matches!(&result, Err(super::StoreLineError::Disagrees(_)))
            {
                stop.store(true, Ordering::SeqCst);
            }
            ingest.report_store_line(line, &header, issued, result)
        }
    }
}

/// Flushes the report when no further line is ready (`idle`).
fn flush_if_idle(ingest: &mut Ingest, idle: bool) -> Result<(), Failure> {
    if idle {
        ingest.flush_report()
    } else {
        Ok(())
    }
}

/// Reads, parses, writes and reports every line. Returns the number of lines read and the
/// error that stopped the run, if one did.
pub(super) fn run(
    ingest: &mut Ingest,
    mut reader: LineReader<Box<dyn BufRead + Send>>,
    input_name: &str,
    default_kind: VersionKind,
    max_line_bytes: usize,
    workers: usize,
) -> (u64, Option<String>) {
    let writer = ingest
        .store
        .writer_with(WriterOptions::for_store(&ingest.store).max_batch_ops(ingest.batch_size));
    let budget = Budget::default();
    let stop = AtomicBool::new(false);
    let (job_queue, jobs) = bounded::<Job>(workers * 4);
    let (slot_queue, slots) = bounded::<Slot>(MAX_LINES_IN_FLIGHT);
    let (done_queue, done) = bounded::<Done>(MAX_LINES_IN_FLIGHT);
    let mut fatal: Option<String> = None;

    let lines_read = std::thread::scope(|scope| {
        let reader_thread = scope.spawn(|| {
            let job_queue = job_queue;
            let slot_queue = slot_queue;
            let mut line: u64 = 0;
            loop {
                if stop.load(Ordering::SeqCst) {
                    return (line, None);
                }
                let mut text = Vec::new();
                let read = match reader.read_line(&mut text) {
                    Ok(Some(read)) => read,
                    Ok(None) => return (line, None),
                    Err(e) => return (line, Some(read_error(input_name, line, &e))),
                };
                line += 1;
                let bytes = text.len();
                budget.acquire(bytes);
                let (reply, parsed) = bounded(1);
                let queued = match read {
                    ReadLine::TooLong { bytes } => reply
                        .send(Parsed::Rejected(too_long(bytes, max_line_bytes)))
                        .is_ok(),
                    ReadLine::Complete if jsonl::is_blank(&text) => {
                        reply.send(Parsed::Blank).is_ok()
                    }
                    ReadLine::Complete => job_queue.send(Job { text, reply }).is_ok(),
                };
                let slot = Slot {
                    line,
                    bytes,
                    parsed,
                };
                if !queued || slot_queue.send(slot).is_err() {
                    return (line, None);
                }
            }
        });
        for _ in 0..workers {
            let jobs = jobs.clone();
            scope.spawn(move || parse_jobs(jobs, default_kind));
        }
        drop(jobs);
        let submitter = writer.clone();
        let store = ingest.store.clone();
        scope.spawn(move || submit_in_order(slots, done_queue, &submitter, &store));

        // The reporter: input order, each line once its outcome is committed.
        while let Ok(Done {
            line,
            bytes,
            submitted,
        }) = done.recv()
        {
            ingest.progress.inc(1);
            let reported = report(ingest, line, submitted, &stop, &mut fatal);
            // Nothing more is ready: what was reported goes out now, so that a consumer can
            // acknowledge it upstream while the run goes on.
            let reported = reported.and_then(|()| flush_if_idle(ingest, done.is_empty()));
            if let Err(Failure(message)) = reported {
                stop.store(true, Ordering::SeqCst);
                fatal.get_or_insert(message);
            }
            budget.release(bytes);
        }
        reader_thread.join().unwrap_or_else(|_| {
            (
                0,
                Some("the input reader thread panicked; see above".to_string()),
            )
        })
    });
    writer.shutdown();
    let (lines, read_failure) = lines_read;
    if let Some(message) = read_failure {
        fatal.get_or_insert(message);
    }
    (lines, fatal)
}
