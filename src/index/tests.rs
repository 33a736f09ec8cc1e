//! Tests of the VectorIndex facade.
