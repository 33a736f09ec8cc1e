'use strict';
// The LangChain.js integration, built over whichever copy of @langchain/core the importer
// uses: `langchain.js` passes the CommonJS build, `langchain.mjs` the ES module build, so the
// classes here extend the same `VectorStore` the application's own LangChain code sees.
//
// Design (as the Python package's `ratchetdb.langchain`):
// - `addDocuments`/`addVectors`: each LangChain document is one ratchetdb document
//   `(source, id)` of one chunk, written at a store ticket (a later add of the same id replaces
//   it; a redelivery of the same content is a no-op).
// - `index()`: the chunks of one source document (grouped over the WHOLE input) are written
//   as ONE versioned ratchetdb document whose id is the source id, so a source split across
//   batches is never half-deleted or re-embedded.
// - A search hit's LangChain id is the ratchetdb id for position 0, `<id>#<position>` else.

const crypto = require('node:crypto');
const { Store, Embedder, InputError, DimensionMismatchError } = require('./index.js');

const DEFAULT_SOURCE = 'langchain';

const isPlainObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v)
  && !ArrayBuffer.isView(v) && !(v instanceof Date);

/** The LangChain id of a chunk: the document id for its first (or only) chunk, `<id>#<n>` else. */
function chunkId(docId, position) {
  return position === 0 ? docId : `${docId}#${position}`;
}

/** `[documentId, position]` of a chunk id `<id>#<n>` (n ≥ 1), or null for any other id. */
function chunkOf(id) {
  const match = /^(.*)#([1-9][0-9]*)$/s.exec(id);
  return match ? [match[1], Number(match[2])] : null;
}

// The stored chunk a LangChain id names when no document has that id: chunk `n` of the
// document `<id>` of an `index()`-written source (`<id>#<n>`), with that document; or null.
async function storedChunk(store, source, id) {
  const named = chunkOf(id);
  if (!named || !Number.isSafeInteger(named[1])) return null;
  const stored = await store.get(source, named[0]);
  if (!stored || stored.deleted) return null;
  const chunk = stored.chunks.find((c) => c.position === named[1]);
  return chunk ? { documentId: named[0], chunk } : null;
}

