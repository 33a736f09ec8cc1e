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
    crate::sys::lower_thread_priority(BACKGROUND_NICE);
}

/// Work over at least this many points (a graph load's gather beside its link walk, the
/// snapshot's fingerprint check, the exact store's rebind) is split across two threads;
/// below it a thread costs more than it saves. In tests it is small, so that the index
/// tests (graphs of hundreds to thousands of points) run the split paths.
pub(crate) const PARALLEL_MIN: usize = if cfg!(test) { 64 } else { 1 << 16 };

/// Runs `a` on the calling thread and `b` on a scoped thread of its own, at once, and
/// returns both results (a panic in either is the caller's).
///
/// For work done while holding a lock that searches or writers wait for: neither rayon
/// pool is involved, so no pool thread blocked on that lock can leave the work unrun (a
/// search on rayon's global pool waits for the exact store's lock), and the helper runs at
/// the caller's priority, not the background pool's. Like `std::thread::scope`'s `spawn`,
/// it panics if the system cannot start a thread (the index load and the absorber contain
/// panics: the graph is then rebuilt, searches stay exact meanwhile).
pub(crate) fn join_threads<A, B: Send>(
    a: impl FnOnce() -> A,
    b: impl FnOnce() -> B + Send,
) -> (A, B) {
    std::thread::scope(|scope| {
        let helper = scope.spawn(b);
        let a = a();
        match helper.join() {
            Ok(b) => (a, b),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// `f` of every index in `0..n`, in order, computed in two halves at once (see
/// [`join_threads`]); on the caller alone below `min` (a thread costs more than small
/// work).
pub(crate) fn map_in_halves<T: Send>(
    n: usize,
    min: usize,
    f: impl Fn(usize) -> T + Sync,
) -> Vec<T> {
    if n < min {
        return (0..n).map(&f).collect();
    }
    let half = n / 2;
    let (mut first, second) = join_threads(
        || (0..half).map(&f).collect::<Vec<T>>(),
        || (half..n).map(&f).collect::<Vec<T>>(),
    );
    first.extend(second);
    first
}

/// Calls `f(state, i)` for every `i` in `0..n`, each once, on the calling thread and up to
/// one scoped thread per other core (see [`join_threads`]: no rayon pool, so work done
/// under a lock that searches wait for cannot be left unrun by pool threads blocked on it).
/// The indices are handed out one at a time, so uneven work balances; each thread makes its
/// own `state` with `init`. A thread the system cannot start leaves its share to the
/// others (the caller always takes part), so every index is still done.
pub(crate) fn for_each_on_threads<S>(
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) + Sync,
) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = init();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                break;
            }
            f(&mut state, i);
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
    let helpers = cores.min(n).saturating_sub(1);
    std::thread::scope(|scope| {
        let started: Vec<_> = (0..helpers)
            .filter_map(|_| {
                std::thread::Builder::new()
                    .name("ratchetdb-link".into())
                    .spawn_scoped(scope, work)
                    .ok()
            })
            .collect();
        work();
        for helper in started {
            if let Err(panic) = helper.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_keep_the_order_of_the_indices() {
        for n in [0, 1, 2, 7, 1000] {
            let mapped = map_in_halves(n, 0, |i| i * 3);
            assert_eq!(mapped, (0..n).map(|i| i * 3).collect::<Vec<_>>());
        }
        let small = map_in_halves(5, 100, |i| i);
        assert_eq!(small, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn every_index_is_done_once_on_threads() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        for n in [0, 1, 5, 1000] {
            let seen: Vec<AtomicUsize> = (0..n).map(|_| AtomicUsize::new(0)).collect();
            for_each_on_threads(
                n,
                || (),
                |_, i| {
                    seen[i].fetch_add(1, Ordering::Relaxed);
                },
            );
            assert!(seen.iter().all(|c| c.load(Ordering::Relaxed) == 1), "{n}");
        }
    }

    #[test]
    fn both_sides_of_a_join_run_and_return() {
        let words = [1u32, 2, 3];
        let len = words.len();
        let (a, b) = join_threads(|| len * 2, move || words.iter().sum::<u32>());
        assert_eq!((a, b), (6, 6));
    }
}
