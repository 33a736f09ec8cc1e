//! The `ratchetdb._ratchetdb` extension module: ratchetdb for Python (PyO3, stable ABI for
//! CPython >= 3.9). The Python package `ratchetdb` (python/python/ratchetdb) re-exports it
//! and adds the LangChain and LlamaIndex stores.

#![deny(clippy::unwrap_used, clippy::expect_used)]

mod convert;
mod embed;
mod errors;
mod fork;
mod store;
mod types;

use pyo3::prelude::*;

#[pymodule]
fn _ratchetdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<store::PyStore>()?;
    m.add_class::<embed::PyEmbedder>()?;
    m.add_class::<embed::PyHashingEmbedder>()?;
    m.add_class::<embed::PyMiniLm>()?;
    m.add_class::<store::Export>()?;
    m.add_class::<convert::Ticket>()?;
    m.add_class::<types::Outcome>()?;
    m.add_class::<types::RetainOutcome>()?;
    m.add_class::<types::Hit>()?;
    m.add_class::<types::VerifyReport>()?;
    m.add_function(wrap_pyfunction!(store::matches, m)?)?;
    errors::register(m)?;
    fork::register(m)?;
    Ok(())
}