// JSON with object keys sorted, so equal documents hash equally whatever their key order.
function stableJson(value) {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`;
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson(value[k])}`).join(',')}}`;
  }
  if (typeof value === 'bigint') return JSON.stringify(value.toString());
  if (value === undefined || typeof value === 'function' || typeof value === 'symbol') return 'null';
  return JSON.stringify(value);
}

/** A document's own id when it has no source id: the SHA-256 of its text and metadata. */
function ownId(doc) {
  return crypto.createHash('sha256').update(stableJson([doc.pageContent, doc.metadata ?? {}])).digest('hex');
}

function sameVersion(a, b) {
  // (Timestamps, as reads give timestamp versions, by their microseconds.)
  if (typeof a?.micros === 'bigint' && typeof b?.micros === 'bigint') return a.micros === b.micros;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (a && typeof a === 'object' && b && typeof b === 'object') return a.value === b.value; // tickets
  return a === b;
}

function failed(results) {
  for (const result of results) if (result.status === 'error') throw result.error;
  return results;
}

function splitConfig(config, what) {
  if (config === undefined || config === null) config = {};
  if (!isPlainObject(config)) throw new InputError('config', `invalid config: ${what} takes an object { path | store, source, ...Store.open options }`);
  const { path, store, source = DEFAULT_SOURCE, ...storeOptions } = config;
  if (typeof source !== 'string' || source === '') throw new InputError('source', 'invalid source: must be a non-empty string');
  if (store !== undefined && store !== null) {
    if (!(store instanceof Store)) throw new InputError('store', 'invalid store: must be a ratchetdb Store (from Store.open)');
    if (path !== undefined) throw new InputError('path', 'invalid path: give path or store, not both');
    if (Object.keys(storeOptions).length > 0) {
      const key = Object.keys(storeOptions)[0];
      throw new InputError(key, `invalid ${key}: Store.open options need path, not an open store`);
    }
    return { store, source };
  }
  if (typeof path !== 'string') throw new InputError('path', `invalid path: ${what} needs path (a string) or store (an open Store)`);
  return { path, source, storeOptions };
}

function build({ VectorStore, VectorStoreRetriever, Document, maximalMarginalRelevance, Embeddings }) {
  /**
   * LangChain embeddings over a ratchetdb embedder (`new HashingEmbedder(dim)`,
   * `await MiniLM.load()`), computed off the event loop: usable as a `RatchetVectorStore`'s
   * (or any vector store's) embeddings.
   */
  class RatchetEmbeddings extends Embeddings {
    /**
     * @param embedder a ratchetdb `Embedder`
     * @param params LangChain's `EmbeddingsParams` (`maxConcurrency`, `maxRetries`)
     */
    constructor(embedder, params = {}) {
      super(params);
      if (!(embedder instanceof Embedder)) {
        throw new InputError('embedder', 'invalid embedder: must be a ratchetdb HashingEmbedder or MiniLM');
      }
      this.embedder = embedder;
    }

    /** The length of every vector. */
    get dimension() { return this.embedder.dimension; }

    /** The model name a store records for these vectors. */
    get model() { return this.embedder.model; }

    async embedDocuments(texts) {
      const vectors = await this.caller.call(() => this.embedder.embed(texts));
      return vectors.map((v) => Array.from(v));
    }

    async embedQuery(text) {
      const [vector] = await this.caller.call(() => this.embedder.embed([text]));
      return Array.from(vector);
    }
  }

  const RETRIEVER_SEARCH_TYPES = ['similarity', 'mmr', 'text', 'hybrid'];

  /**
   * A retriever over a `RatchetVectorStore`: LangChain's `'similarity'` and `'mmr'`, plus
   * `'text'` (BM25 over the chunks' words) and `'hybrid'` (text and vector rankings fused;
   * `searchKwargs: { rrfK, vectorWeight }`).
   */
  class RatchetRetriever extends VectorStoreRetriever {
    static lc_name() { return 'RatchetRetriever'; }

    constructor(fields) {
      const searchType = fields.searchType ?? 'similarity';
      if (!RETRIEVER_SEARCH_TYPES.includes(searchType)) {
        throw new InputError('searchType', `invalid searchType: ${JSON.stringify(searchType)} (expected one of: ${RETRIEVER_SEARCH_TYPES.join(', ')})`);
      }
      super(fields);
      this.searchType = searchType;
      if (searchType === 'hybrid' || searchType === 'mmr') this.searchKwargs = fields.searchKwargs;
    }

    async _getRelevantDocuments(query, runManager) {
      if (this.searchType === 'text') return this.vectorStore.textSearch(query, this.k, this.filter);
      if (this.searchType === 'hybrid') {
        return this.vectorStore.hybridSearch(query, this.k, this.filter, this.searchKwargs);
      }
      return super._getRelevantDocuments(query, runManager);
    }
  }

  /**
   * A LangChain vector store over one ratchetdb file. `filter` in the search methods is
   * ratchetdb's metadata filter (`{ lang: 'en', year: { $gte: 2020 } }`); scores are the
   * store's (cosine similarity by default: higher is closer).
   */
  class RatchetVectorStore extends VectorStore {
    _vectorstoreType() { return 'ratchetdb'; }

    /**
     * @param embeddings LangChain embeddings.
     * @param config `{ path, source?, ...Store.open options }` (opened on first use; prefer
     *   `await RatchetVectorStore.open(...)` to see an open error at once) or
     *   `{ store, source? }` (an open `Store`).
     */
    constructor(embeddings, config) {
      const parsed = splitConfig(config, 'RatchetVectorStore');
      super(embeddings, { path: parsed.path ?? parsed.store.path, source: parsed.source });
      this.source = parsed.source;
      if (parsed.store) {
        this.store = parsed.store;
        this._opening = Promise.resolve(parsed.store);
      } else {
        this.store = null;
        this._opening = Store.open(parsed.path, parsed.storeOptions).then((store) => {
          this.store = store;
          return store;
        });
        // Reported by the first call that needs the store, not as an unhandled rejection.
        this._opening.catch(() => {});
      }
    }

    /** Opens (creating when missing) the store and returns the vector store over it. */
    static async open(embeddings, config) {
      const vectorStore = new this(embeddings, config);
      await vectorStore._store();
      return vectorStore;
    }

    /** LangChain's name for `open`: a vector store over an existing (or new) file. */
    static async fromExistingIndex(embeddings, config) {
      return this.open(embeddings, config);
    }

    /** A new vector store holding `texts` (with `metadatas`: one object each, or one for all). */
    static async fromTexts(texts, metadatas, embeddings, config) {
      if (!Array.isArray(texts)) throw new InputError('texts', 'invalid texts: must be an array of strings');
      const docs = texts.map((pageContent, i) => new Document({
        pageContent,
        metadata: Array.isArray(metadatas) ? (metadatas[i] ?? {}) : (metadatas ?? {}),
      }));
      const { ids, ...rest } = config ?? {};
      return this.fromDocuments(docs, embeddings, { ...rest, ...(ids ? { ids } : {}) });
    }

    /** A new vector store holding `docs` (`config.ids` optional, else each `doc.id`). */
    static async fromDocuments(docs, embeddings, config) {
      const { ids, ...rest } = config ?? {};
      const vectorStore = await this.open(embeddings, rest);
      await vectorStore.addDocuments(docs, ids ? { ids } : undefined);
      return vectorStore;
    }

    /** The open store (waits for a `path` config's open). */
    async _store() {
      return this._opening;
    }

    /** Closes the underlying store. */
    async close() {
      await (await this._store()).close();
    }

    // ----- writing ---------------------------------------------------------------------

    /** Embeds and writes `documents`; returns their ids (`options.ids`, else `doc.id`, else new). */
    async addDocuments(documents, options) {
      if (!Array.isArray(documents)) throw new InputError('documents', 'invalid documents: must be an array of Documents');
      if (documents.length === 0) return [];
      documents.forEach((doc, i) => {
        if (!doc || typeof doc.pageContent !== 'string') {
          throw new InputError(`documents[${i}].pageContent`, `invalid documents[${i}].pageContent: must be a string`);
        }
      });
      const vectors = await this.embeddings.embedDocuments(documents.map((d) => d.pageContent));
      return this.addVectors(vectors, documents, options);
    }

    /**
     * Writes `documents` with their precomputed `vectors`, each as a ratchetdb document
     * `(source, id)` of one chunk, all at one store ticket in one transaction. Returns the ids.
     */
    async addVectors(vectors, documents, options = {}) {
      if (!Array.isArray(vectors)) throw new InputError('vectors', 'invalid vectors: must be an array of vectors');
      if (!Array.isArray(documents)) throw new InputError('documents', 'invalid documents: must be an array of Documents');
      if (vectors.length !== documents.length) {
        throw new InputError('vectors', `invalid vectors: ${vectors.length} vectors for ${documents.length} documents`);
      }
      if (documents.length === 0) return [];
      let given = options?.ids;
      if (given !== undefined && given !== null) {
        if (!Array.isArray(given) || given.length !== documents.length) {
          throw new InputError('ids', `invalid ids: must be an array of ${documents.length} strings (one per document)`);
        }
      } else {
        given = documents.map((doc) => doc?.id);
      }
      const ids = given.map((id, i) => {
        if (id === undefined || id === null || id === '') return crypto.randomUUID();
        if (typeof id !== 'string') throw new InputError(`ids[${i}]`, `invalid ids[${i}]: must be a string`);
        return id;
      });
      const store = await this._store();
      // A batch's operations are refused one by one: check what can be checked here first,
      // so a bad vector or metadata refuses the whole call before anything is written.
      const width = store.dimension ?? vectors[0]?.length;
      documents.forEach((doc, i) => {
        if (!doc || typeof doc.pageContent !== 'string') {
          throw new InputError(`documents[${i}].pageContent`, `invalid documents[${i}].pageContent: must be a string`);
        }
        if (doc.metadata !== undefined && doc.metadata !== null && !isPlainObject(doc.metadata)) {
          throw new InputError(`documents[${i}].metadata`, `invalid documents[${i}].metadata: must be a plain object`);
        }
        const v = vectors[i];
        if (!(Array.isArray(v) || v instanceof Float32Array || v instanceof Float64Array)) {
          throw new InputError(`vectors[${i}]`, `invalid vectors[${i}]: must be an array of numbers`);
        }
        if (v.length !== width) {
          throw new DimensionMismatchError(`vectors[${i}]`, `invalid vectors[${i}]: has ${v.length} numbers, expected ${width}`);
        }
        for (let j = 0; j < v.length; j++) {
          if (typeof v[j] !== 'number' || !Number.isFinite(v[j])) {
            throw new InputError(`vectors[${i}][${j}]`, `invalid vectors[${i}][${j}]: must be a finite number`);
          }
        }
      });
      // One id twice in a call: the last document wins (as a second call would).
      const last = new Map(ids.map((id, i) => [id, i]));
      const version = await store.ticket();
      const ops = [];
      documents.forEach((doc, i) => {
        if (last.get(ids[i]) !== i) return;
        ops.push({
          op: 'upsert',
          source: this.source,
          id: ids[i],
          version,
          chunks: [{ text: doc.pageContent, vector: vectors[i], meta: doc.metadata ?? {} }],
        });
      });
      failed(await store.writeBatch(ops));
      return ids;
    }

    /**
     * Deletes `{ ids }` (versioned tombstones at a new ticket), or with `{ deleteAll: true }`
     * every document of this vector store's source.
     */
    async delete(params = {}) {
      if (!isPlainObject(params)) throw new InputError('params', 'invalid params: must be { ids } or { deleteAll: true }');
      const store = await this._store();
      if (params.deleteAll === true) {
        if (params.ids !== undefined) throw new InputError('ids', 'invalid ids: give ids or deleteAll, not both');
        const outcome = await store.retain({ source: this.source, ids: [], version: await store.ticket() });
        if (outcome.status === 'skipped') throw new InputError('deleteAll', `the store refused the deletion (${outcome.reason})`);
        return;
      }
      if (!Array.isArray(params.ids)) throw new InputError('ids', 'invalid ids: delete takes { ids: [...] } (or { deleteAll: true })');
      params.ids.forEach((id, i) => {
        if (typeof id !== 'string') throw new InputError(`ids[${i}]`, `invalid ids[${i}]: must be a string`);
      });
      if (params.ids.length === 0) return;
      // Regression (review): a search hit's id `<id>#<n>` names one chunk of an
      // `index()`-written source, which is one document: deleting it wrote a tombstone for a
      // document `<id>#<n>` that never existed and left the chunk. Refused, before anything
      // is written; the source's own id deletes the whole source.
      for (const [i, id] of params.ids.entries()) {
        if (await store.get(this.source, id)) continue;
        const named = await storedChunk(store, this.source, id);
        if (named) {
          throw new InputError(`ids[${i}]`, `invalid ids[${i}]: ${JSON.stringify(id)} is chunk ${named.chunk.position} of the source ${JSON.stringify(named.documentId)}, which index() wrote as one document: delete the source (its id), or index() it again without the chunk`);
        }
      }
      const version = await store.ticket();
      failed(await store.writeBatch(params.ids.map((id) => ({ op: 'delete', source: this.source, id, version }))));
    }

    // ----- reading ---------------------------------------------------------------------

    /** The live documents with these ids (chunks of `index()`-written sources included). */
    async getByIds(ids) {
      if (!Array.isArray(ids)) throw new InputError('ids', 'invalid ids: must be an array of strings');
      const store = await this._store();
      const out = [];
      for (const id of ids) {
        const stored = await store.get(this.source, id);
        if (!stored) {
          // A chunk id of an `index()`-written source: that chunk.
          const named = await storedChunk(store, this.source, id);
          if (named) {
            out.push(new Document({ id, pageContent: named.chunk.text, metadata: named.chunk.meta ?? {} }));
          }
          continue;
        }
        if (stored.deleted) continue;
        for (const chunk of stored.chunks) {
          out.push(new Document({ id: chunkId(id, chunk.position), pageContent: chunk.text, metadata: chunk.meta ?? {} }));
        }
      }
      return out;
    }

    _toDocument(hit) {
      return new Document({ id: chunkId(hit.id, hit.position), pageContent: hit.text, metadata: hit.meta ?? {} });
    }

    // The store holds no document of this source yet: nothing matches.
    async _hits(search) {
      try {
        return await search(await this._store());
      } catch (error) {
        if (error instanceof InputError && typeof error.field === 'string' && error.field.startsWith('sources')) return [];
        throw error;
      }
    }

    /** The `k` live chunks nearest `query` (a vector), with the store's scores. */
    async similaritySearchVectorWithScore(query, k = 4, filter = undefined) {
      const hits = await this._hits((store) => store.search(query, { k, where: filter ?? undefined, sources: [this.source] }));
      return hits.map((hit) => [this._toDocument(hit), hit.score]);
    }

    /** The `k` live chunks nearest `query` (a vector). */
    async similaritySearchByVector(query, k = 4, filter = undefined) {
      return (await this.similaritySearchVectorWithScore(query, k, filter)).map(([doc]) => doc);
    }

    /**
     * `k` chunks chosen for both similarity to `query` and diversity among themselves:
     * `fetchK` candidates are read with their stored vectors and ranked by
     * `maximalMarginalRelevance` (`lambda` 1 = similarity only, 0 = diversity only).
     */
    async maxMarginalRelevanceSearch(query, options = {}) {
      const { k = 4, fetchK = 20, lambda = 0.5, filter } = options ?? {};
      const queryVector = await this.embeddings.embedQuery(query);
      const hits = await this._hits((store) => store.search(queryVector, {
        k: Math.max(fetchK, k), where: filter ?? undefined, sources: [this.source],
      }));
      if (hits.length === 0) return [];
      const store = await this._store();
      const docs = new Map();
      const candidates = [];
      for (const hit of hits) {
        if (!docs.has(hit.id)) docs.set(hit.id, await store.get(this.source, hit.id, { vectors: true }));
        const stored = docs.get(hit.id);
        // Revised or deleted since the search: that hit is superseded, leave it out.
        if (!stored || stored.deleted || !sameVersion(stored.version, hit.version)) continue;
        const chunk = stored.chunks.find((c) => c.position === hit.position);
        if (!chunk || !chunk.vector) continue;
        candidates.push({ hit, vector: Array.from(chunk.vector) });
      }
      const chosen = maximalMarginalRelevance(Array.from(queryVector), candidates.map((c) => c.vector), lambda, k);
      return chosen.map((i) => this._toDocument(candidates[i].hit));
    }

    /** The `k` live chunks whose words best match `query` (BM25), with their scores. */
    async textSearchWithScore(query, k = 4, filter = undefined) {
      const hits = await this._hits((store) => store.searchText(query, { k, where: filter ?? undefined, sources: [this.source] }));
      return hits.map((hit) => [this._toDocument(hit), hit.score]);
    }

    /** The `k` live chunks whose words best match `query` (BM25). */
    async textSearch(query, k = 4, filter = undefined) {
      return (await this.textSearchWithScore(query, k, filter)).map(([doc]) => doc);
    }

    /**
     * The text and vector rankings of `query` fused (reciprocal rank fusion, or
     * `{ vectorWeight }` for a weighted fusion; `{ rrfK }` tunes RRF), with the fused scores.
     */
    async hybridSearchWithScore(query, k = 4, filter = undefined, options = {}) {
      const queryVector = await this.embeddings.embedQuery(query);
      const { rrfK, vectorWeight } = options ?? {};
      const hits = await this._hits((store) => store.searchHybrid(query, queryVector, {
        k, where: filter ?? undefined, sources: [this.source], rrfK, vectorWeight,
      }));
      return hits.map((hit) => [this._toDocument(hit), hit.score]);
    }

    /** `hybridSearchWithScore` without the scores. */
    async hybridSearch(query, k = 4, filter = undefined, options = {}) {
      return (await this.hybridSearchWithScore(query, k, filter, options)).map(([doc]) => doc);
    }

    /**
     * A `RatchetRetriever`: `searchType` `'similarity'` (default), `'mmr'`, `'text'` or
     * `'hybrid'`; the arguments are `VectorStore.asRetriever`'s.
     */
    asRetriever(kOrFields, filter, callbacks, tags, metadata, verbose) {
      if (typeof kOrFields === 'number' || kOrFields === undefined || kOrFields === null) {
        return new RatchetRetriever({
          vectorStore: this, k: kOrFields ?? undefined, filter,
          tags: [...(tags ?? []), this._vectorstoreType()], metadata, verbose, callbacks,
        });
      }
      return new RatchetRetriever({
        vectorStore: this,
        k: kOrFields.k,
        filter: kOrFields.filter,
        tags: [...(kOrFields.tags ?? []), this._vectorstoreType()],
        metadata: kOrFields.metadata,
        verbose: kOrFields.verbose,
        callbacks: kOrFields.callbacks,
        searchType: kOrFields.searchType,
        searchKwargs: kOrFields.searchKwargs,
      });
    }
  }

  return { RatchetVectorStore, RatchetRetriever, RatchetEmbeddings, index };
}

