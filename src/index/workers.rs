//! Where the index's heavy work runs.
//!
//! Graph inserts for background builds and for the absorber, and the absorber's
//! reachability walk, run on a rayon pool one thread smaller than the machine, so a graph
//! build never takes the core a committer needs; its threads also run at a lower
//! scheduling priority ([`BACKGROUND_NICE`]): when ingestion saturates the cores, writes
//! win, and the index catches up when it pauses (new vectors are scored exactly
//! meanwhile, so searches stay complete).
//!
//! Invariant: nothing runs on the low-priority pool while holding a lock that a writer, the
//! index applier or a search waits for (`mutation`, the exact store's lock): a preempted
//! low-priority holder would stall them all (priority inversion). Such sections run on the
//! calling thread at its own priority; the pool gets only the lock-free parts.

/// Where a piece of index work runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Workers {
    /// The low-priority background pool.
    Background,
    /// The calling thread (and rayon's global pool for parallel inserts): every core, at
    /// the caller's priority. `Store::build_index` and tests.
    Foreground,
}

impl Workers {
    /// Runs `work` where `self` says.
    pub(crate) fn run<R: Send>(self, work: impl FnOnce() -> R + Send) -> R {
        match (self, background_pool()) {
            (Workers::Background, Some(pool)) => pool.install(work),
            _ => work(),
        }
    }
}

/// The pool, made on first use (`None` if the threads could not be started: the work
/// then runs on the calling thread).
fn background_pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .thread_name(|i| format!("ratchetdb-index-{i}"))
            .start_handler(|_| lower_thread_priority())
            .build()
            .ok()
    })
    .as_ref()
}

/// The nice value of the pool's threads: about a tenth of a normal thread's CPU share when
/// both want the same core, not starved.
const BACKGROUND_NICE: i32 = 10;

/// Lowers the calling thread's scheduling priority to [`BACKGROUND_NICE`]. Linux only
/// (elsewhere `setpriority` would apply to the whole process); best effort.
fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` has no preconditions; `setpriority` with `PRIO_PROCESS` and a
        // thread id changes only that thread's nice value (Linux's per-thread semantics)
        // and reports failure through its return value, which is ignored: a thread that
        // keeps its priority is still correct.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, BACKGROUND_NICE);
        }
    }
}
