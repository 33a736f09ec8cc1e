//! `NativeStore`: one open store, its writes and its reads.

use crate::convert::{self, OpInput};
use crate::embedder::{
    embed_all, embed_missing, embed_spaces, embeds_default, lacks_vectors, NativeEmbedder,
};
use crate::errors::{closed, from_open, from_read, from_write, input, internal};
use crate::export::NativeExport;
use crate::reads::{self, Completer, Settled};
use crate::task::{Job, Json};
use crate::writes::{Deferred, Writes};
use napi::bindgen_prelude::{AsyncTask, Float32ArraySlice, Function, Object};
use napi::Env;
use napi_derive::napi;
use parking_lot::RwLock;
use ratchetdb::{
    Durability, Embedder, Filter, Fusion, Metric, Op, OpOutcome, Options, SearchOptions, Store,
    WriteError,
};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// How `Store.open` opens a store (every field optional).
#[napi(object)]
pub struct OpenOptions {
    /// The vectors' length (a new store takes it from its first vector when absent).
    pub dimension: Option<u32>,
    /// `cosine` (default), `l2` or `dot`.
    pub metric: Option<String>,
    /// The embedding model's name, recorded by a new store and checked by later opens.
    pub model: Option<String>,
    /// Open for reading only, beside a writer in another process or thread.
    pub read_only: Option<bool>,
    /// `immediate` (default: every commit is fsynced) or `none`.
    pub durability: Option<String>,
    /// How long an open waits for another writer to close the file, in milliseconds.
    pub wait_for_lock_ms: Option<f64>,
    /// Let read-only opens in other processes read beside this writer (default true).
    pub allow_readers: Option<bool>,
    /// Keep the full-text index (default true).
    pub text_index: Option<bool>,
    /// redb's page cache, in bytes.
    pub cache_size: Option<f64>,
    /// Bytes the vector index and the page cache may use together (`Options::memory_budget`).
    pub memory_budget: Option<f64>,
    /// Compact the file on close when much of it is free (default true).
    pub compact_on_close: Option<bool>,
    /// Refuse to create a store: the file must exist.
    pub must_exist: Option<bool>,
}

/// What a search takes besides its query and `k` (absent when only `k` is given).
#[napi(object)]
pub struct SearchInput {
    /// A filter on metadata (the filter language), or absent.
    pub r#where: Option<Value>,
    /// Only these sources.
    pub sources: Option<Vec<String>>,
    /// Scan every vector instead of the graph.
    pub exact: Option<bool>,
    /// The graph search's width.
    pub ef: Option<u32>,
    /// Under a memory budget: the candidates scored exactly on their vectors in the file.
    pub rerank: Option<u32>,
    /// Hybrid: reciprocal-rank fusion's k.
    pub rrf_k: Option<u32>,
    /// Hybrid: the vector ranking's weight in a weighted fusion, in [0, 1].
    pub vector_weight: Option<f64>,
    /// One hit per document (its best chunk): `k` distinct documents.
    pub per_document: Option<bool>,
    /// The vector space searched (absent: the active one).
    pub space: Option<String>,
}

struct Open {
    store: Store,
    writes: Option<Writes>,
}

/// An open store.
#[napi]
pub struct NativeStore {
    open: RwLock<Option<Open>>,
    path: String,
    /// What embeds chunks written without a vector and `searchQuery`'s questions.
    embedder: RwLock<Option<Arc<dyn Embedder>>>,
    /// What settles the searches (`setCompleter`).
    completer: RwLock<Option<Arc<Completer>>>,
}

