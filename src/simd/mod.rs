//! The crate's SIMD code: every `unsafe` block of its computation, behind safe functions.
//!
//! - [`floats`]: the `f32` distance kernels (a dot product, a squared Euclidean distance,
//!   the exact scan's block kernel), compiled for the baseline and again with AVX2.
//! - [`codes`]: the kernels over 4-bit codes the graph's traversal reads, likewise.
//! - [`ascii`]: the whitespace, alphanumeric and upper-case classes of 64 ASCII bytes, with
//!   SSE2.
//! - [`prefetch`]: a cache prefetch hint.
//! - `matmul` (feature `minilm`): MiniLM's matrix products, one call into `gemm`.
//!
//! Safety contract, which every `unsafe` block here upholds and states at its site:
//! - A function compiled with `#[target_feature(enable = "avx2")]` is called only after
//!   `is_x86_feature_detected!("avx2")` returned true in the same function, or through a
//!   function pointer handed out only after that test; SSE2 is part of every x86_64 target.
//! - An unaligned load (`_mm*_loadu_*`) or store (`_mm*_storeu_*`) reads or writes only
//!   bytes inside the slice it was given (each site states the bounds); none needs
//!   alignment.
//! - A prefetch reads nothing into the program and cannot fault, whatever its address.
//! - A `gemm` call is given views whose every reached element is inside its slice (asserted
//!   before the call), and an output that is borrowed mutably and overlaps no input.
//!
//! The safe functions have no precondition a caller could break: a short or empty slice
//! gives a short result, never an out-of-bounds access. Each kernel's AVX2 copy returns the
//! bits of its baseline body (the same operations in the same order; the tests below hold
//! them equal), so which one runs changes no result.

#![allow(unsafe_code)]

pub(crate) mod ascii;
pub(crate) mod codes;
pub(crate) mod floats;
#[cfg(feature = "minilm")]
pub(crate) mod matmul;
mod prefetch;

pub(crate) use prefetch::prefetch_lines;
