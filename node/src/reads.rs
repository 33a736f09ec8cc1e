//! Searches off the event loop on the addon's own reader threads, each result handed back
//! through the store's threadsafe function (`setCompleter`), which `index.js` turns into the
//! settled promise.
//!
//! Cheaper per call than a napi async task on libuv's pool: no async resource per call, and
//! a reader thread that has just finished a search keeps polling the queue for a short while
//! (yielding its core between polls) before it sleeps, so a caller's next search rarely
//! waits for a thread to wake.

use crate::errors::internal;
use crossbeam_channel::{unbounded, Receiver, Sender};
use napi::bindgen_prelude::FnArgs;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::Status;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// What a completer receives: the read's id, its text (JSON, or
/// [`crate::convert::hits_compact`]'s for hits), or its error's tagged message.
pub type Settled = FnArgs<(u32, Option<String>, Option<String>)>;

/// A store's threadsafe function settling its reads (weak: it keeps the event loop alive only
/// while `index.js` holds it referenced, i.e. while a read is in flight).
pub type Completer = ThreadsafeFunction<Settled, (), Settled, Status, false, true>;

/// How long a reader thread polls for the next search before it sleeps.
const POLL: Duration = Duration::from_micros(100);

struct ReadJob {
    id: u32,
    run: Box<dyn FnOnce() -> napi::Result<String> + Send>,
    completer: Arc<Completer>,
}

static READERS: OnceLock<Option<Sender<ReadJob>>> = OnceLock::new();

fn readers() -> Option<&'static Sender<ReadJob>> {
    READERS
        .get_or_init(|| {
            let (send, receive) = unbounded::<ReadJob>();
            let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 4));
            let mut started = 0;
            for i in 0..threads {
                let receive = receive.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("ratchetdb-node-read-{i}"))
                    .spawn(move || read_loop(&receive));
                if spawned.is_ok() {
                    started += 1;
                }
            }
            (started > 0).then_some(send)
        })
        .as_ref()
}

fn next_job(receive: &Receiver<ReadJob>) -> Option<ReadJob> {
    if let Ok(job) = receive.try_recv() {
        return Some(job);
    }
    let until = Instant::now() + POLL;
    while Instant::now() < until {
        if let Ok(job) = receive.try_recv() {
            return Some(job);
        }
        std::thread::yield_now();
    }
    receive.recv().ok()
}

fn read_loop(receive: &Receiver<ReadJob>) {
    while let Some(job) = next_job(receive) {
        let settled = match (job.run)() {
            Ok(json) => (job.id, Some(json), None),
            Err(error) => (job.id, None, Some(error.reason.clone())),
        };
        job.completer
            .call(settled.into(), ThreadsafeFunctionCallMode::NonBlocking);
    }
}

/// Runs `run` on a reader thread; its result settles read `id` through `completer`.
pub fn submit(
    id: u32,
    completer: Arc<Completer>,
    run: impl FnOnce() -> napi::Result<String> + Send + 'static,
) -> napi::Result<()> {
    let job = ReadJob {
        id,
        run: Box::new(run),
        completer,
    };
    readers()
        .ok_or_else(|| internal("cannot start the reader threads"))?
        .send(job)
        .map_err(|_| internal("the reader threads stopped"))
}

/// Yields the calling thread's core to another runnable thread (`sched_yield`): each turn of
/// the event loop's spin while a search is in flight (`index.js`), so that on a busy machine
/// the spin does not keep the search's own thread from a core.
#[napi_derive::napi]
pub fn yield_now() {
    std::thread::yield_now();
}