fn options(given: &OpenOptions) -> napi::Result<Options> {
    let mut options = Options::default();
    if let Some(dimension) = given.dimension {
        options = options.dimension(dimension as usize);
    }
    if let Some(metric) = &given.metric {
        let parsed = Metric::parse(metric)
            .ok_or_else(|| input("metric", format!("{metric:?} is not cosine, l2 or dot")))?;
        options = options.metric(parsed);
    }
    if let Some(model) = &given.model {
        options = options.model(model.clone());
    }
    if let Some(durability) = &given.durability {
        options = options.durability(match durability.as_str() {
            "immediate" => Durability::Immediate,
            "none" => Durability::None,
            other => {
                return Err(input(
                    "durability",
                    format!("{other:?} is not immediate or none"),
                ))
            }
        });
    }
    if let Some(wait) = given.wait_for_lock_ms {
        if !(wait.is_finite() && wait >= 0.0) {
            return Err(input("waitForLockMs", "must be a non-negative number"));
        }
        options = options.wait_for_lock(duration_of_ms(wait));
    }
    if let Some(allowed) = given.allow_readers {
        options = options.allow_readers(allowed);
    }
    if let Some(enabled) = given.text_index {
        options = options.text_index(enabled);
    }
    if let Some(bytes) = given.cache_size {
        if !(bytes.is_finite() && bytes >= 0.0 && bytes <= usize::MAX as f64) {
            return Err(input("cacheSize", "must be a non-negative number of bytes"));
        }
        options = options.cache_size(bytes as usize);
    }
    if let Some(bytes) = given.memory_budget {
        if !(bytes.is_finite() && bytes >= 0.0 && bytes.fract() == 0.0 && bytes <= u64::MAX as f64)
        {
            return Err(input(
                "memoryBudget",
                "must be a non-negative whole number of bytes",
            ));
        }
        options = options.memory_budget(bytes as u64);
    }
    if let Some(enabled) = given.compact_on_close {
        options = options.compact_on_close(enabled);
    }
    if given.must_exist == Some(true) {
        options = options.must_exist();
    }
    Ok(options)
}

/// Opens (or creates) the store at `path`.
#[napi]
pub fn open(path: String, given: OpenOptions) -> napi::Result<AsyncTask<Job<NativeStore>>> {
    let read_only = given.read_only == Some(true);
    let options = options(&given)?;
    Ok(AsyncTask::new(Job::new(move || {
        let store = if read_only {
            Store::open_read_only_with(&path, options)
        } else {
            Store::open(&path, options)
        }
        .map_err(from_open)?;
        let writes = if store.is_read_only() {
            None
        } else {
            let writes = Writes::start(store.clone()).map_err(|error| {
                internal(&format!("cannot start the writer's threads: {error}"))
            })?;
            Some(writes)
        };
        Ok(NativeStore {
            open: RwLock::new(Some(Open { store, writes })),
            path,
            embedder: RwLock::new(None),
            completer: RwLock::new(None),
        })
    })))
}

fn search_options(given: Option<&SearchInput>) -> napi::Result<SearchOptions> {
    let Some(given) = given else {
        return Ok(SearchOptions::default());
    };
    let mut options = SearchOptions::default()
        .exact(given.exact == Some(true))
        .per_document(given.per_document == Some(true));
    if let Some(ef) = given.ef {
        options = options.ef(ef as usize);
    }
    if let Some(rerank) = given.rerank {
        options = options.rerank(rerank as usize);
    }
    if let Some(space) = &given.space {
        options = options.space(space.clone());
    }
    for source in given.sources.iter().flatten() {
        options = options.source(source.clone());
    }
    if let Some(filter) = &given.r#where {
        if !filter.is_null() {
            let filter = Filter::parse(filter).map_err(|error| {
                crate::errors::tagged("InputError", Some(&error.field), &error.to_string())
            })?;
            options = options.filter(filter);
        }
    }
    match (given.rrf_k, given.vector_weight) {
        (Some(_), Some(_)) => {
            return Err(input(
                "rrfK",
                "give rrfK (reciprocal-rank fusion) or vectorWeight (weighted), not both",
            ))
        }
        (Some(k), None) => options = options.fusion(Fusion::Rrf { k }),
        (None, Some(weight)) => {
            options = options.fusion(Fusion::Weighted {
                vector_weight: weight as f32,
            })
        }
        (None, None) => {}
    }
    Ok(options)
}

