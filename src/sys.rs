//! The crate's calls into the operating system through `libc`: every `unsafe` block outside
//! [`crate::simd`], behind safe functions.
//!
//! Safety contract: each call here is a hint or a best-effort request (a thread's
//! scheduling priority, how pages are backed, handing freed allocator memory back). None
//! reads or writes memory of the program, none has a precondition a caller could break,
//! and a failure, reported through the return value, is ignored: the program is correct
//! whether or not the request took effect. Each `unsafe` block states this at its site.

#![allow(unsafe_code)]

/// Lowers the calling thread's scheduling priority to the nice value `nice`. Linux only
/// (elsewhere `setpriority` would apply to the whole process); best effort.
pub(crate) fn lower_thread_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` has no preconditions; `setpriority` with `PRIO_PROCESS` and a
        // thread id changes only that thread's nice value (Linux's per-thread semantics)
        // and reports failure through its return value, which is ignored: a thread that
        // keeps its priority is still correct.
        unsafe {
            let tid = libc::gettid();
            libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Asks Linux to back the `capacity` items allocated at `ptr` with transparent huge pages
/// (2 MiB) where the system allows them (`madvise` mode, the usual default): a traversal
/// reads the vectors, codes and links of scattered slots, and with 4 KiB pages nearly every
/// one of those reads also misses the TLB.
/// Called right after an array is allocated or grown and before it is filled, so the pages
/// are huge from their first fault. Only the whole 2 MiB pages inside the allocation are
/// advised; smaller arrays, other systems, and a refusal leave it as it was.
pub(crate) fn advise_huge_pages<T>(ptr: *const T, capacity: usize) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = ptr as usize;
        let Some(end) = capacity
            .checked_mul(std::mem::size_of::<T>())
            .and_then(|bytes| start.checked_add(bytes))
        else {
            return;
        };
        let Some(first) = start.checked_next_multiple_of(HUGE) else {
            return;
        };
        let last = end / HUGE * HUGE;
        if first < last {
            // SAFETY: `[first, last)` is page-aligned, as `madvise` requires, and (callers pass
            // their own allocation) inside the allocation at `ptr`. MADV_HUGEPAGE changes how
            // the kernel backs those pages, never what they hold, and its failure (an
            // unmapped range included) is harmless.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, capacity);
}

/// Hands the memory glibc's allocator holds free (in every arena, not only the heap's top)
/// back to the system (`malloc_trim(0)`); it frees nothing in use. Other targets: nothing.
pub(crate) fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` only releases memory glibc's allocator holds free; it is
    // thread-safe (each arena is locked while trimmed) and has no precondition.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Allocations of at least this many bytes are mapped on their own once a budgeted index
/// loads (see [`bound_large_allocations`]).
const LARGE_ALLOCATION: i32 = 1 << 20;

/// Has glibc's allocator map every allocation of at least [`LARGE_ALLOCATION`] bytes on its
/// own, for the rest of the process (`M_MMAP_THRESHOLD`): such a block goes back to the
/// system as soon as it is freed, and grows in place (`mremap`) instead of by a copy. By
/// default glibc raises that threshold as large blocks are freed (up to 32 MiB), after which
/// a budgeted index's arrays, its training sample and its load's batches come from the heap:
/// freed, they stay resident beside the next index; grown, both copies are resident at
/// once. Called when a budgeted store opens and when a budgeted index loads; takes effect
/// once per process. Other targets: nothing.
pub(crate) fn bound_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: `mallopt` only sets a tuning parameter of glibc's allocator (under its
            // own lock; blocks already allocated keep how they were made) and reports failure
            // through its return value, which is ignored: the allocator is correct with
            // either threshold.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, LARGE_ALLOCATION);
            }
        });
    }
}
