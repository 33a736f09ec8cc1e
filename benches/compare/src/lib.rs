//! ratchetdb's benchmarks beside SQLite's: the benches are in `benches/`; this library is
//! empty.