/// `Store::write_batch`, the upserts' chunks without a vector embedded first (except those
/// whose vector the store can reuse); an upsert whose reused vectors were gone at commit is
/// embedded in full and written again.
fn write_batch_embedding(
    store: &Store,
    embedder: &dyn Embedder,
    mut ops: Vec<Op>,
) -> napi::Result<Vec<Result<OpOutcome, WriteError>>> {
    let mut retries = Vec::new();
    let default = embeds_default(store, embedder);
    for (i, op) in ops.iter_mut().enumerate() {
        if let Op::Upsert(doc) = op {
            embed_spaces(store, embedder, doc)?;
            if default && lacks_vectors(doc) {
                embed_missing(store, embedder, doc, false)?;
                if lacks_vectors(doc) {
                    retries.push((i, doc.clone()));
                }
            }
        }
    }
    let mut results = store.write_batch(ops).map_err(from_write)?;
    for (i, mut doc) in retries {
        if let Some(result @ Err(WriteError::MissingVector { .. })) = results.get_mut(i) {
            embed_missing(store, embedder, &mut doc, true)?;
            *result = store.upsert(doc).map(OpOutcome::Document);
        }
    }
    Ok(results)
}

/// `options` with the space it searches pinned (the named one, else the active one: an
/// activation meanwhile does not change the space a question was embedded for), checked
/// against `embedder`: a space of another model or dimension is a `MismatchError` naming
/// `space`. An unknown space is left for the search to name.
fn space_for_question(
    store: &Store,
    options: &SearchOptions,
    embedder: &dyn Embedder,
) -> napi::Result<SearchOptions> {
    let mut options = options.clone();
    // A store without spaces (PostgreSQL) has only its default one.
    let Ok(spaces) = store.spaces() else {
        return Ok(options);
    };
    let wanted = options.space.clone();
    let Some(space) = spaces.into_iter().find(|s| match &wanted {
        Some(name) => s.name == *name,
        None => s.active,
    }) else {
        return Ok(options);
    };
    let (model, dimension) = if space.name == ratchetdb::DEFAULT_SPACE {
        (store.model().map(str::to_string), store.dimension())
    } else {
        (Some(space.model.clone()), space.dimension)
    };
    let agrees = model.as_deref().is_none_or(|m| m == embedder.name())
        && dimension.is_none_or(|d| d == embedder.dimension());
    if !agrees {
        return Err(crate::errors::tagged(
            "MismatchError",
            Some("space"),
            &format!(
                "the vector space {:?} holds vectors of {} ({} dimensions), but the store's \
                 embedder is {} ({} dimensions): search it with search(vector, {{ space }}), or \
                 open the store with that model's embedder",
                space.name,
                model.as_deref().unwrap_or("an unrecorded model"),
                dimension.map_or_else(|| "?".to_string(), |d| d.to_string()),
                embedder.name(),
                embedder.dimension()
            ),
        ));
    }
    options.space = Some(space.name);
    Ok(options)
}

/// The first vector space besides the default one whose model and dimension are
/// `embedder`'s (`None` on a store without spaces).
pub(crate) fn extra_space_of(store: &Store, embedder: &dyn Embedder) -> Option<String> {
    let spaces = store.spaces().ok()?;
    spaces
        .into_iter()
        // The default space first: after a promotion it is listed under the promoted
        // space's name, so it is skipped by position, not by name.
        .skip(1)
        .find(|s| s.model == embedder.name() && s.dimension == Some(embedder.dimension()))
        .map(|s| s.name)
}

