//! Matrix products for MiniLM's encoder (`embed/encoder.rs`): one call into `gemm` over
//! strided views whose reach is checked before the call.

/// A strided view of a matrix in a slice.
pub(crate) struct MatRef<'a> {
    pub(crate) data: &'a [f32],
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) row_stride: usize,
    pub(crate) col_stride: usize,
}

impl MatRef<'_> {
    /// The index one past the last element the view reaches (0 for an empty view).
    fn reach(&self) -> usize {
        if self.rows == 0 || self.cols == 0 {
            0
        } else {
            (self.rows - 1) * self.row_stride + (self.cols - 1) * self.col_stride + 1
        }
    }
}

/// `out = (accumulate ? out : 0) + scale · a · b`, `out` row-major with `out_row_stride`
/// (and `out_col_stride`); on rayon's pool when `parallel`, else on this thread.
///
/// Panics if a view reaches beyond its slice or the shapes disagree: the encoder's own
/// buffers are sized for its calls, so that is a bug here, never bad input.
#[allow(clippy::too_many_arguments)]
pub(crate) fn matmul(
    a: MatRef<'_>,
    b: MatRef<'_>,
    out: &mut [f32],
    out_row_stride: usize,
    out_col_stride: usize,
    scale: f32,
    accumulate: bool,
    parallel: bool,
) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(b.rows, k, "inner dimensions differ");
    assert!(
        a.reach() <= a.data.len() && b.reach() <= b.data.len(),
        "view out of bounds"
    );
    let out_reach = if m == 0 || n == 0 {
        0
    } else {
        (m - 1) * out_row_stride + (n - 1) * out_col_stride + 1
    };
    assert!(out_reach <= out.len(), "output out of bounds");
    if m == 0 || n == 0 {
        return;
    }
    let threads = rayon::current_num_threads();
    let parallelism = if parallel && threads > 1 {
        gemm::Parallelism::Rayon(threads)
    } else {
        gemm::Parallelism::None
    };
    // SAFETY: every element the three views reach is inside its slice (asserted above), the
    // output is borrowed mutably for the call and does not overlap the inputs (they are
    // shared borrows), and gemm reads and writes only within the given shapes and strides.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            out.as_mut_ptr(),
            out_col_stride as isize,
            out_row_stride as isize,
            accumulate,
            a.data.as_ptr(),
            a.col_stride as isize,
            a.row_stride as isize,
            b.data.as_ptr(),
            b.col_stride as isize,
            b.row_stride as isize,
            1.0,
            scale,
            false,
            false,
            false,
            parallelism,
        );
    }
}
