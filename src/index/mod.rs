//! The derived ANN index (work in progress).