const INDEX_OPTIONS = ['batchSize', 'cleanup', 'sourceIdKey', 'cleanupBatchSize'];

async function collect(docsSource) {
  if (docsSource && typeof docsSource.load === 'function' && !Array.isArray(docsSource)) return docsSource.load();
  if (Array.isArray(docsSource)) return docsSource;
  if (docsSource && (typeof docsSource[Symbol.asyncIterator] === 'function' || typeof docsSource[Symbol.iterator] === 'function')) {
    const out = [];
    for await (const doc of docsSource) out.push(doc);
    return out;
  }
  throw new InputError('docsSource', 'invalid docsSource: must be an array or iterable of Documents, or a document loader');
}

/**
 * The guarded replacement of LangChain's `index()` and record manager:
 * `index({ docsSource, vectorStore, options: { sourceIdKey, cleanup, batchSize } })`.
 *
 * The chunks of each source document (grouped by `sourceIdKey`, a metadata key or a function
 * of the document, over the WHOLE input) are written as one ratchetdb document whose id is
 * the source id, at one store ticket for the whole run: a source's revision replaces its
 * previous one whole, in one transaction, whatever `batchSize` is. Chunks whose text the
 * stored revision already holds reuse their vectors (not embedded again); a source whose
 * content is unchanged is only version-bumped.
 *
 * `cleanup`: `null`/`undefined` and `'incremental'` leave sources absent from this run alone
 * (a source present in the run always replaces its previous chunks); `'full'` also deletes
 * every document of the vector store's source that this run did not write. `batchSize` is
 * the number of chunks embedded per call and written per transaction (a source is never
 * split). A `recordManager`, if given, is not used: the store keeps the versions.
 *
 * Returns LangChain's counts, in chunks: `numAdded` (chunks of sources new to the store),
 * `numUpdated` (chunks written with a new vector into a source that existed), `numSkipped`
 * (chunks unchanged or whose vector was reused), `numDeleted` (chunks removed).
 */
