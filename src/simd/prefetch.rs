//! A cache prefetch hint.

/// Asks the CPU to start loading the first `max_lines` cache lines (64 bytes) that `items`
/// spans, counted from the line holding its first byte (an item seldom starts on a line: a
/// 384-byte code spans 7 lines, not 6, wherever the array's start is 16 bytes past one).
/// A hint only: it reads nothing into the program and changes no result.
#[inline(always)]
pub(crate) fn prefetch_lines<T>(items: &[T], max_lines: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        let start = items.as_ptr();
        let first = start as usize & !63;
        let end = start as usize + std::mem::size_of_val(items);
        let mut line = first;
        let mut asked = 0;
        while line < end && asked < max_lines {
            // SAFETY: `_mm_prefetch` only hints the cache: it reads nothing into the
            // program and never faults, whatever the address (here a line holding some of
            // `items`), and SSE, its target feature, is part of the x86_64 baseline.
            unsafe {
                std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                    start
                        .cast::<i8>()
                        .wrapping_add(line.wrapping_sub(start as usize)),
                )
            };
            line += 64;
            asked += 1;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, max_lines);
}
