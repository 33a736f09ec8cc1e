//! One napi async task type for every read: a closure run on libuv's thread pool, its value
//! handed back to JavaScript.

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{Env, Result, Task};

/// A closure to run off the event loop.
pub struct Job<T> {
    work: Option<Box<dyn FnOnce() -> Result<T> + Send>>,
}

impl<T> Job<T> {
    /// The job that runs `work`.
    pub fn new(work: impl FnOnce() -> Result<T> + Send + 'static) -> Job<T> {
        Job {
            work: Some(Box::new(work)),
        }
    }
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for Job<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> Result<T> {
        match self.work.take() {
            Some(work) => work(),
            None => Err(crate::errors::internal("a task ran twice")),
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> Result<T> {
        Ok(output)
    }
}

/// A JSON value handed to JavaScript as the object (or array, string, ...) it describes.
pub struct Json(pub serde_json::Value);

impl TypeName for Json {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> napi::ValueType {
        napi::ValueType::Unknown
    }
}

impl ToNapiValue for Json {
    /// # Safety
    /// As [`ToNapiValue::to_napi_value`]: `env` is the live environment napi passed in.
    unsafe fn to_napi_value(
        env: napi::sys::napi_env,
        value: Json,
    ) -> Result<napi::sys::napi_value> {
        // SAFETY: forwarded unchanged from napi's own call, which guarantees `env`.
        unsafe { serde_json::Value::to_napi_value(env, value.0) }
    }
}