async function index(args) {
  if (!isPlainObject(args)) throw new InputError('args', 'invalid args: index takes { docsSource, vectorStore, options }');
  const { docsSource, vectorStore, options = {} } = args;
  if (!vectorStore || typeof vectorStore._store !== 'function' || typeof vectorStore.source !== 'string') {
    throw new InputError('vectorStore', 'invalid vectorStore: must be a RatchetVectorStore');
  }
  if (!isPlainObject(options)) throw new InputError('options', 'invalid options: must be an object');
  for (const key of Object.keys(options)) {
    if (!INDEX_OPTIONS.includes(key)) {
      throw new InputError(`options.${key}`, `invalid options.${key}: not an option (expected one of: ${INDEX_OPTIONS.join(', ')})`);
    }
  }
  const { batchSize = 100, cleanup = null, sourceIdKey = 'source' } = options;
  if (![null, undefined, 'incremental', 'full'].includes(cleanup)) {
    throw new InputError('options.cleanup', `invalid options.cleanup: ${JSON.stringify(cleanup)} (expected null, 'incremental' or 'full')`);
  }
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new InputError('options.batchSize', 'invalid options.batchSize: must be a positive integer');
  }
  let sourceOf;
  if (typeof sourceIdKey === 'string') {
    sourceOf = (doc) => {
      const value = doc.metadata?.[sourceIdKey];
      return value === undefined || value === null ? null : String(value);
    };
  } else if (sourceIdKey === null) {
    sourceOf = () => null;
  } else if (typeof sourceIdKey === 'function') {
    sourceOf = (doc) => {
      const value = sourceIdKey(doc);
      return value === undefined || value === null ? null : String(value);
    };
  } else {
    throw new InputError('options.sourceIdKey', 'invalid options.sourceIdKey: must be a metadata key, a function of the document, or null');
  }

  // Group over the whole input first: batches never split a source.
  const docs = await collect(docsSource);
  const groups = new Map();
  docs.forEach((doc, n) => {
    if (!doc || typeof doc.pageContent !== 'string') {
      throw new InputError(`docsSource[${n}].pageContent`, `invalid docsSource[${n}].pageContent: must be a string`);
    }
    if (doc.metadata !== undefined && doc.metadata !== null && !isPlainObject(doc.metadata)) {
      throw new InputError(`docsSource[${n}].metadata`, `invalid docsSource[${n}].metadata: must be a plain object`);
    }
    let sourceId = sourceOf(doc);
    if (sourceId === null) {
      if (cleanup !== null && cleanup !== undefined) {
        throw new InputError(`docsSource[${n}]`, `invalid docsSource[${n}]: it has no source id (${typeof sourceIdKey === 'string' ? sourceIdKey : 'sourceIdKey'}); cleanup '${cleanup}' needs one for every document`);
      }
      sourceId = ownId(doc);
    }
    if (!groups.has(sourceId)) groups.set(sourceId, []);
    groups.get(sourceId).push(doc);
  });

  const store = await vectorStore._store();
  const source = vectorStore.source;
  const embeddings = vectorStore.embeddings;
  const version = await store.ticket();
  const counts = { numAdded: 0, numUpdated: 0, numSkipped: 0, numDeleted: 0 };

  let pending = [];
  let pendingChunks = 0;
  const flush = async () => {
    if (pending.length === 0) return;
    const batch = pending;
    pending = [];
    pendingChunks = 0;
    // Embed what the stored revisions lack, `batchSize` texts a call.
    const wanted = [];
    for (const group of batch) for (const position of group.toEmbed) wanted.push([group, position]);
    for (let start = 0; start < wanted.length; start += batchSize) {
      const slice = wanted.slice(start, start + batchSize);
      const vectors = await embeddings.embedDocuments(slice.map(([group, p]) => group.op.chunks[p].text));
      if (!Array.isArray(vectors) || vectors.length !== slice.length) {
        throw new InputError('embeddings', `invalid embeddings: embedDocuments returned ${Array.isArray(vectors) ? vectors.length : 'no'} vectors for ${slice.length} texts`);
      }
      // Checked before anything of the batch is written (its operations are refused one by one).
      vectors.forEach((v, i) => {
        const width = store.dimension ?? vectors[0]?.length;
        if (!v || typeof v.length !== 'number' || v.length !== width) {
          throw new DimensionMismatchError('embeddings', `invalid embeddings: embedDocuments returned a vector of ${v?.length} numbers, expected ${width}`);
        }
        for (let j = 0; j < v.length; j++) {
          if (typeof v[j] !== 'number' || !Number.isFinite(v[j])) {
            throw new InputError('embeddings', `invalid embeddings: embedDocuments returned ${v[j]} in a vector (of ${JSON.stringify(slice[i][0].op.chunks[slice[i][1]].text.slice(0, 40))})`);
          }
        }
      });
      slice.forEach(([group, p], i) => { group.op.chunks[p].vector = vectors[i]; });
    }
    // A text twice in one source was embedded once: its copies take that vector.
    for (const group of batch) {
      const chunks = group.op.chunks;
      group.copies.forEach((from, p) => { if (from !== null) chunks[p].vector = chunks[from].vector; });
    }
    const results = failed(await store.writeBatch(batch.map((group) => group.op)));
    results.forEach((result, i) => {
      const { op, existed } = batch[i];
      if (result.status === 'written') {
        counts[existed ? 'numUpdated' : 'numAdded'] += result.chunksWritten;
        counts.numSkipped += result.chunksReused;
        counts.numDeleted += result.chunksRemoved;
      } else {
        // 'unchanged' (only the version was raised) or 'skipped' (a newer revision is stored).
        counts.numSkipped += op.chunks.length;
      }
    });
  };

  // What is stored of each source, read a slice of sources at a time (reads run in parallel).
  const entries = [...groups];
  const storedOf = new Map();
  const READ_AHEAD = 64;
  const readAhead = async (from) => {
    const slice = entries.slice(from, from + READ_AHEAD);
    const docs = await Promise.all(slice.map(([sourceId]) => store.get(source, sourceId)));
    slice.forEach(([sourceId], i) => storedOf.set(sourceId, docs[i]));
  };
  for (const [n, [sourceId, members]] of entries.entries()) {
    if (n % READ_AHEAD === 0) await readAhead(n);
    const stored = storedOf.get(sourceId);
    storedOf.delete(sourceId);
    const existed = Boolean(stored && !stored.deleted);
    const known = new Set(existed ? stored.chunks.map((c) => c.text) : []);
    const chunks = members.map((doc) => ({ text: doc.pageContent, meta: doc.metadata ?? {} }));
    const toEmbed = [];
    const firstOfText = new Map();
    chunks.forEach((chunk, p) => {
      if (known.has(chunk.text)) return; // the store reuses the stored vector
      if (!firstOfText.has(chunk.text)) {
        firstOfText.set(chunk.text, p);
        toEmbed.push(p);
      }
    });
    const op = { op: 'upsert', source, id: sourceId, version, chunks };
    // Repeats of a text to embed take its first occurrence's vector (see `flush`).
    const copies = chunks.map((chunk, p) => {
      const first = firstOfText.get(chunk.text);
      return first !== undefined && first !== p ? first : null;
    });
    pending.push({ op, existed, toEmbed, copies });
    pendingChunks += chunks.length;
    if (pendingChunks >= batchSize) await flush();
  }
  await flush();

  if (cleanup === 'full') {
    const outcome = await store.retain({ source, ids: [...groups.keys()], version });
    if (outcome.status === 'skipped') throw new InputError('cleanup', `the store refused the cleanup (${outcome.reason})`);
    counts.numDeleted += outcome.chunksRemoved;
  }
  return counts;
}

module.exports = { build, chunkId, ownId };
