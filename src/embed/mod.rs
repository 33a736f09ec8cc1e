//! Embedders (work in progress).