impl NativeStore {
    /// Search `id` on a reader thread: `run` with the store, `k` and the options `given`
    /// describes, its hits handed to JavaScript as one compact text
    /// ([`convert::hits_compact`]).
    fn searching(
        &self,
        id: u32,
        k: u32,
        given: Option<SearchInput>,
        run: impl FnOnce(&Store, usize, &SearchOptions) -> napi::Result<Vec<ratchetdb::Hit>>
            + Send
            + 'static,
    ) -> napi::Result<()> {
        let store = self.store()?;
        let options = search_options(given.as_ref())?;
        self.reading(id, move || {
            let hits = run(&store, k as usize, &options)?;
            convert::hits_compact(&hits)
        })
    }

    /// Runs `run` on a reader thread; its text settles read `id` (`setCompleter`).
    fn reading(
        &self,
        id: u32,
        run: impl FnOnce() -> napi::Result<String> + Send + 'static,
    ) -> napi::Result<()> {
        let completer = self
            .completer
            .read()
            .clone()
            .ok_or_else(|| internal("no completer was set for this store's reads"))?;
        reads::submit(id, completer, run)
    }

    /// The store's embedder, or an `InputError` naming `field` (what the caller left out).
    fn embedder_for(&self, field: &str, what: &str) -> napi::Result<Arc<dyn Embedder>> {
        self.embedder.read().clone().ok_or_else(|| {
            input(
                field,
                format!("{what} (open the store with Store.open(path, {{ embedder }}))"),
            )
        })
    }

    fn store(&self) -> napi::Result<Store> {
        match &*self.open.read() {
            Some(open) => Ok(open.store.clone()),
            None => Err(closed(&self.path)),
        }
    }
}

#[napi]
impl NativeStore {
    /// The file's path (or the server's URL, its password removed).
    #[napi(getter)]
    pub fn path(&self) -> String {
        self.path.clone()
    }

    /// The store's vector length, once known.
    #[napi(getter)]
    pub fn dimension(&self) -> Option<u32> {
        self.store()
            .ok()
            .and_then(|store| store.dimension())
            .and_then(|d| u32::try_from(d).ok())
    }

    /// `cosine`, `l2` or `dot`.
    #[napi(getter)]
    pub fn metric(&self) -> napi::Result<String> {
        Ok(self.store()?.metric().as_str().to_string())
    }

    /// The recorded model name.
    #[napi(getter)]
    pub fn model(&self) -> napi::Result<Option<String>> {
        Ok(self.store()?.model().map(str::to_string))
    }

    /// Whether this store was opened read-only.
    #[napi(getter)]
    pub fn read_only(&self) -> napi::Result<bool> {
        Ok(self.store()?.is_read_only())
    }

