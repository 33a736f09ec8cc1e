//! The shared harness of the fuzz targets (`fuzz/`) and of the crash, fault and corruption
//! tests: a simulated disk with fault injection and power loss, a reference model of the
//! guard, and one entry point per fuzz target. Not part of the stable API.
//!
//! It lives in the library because the row decoders it drives are crate-private, and because
//! the fuzz targets and `tests/storage/fuzz_corpus_replay.rs` must run exactly the same code: the
//! fuzzer
//! when cargo-fuzz and a nightly toolchain are there, the replay test always.
//!
//! Every entry point returns `Err(description)` when a guarantee is broken; a panic anywhere
//! under it is a bug too (the callers run it under `catch_unwind` or libFuzzer).
//!
//! Compiled only for the crate's own unit tests and under the doc-hidden `testkit` feature,
//! which the integration tests, benches and `fuzz/` turn on (the crate is its own
//! dev-dependency with that feature); a user's build never contains it.

mod backdoor;
mod disk;
mod fuzz;
mod hooks;
mod kernels;
mod model;
#[cfg(feature = "postgres")]
mod postgres;
mod rng;

pub use backdoor::*;
pub use disk::*;
pub use fuzz::*;
pub use kernels::*;
pub use model::*;
#[cfg(feature = "postgres")]
pub use postgres::*;
pub use rng::*;
