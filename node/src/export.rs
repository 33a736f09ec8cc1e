//! `store.export()`: every document of one snapshot, streamed in pages.
//!
//! A thread reads the snapshot's documents in `(source, id)` order into a bounded channel;
//! each `next(n)` takes up to `n` of them off the event loop. At most a few pages are held
//! at once, whatever the store's size.

use crate::convert::document_json;
use crate::errors::{from_read, internal};
use crate::task::{Job, Json};
use crossbeam_channel::{bounded, Receiver};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;

type Item = napi::Result<Value>;

/// The documents of one snapshot, read page by page.
#[napi]
pub struct NativeExport {
    documents: Arc<Mutex<Receiver<Item>>>,
}

impl NativeExport {
    /// Starts reading `store`'s documents (with their vectors if `vectors`).
    pub fn start(store: ratchetdb::Store, vectors: bool) -> napi::Result<NativeExport> {
        let (send, receive) = bounded::<Item>(256);
        let snapshot = store.snapshot().map_err(from_read)?;
        std::thread::Builder::new()
            .name("ratchetdb-node-export".into())
            .spawn(move || {
                let documents = match snapshot.documents(vectors) {
                    Ok(documents) => documents,
                    Err(error) => {
                        let _ = send.send(Err(from_read(error)));
                        return;
                    }
                };
                for document in documents {
                    let item = document.map(document_json).map_err(from_read);
                    let failed = item.is_err();
                    if send.send(item).is_err() || failed {
                        return;
                    }
                }
            })
            .map_err(|error| internal(&format!("cannot start the export thread: {error}")))?;
        Ok(NativeExport {
            documents: Arc::new(Mutex::new(receive)),
        })
    }
}

#[napi]
impl NativeExport {
    /// Up to `count` more documents; an empty array when every document has been read.
    #[napi]
    pub fn next(&self, count: u32) -> AsyncTask<Job<Json>> {
        let documents = Arc::clone(&self.documents);
        AsyncTask::new(Job::new(move || {
            let documents = documents.lock();
            let mut page = Vec::new();
            while page.len() < count as usize {
                match documents.recv() {
                    Ok(item) => page.push(item?),
                    Err(_) => break,
                }
            }
            Ok(Json(Value::Array(page)))
        }))
    }
}