    /// Whether the store is closed.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.open.read().is_none()
    }

    /// One guarded write (upsert, delete or retain) through the store's group-commit writer.
    #[napi(ts_return_type = "Promise<any>")]
    pub fn write<'env>(&self, env: &'env Env, op: OpInput) -> napi::Result<Object<'env>> {
        let (deferred, promise): (Deferred, Object<'env>) = env.create_deferred()?;
        let prepared = convert::op(op, "op");
        let guard = self.open.read();
        match (guard.as_ref(), prepared) {
            (_, Err(error)) => deferred.reject(error),
            (None, Ok(_)) => deferred.reject(closed(&self.path)),
            (
                Some(Open {
                    writes: None,
                    store,
                }),
                Ok(_),
            ) => deferred.reject(from_write(ratchetdb::WriteError::ReadOnly {
                path: store.path().to_path_buf(),
            })),
            (
                Some(Open {
                    writes: Some(writes),
                    ..
                }),
                Ok((op, version)),
            ) => writes.send(op, version, deferred, self.embedder.read().clone()),
        }
        Ok(promise)
    }

    /// Several operations in one transaction, each with its own outcome (or its error).
    #[napi(ts_return_type = "Promise<any[]>")]
    pub fn write_batch(&self, ops: Vec<OpInput>) -> napi::Result<AsyncTask<Job<Json>>> {
        let store = self.store()?;
        let embedder = self.embedder.read().clone();
        let mut converted = Vec::with_capacity(ops.len());
        let mut versions = Vec::with_capacity(ops.len());
        for (i, op) in ops.into_iter().enumerate() {
            let (op, version) = convert::op(op, &format!("ops[{i}]"))?;
            converted.push(op);
            versions.push(version);
        }
        Ok(AsyncTask::new(Job::new(move || {
            let results = match embedder {
                Some(embedder) => write_batch_embedding(&store, embedder.as_ref(), converted)?,
                None => store.write_batch(converted).map_err(from_write)?,
            };
            Ok(Json(Value::Array(
                results
                    .into_iter()
                    .zip(versions)
                    .map(|(result, version)| match result {
                        Ok(outcome) => convert::outcome_json(&outcome, version),
                        Err(error) => {
                            let error = from_write(error);
                            serde_json::json!({ "status": "error", "error": error.reason })
                        }
                    })
                    .collect(),
            )))
        })))
    }

    /// A persisted, strictly increasing version for sources that have none.
    #[napi]
    pub fn ticket(&self) -> napi::Result<AsyncTask<Job<Json>>> {
        let store = self.store()?;
        Ok(AsyncTask::new(Job::new(move || {
            let ticket = store.ticket().map_err(from_write)?;
            Ok(Json(convert::version_json(ticket)))
        })))
    }

    /// Sets the function that settles this store's searches: called on the event loop with
    /// `(id, text, error)` for each search, `text` its hits or `error` a tagged message.
    #[napi(
        ts_args_type = "callback: (id: number, hits: string | null, error: string | null) => void"
    )]
    pub fn set_completer(&self, callback: Function<Settled, ()>) -> napi::Result<()> {
        let completer: Completer = callback
            .build_threadsafe_function::<Settled>()
            .callee_handled::<false>()
            .weak::<true>()
            .build()?;
        *self.completer.write() = Some(Arc::new(completer));
        Ok(())
    }

    /// Keeps the event loop alive while searches are in flight (`true`), or no longer
    /// (`false`): `index.js` holds it from its first search in flight to its last.
    #[napi]
    pub fn hold(&self, env: &Env, held: bool) -> napi::Result<()> {
        if let Some(completer) = self.completer.read().as_ref() {
            // SAFETY: called on the event loop's thread with its live env; `raw()` is the
            // threadsafe function `completer` keeps alive.
            let status = unsafe {
                if held {
                    napi::sys::napi_ref_threadsafe_function(env.raw(), completer.raw())
                } else {
                    napi::sys::napi_unref_threadsafe_function(env.raw(), completer.raw())
                }
            };
            if status != napi::sys::Status::napi_ok {
                return Err(internal("cannot hold the event loop for a search"));
            }
        }
        Ok(())
    }

    /// Sets the embedder that embeds chunks written without a vector and `searchQuery`'s
    /// questions (`Store.open` checked that the store recorded its model and dimension, or
    /// that one of its vector spaces has them: `spaceOf`).
    #[napi]
    pub fn set_embedder(&self, embedder: &NativeEmbedder) {
        *self.embedder.write() = Some(embedder.shared());
    }

    /// The name of the first vector space besides the default one whose model and dimension
    /// are `embedder`'s, or null.
    #[napi]
    pub fn space_of(&self, embedder: &NativeEmbedder) -> napi::Result<Option<String>> {
        let store = self.store()?;
        Ok(extra_space_of(&store, embedder.shared().as_ref()))
    }

    /// Every vector space, the default one first, from one snapshot.
    #[napi]
    pub fn spaces(&self) -> napi::Result<AsyncTask<Job<Json>>> {
        let store = self.store()?;
        Ok(AsyncTask::new(Job::new(move || {
            let spaces = store.spaces().map_err(from_read)?;
            let list = spaces
                .into_iter()
                .map(|space| {
                    serde_json::json!({
                        "name": space.name,
                        "model": space.model,
                        "dimension": space.dimension,
                        "vectors": space.vectors,
                        "live_chunks": space.live_chunks,
                        "complete": space.is_complete(),
                        "active": space.active,
                    })
                })
                .collect();
            Ok(Json(Value::Array(list)))
        })))
    }

    /// The `k` live chunks nearest `vector` ([`convert::hits_compact`]).
    #[napi]
    pub fn search(
        &self,
        id: u32,
        vector: Float32ArraySlice,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        let vector = vector.to_vec();
        self.searching(id, k, given, move |store, k, options| {
            store.search(&vector, k, options).map_err(from_read)
        })
    }

    /// `search`, also giving the nanoseconds spent inside the Rust `Store::search` call, for
    /// the binding's cost per call (`benches/peers/node/overhead.mjs`): the call's wall time
    /// less that, measured on the same call ([`convert::timed_hits_compact`]).
    #[napi(js_name = "_searchTimed")]
    pub fn search_timed(
        &self,
        id: u32,
        vector: Float32ArraySlice,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        let store = self.store()?;
        let options = search_options(given.as_ref())?;
        let vector = vector.to_vec();
        self.reading(id, move || {
            let started = std::time::Instant::now();
            let hits = store
                .search(&vector, k as usize, &options)
                .map_err(from_read)?;
            let inner_ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            convert::timed_hits_compact(&hits, inner_ns)
        })
    }

    /// The `k` nearest live chunks of each query (rows of one flat array of `count` rows), as
    /// one text of one list per query ([`convert::hit_lists_compact`]).
    #[napi]
    pub fn search_many(
        &self,
        id: u32,
        vectors: Float32ArraySlice,
        count: u32,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        let store = self.store()?;
        let options = search_options(given.as_ref())?;
        let count = count as usize;
        if count == 0 || !vectors.len().is_multiple_of(count) {
            return Err(input("vectors", "every query must have the same length"));
        }
        // Regression (review): queries of no numbers passed the check above and split into
        // chunks of 0, which panics, on a reader thread whose promise then never settled.
        if vectors.is_empty() {
            return Err(input(
                "vectors[0]",
                "a query vector must hold at least one number",
            ));
        }
        let vectors = vectors.to_vec();
        self.reading(id, move || {
            let width = vectors.len() / count;
            let queries: Vec<&[f32]> = vectors.chunks(width).collect();
            let hits = store
                .search_many(&queries, k as usize, &options)
                .map_err(from_read)?;
            convert::hit_lists_compact(&hits)
        })
    }

    /// The `k` live chunks nearest the store's embedding of `question`.
    #[napi]
    pub fn search_query(
        &self,
        id: u32,
        question: String,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        let embedder = self.embedder_for(
            "embedder",
            "searchQuery embeds its question and needs an embedder",
        )?;
        self.searching(id, k, given, move |store, k, options| {
            let options = space_for_question(store, options, embedder.as_ref())?;
            let vector = embed_all(embedder.as_ref(), &[question.as_str()])?
                .pop()
                .ok_or_else(|| internal("the embedder returned no vector"))?;
            store.search(&vector, k, &options).map_err(from_read)
        })
    }

    /// The `k` live chunks that best match `query`'s words (BM25).
    #[napi]
    pub fn search_text(
        &self,
        id: u32,
        query: String,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        self.searching(id, k, given, move |store, k, options| {
            store.search_text(&query, k, options).map_err(from_read)
        })
    }

    /// The text and vector rankings of one snapshot, fused; without `vector`, the store's
    /// embedder embeds `query`.
    #[napi]
    pub fn search_hybrid(
        &self,
        id: u32,
        query: String,
        vector: Option<Float32ArraySlice>,
        k: u32,
        given: Option<SearchInput>,
    ) -> napi::Result<()> {
        let given_vector = vector.map(|v| v.to_vec());
        let embedder = match given_vector {
            Some(_) => None,
            None => Some(self.embedder_for(
                "vector",
                "is required when the store has no embedder to embed the query",
            )?),
        };
        self.searching(id, k, given, move |store, k, options| {
            let (vector, options) = match (given_vector, embedder) {
                (Some(vector), _) => (vector, options.clone()),
                (None, Some(embedder)) => {
                    let options = space_for_question(store, options, embedder.as_ref())?;
                    let vector = embed_all(embedder.as_ref(), &[query.as_str()])?
                        .pop()
                        .ok_or_else(|| internal("the embedder returned no vector"))?;
                    (vector, options)
                }
                (None, None) => return Err(input("vector", "is required")),
            };
            store
                .search_hybrid(&query, &vector, k, &options)
                .map_err(from_read)
        })
    }

    /// A document with its chunks (a tombstone: `deleted: true`), or null.
    #[napi]
    pub fn get(
        &self,
        source: String,
        id: String,
        vectors: bool,
    ) -> napi::Result<AsyncTask<Job<Option<Json>>>> {
        let store = self.store()?;
        Ok(AsyncTask::new(Job::new(move || {
            let doc = if vectors {
                let snapshot = store.snapshot().map_err(from_read)?;
                snapshot.get_with_vectors(&source, &id).map_err(from_read)?
            } else {
                store.get(&source, &id).map_err(from_read)?
            };
            Ok(doc.map(|doc| Json(convert::document_json(doc))))
        })))
    }

    /// Counters, totals and the most recent refusals, from one snapshot.
    #[napi]
    pub fn stats(&self) -> napi::Result<AsyncTask<Job<Json>>> {
        let store = self.store()?;
        Ok(AsyncTask::new(Job::new(move || {
            let stats = store.stats().map_err(from_read)?;
            serde_json::to_value(stats)
                .map(Json)
                .map_err(|e| internal(&e.to_string()))
        })))
    }

    /// Every invariant the rows can show, checked from one snapshot.
    #[napi]
    pub fn verify(&self) -> napi::Result<AsyncTask<Job<Json>>> {
        let store = self.store()?;
        Ok(AsyncTask::new(Job::new(move || {
            let report = store.verify().map_err(from_read)?;
            serde_json::to_value(report)
                .map(Json)
                .map_err(|e| internal(&e.to_string()))
        })))
    }

    /// Waits (up to `timeoutMs`) until the vector index covers the last commit.
    #[napi]
    pub fn wait_for_index(&self, timeout_ms: f64) -> napi::Result<AsyncTask<Job<bool>>> {
        let store = self.store()?;
        // Infinity waits for good (as long as a `Duration` can say).
        let timeout = if timeout_ms >= 0.0 {
            duration_of_ms(timeout_ms)
        } else {
            return Err(input("timeoutMs", "must be a non-negative number"));
        };
        Ok(AsyncTask::new(Job::new(move || {
            Ok(store.wait_for_index(timeout))
        })))
    }

    /// Every document of one snapshot, streamed.
    #[napi]
    pub fn export(&self, vectors: bool) -> napi::Result<NativeExport> {
        NativeExport::start(self.store()?, vectors)
    }

    /// Settles every write in flight, then closes the store (its file is released when the
    /// last read in flight ends).
    #[napi]
    pub fn close(&self) -> AsyncTask<Job<()>> {
        let taken = self.open.write().take();
        self.completer.write().take();
        AsyncTask::new(Job::new(move || {
            if let Some(mut open) = taken {
                if let Some(writes) = open.writes.as_mut() {
                    writes.stop();
                }
                drop(open);
            }
            Ok(())
        }))
    }
}

/// `ms` milliseconds (non-negative, not NaN) as a `Duration`: one too long for a `Duration`
/// (`1e30`, `Infinity`) is the longest there is, where `Duration::from_secs_f64` panicked and
/// the panic, inside napi's callback, aborted the process (a review's finding).
fn duration_of_ms(ms: f64) -> Duration {
    Duration::try_from_secs_f64(ms / 1000.0).unwrap_or(Duration::MAX)
}
