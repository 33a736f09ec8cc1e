//! `store.export()`: every document of one snapshot, streamed in pages.
//!
//! A thread reads the snapshot's documents in `(source, id)` order into a bounded channel;
//! each `next(n)` takes up to `n` of them off the event loop. At most a few pages are held
//! at once, whatever the store's size.

use crate::convert::{document_json, json_values};
use crate::errors::{from_read, internal};
use crate::task::{Job, Json};
use crossbeam_channel::{bounded, Receiver};
use napi::bindgen_prelude::AsyncTask;
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use std::sync::Arc;

type Item = napi::Result<Value>;

/// A page takes no document that would bring it past this many JSON values (but for its
/// first): napi's conversion refuses a value of more than 1,000,000, and a page of 256
/// documents of many chunks (their metadata, each vector a string) could pass that. A
/// document of more values than the limit alone still fails its page with napi's error.
const PAGE_VALUES: usize = 500_000;

/// The documents of one snapshot, read page by page.
#[napi]
pub struct NativeExport {
    documents: Arc<Mutex<Pages>>,
}

/// The documents still to hand over: the reading thread's channel, and a document taken off
/// it that would have taken its page past [`PAGE_VALUES`], which opens the next page.
struct Pages {
    receive: Receiver<Item>,
    held: Option<Value>,
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
            documents: Arc::new(Mutex::new(Pages {
                receive,
                held: None,
            })),
        })
    }
}

#[napi]
impl NativeExport {
    /// Up to `count` more documents, fewer where their values would pass [`PAGE_VALUES`]
    /// (a page holds at least one); an empty array when every document has been read.
    #[napi]
    pub fn next(&self, count: u32) -> AsyncTask<Job<Json>> {
        let documents = Arc::clone(&self.documents);
        AsyncTask::new(Job::new(move || {
            let mut pages = documents.lock();
            let mut page = Vec::new();
            let mut values = 1;
            while page.len() < count.max(1) as usize {
                let document = match pages.held.take() {
                    Some(document) => document,
                    None => match pages.receive.recv() {
                        Ok(item) => item?,
                        Err(_) => break,
                    },
                };
                let more = json_values(&document);
                if !page.is_empty() && values + more > PAGE_VALUES {
                    pages.held = Some(document);
                    break;
                }
                values += more;
                page.push(document);
            }
            Ok(Json(Value::Array(page)))
        }))
    }
}
