// Type declarations of `ratchetdb/langchain` (langchain.js, langchain.mjs): a LangChain.js
// vector store, retriever and guarded index() over a ratchetdb file. Needs @langchain/core.

import { Embeddings, type EmbeddingsInterface, type EmbeddingsParams } from '@langchain/core/embeddings';
import type { DocumentInterface } from '@langchain/core/documents';
import type { BaseDocumentLoader } from '@langchain/core/document_loaders/base';
import type { Callbacks } from '@langchain/core/callbacks/manager';
import {
  VectorStore,
  VectorStoreRetriever,
  type MaxMarginalRelevanceSearchOptions,
  type VectorStoreRetrieverMMRSearchKwargs,
} from '@langchain/core/vectorstores';
import type { BaseRetrieverInput } from '@langchain/core/retrievers';
import type { Embedder, OpenOptions, Store } from './index';

/** ratchetdb's metadata filter: `{ lang: 'en' }`, `{ year: { $gte: 2020 } }`, `$and`, `$or`, ... */
export type RatchetFilter = Record<string, unknown>;

/**
 * Where the vector store keeps its documents: a file (`path`, opened on first use, with any
 * `Store.open` option) or an open `Store`. `source` is the ratchetdb source its documents
 * live in (default `'langchain'`).
 */
export type RatchetVectorStoreConfig =
  | ({ path: string; store?: undefined; source?: string } & OpenOptions)
  | { store: Store; path?: undefined; source?: string };

/** Hybrid search's fusion: reciprocal rank (`rrfK`) or a weighted sum (`vectorWeight` in [0, 1]). */
export interface RatchetHybridOptions {
  rrfK?: number;
  vectorWeight?: number;
}

/** How a `RatchetRetriever` searches. */
export type RatchetSearchType = 'similarity' | 'mmr' | 'text' | 'hybrid';

/** A `RatchetRetriever`'s fields: LangChain's, with `searchType` `'text'` and `'hybrid'` besides. */
export interface RatchetRetrieverInput extends BaseRetrieverInput {
  vectorStore: RatchetVectorStore;
  /** How many documents (default 4). */
  k?: number;
  filter?: RatchetFilter;
  /** Default `'similarity'`. */
  searchType?: RatchetSearchType;
  /** `'mmr'`: `{ fetchK, lambda }`; `'hybrid'`: `{ rrfK }` or `{ vectorWeight }`. */
  searchKwargs?: VectorStoreRetrieverMMRSearchKwargs & RatchetHybridOptions;
}

/** A retriever over a `RatchetVectorStore`: `'similarity'`, `'mmr'`, `'text'` or `'hybrid'`. */
export declare class RatchetRetriever<V extends RatchetVectorStore = RatchetVectorStore> extends VectorStoreRetriever<V> {
  constructor(fields: RatchetRetrieverInput & { vectorStore: V });
}

/**
 * A LangChain vector store over one ratchetdb file. Each added document is a ratchetdb
 * document `(source, id)` of one chunk, written at a store ticket; a search hit's id is the
 * ratchetdb id (`<id>#<position>` for the later chunks of a source written by `index()`).
 * Scores are the store's (cosine similarity by default: higher is closer).
 */
export declare class RatchetVectorStore extends VectorStore {
  FilterType: RatchetFilter;
  /** The open store (null until a `path` config's open has finished). */
  store: Store | null;
  /** The ratchetdb source of this vector store's documents. */
  source: string;

  constructor(embeddings: EmbeddingsInterface, config: RatchetVectorStoreConfig);
  /** Opens (creating when missing) the store and returns the vector store over it. */
  static open(embeddings: EmbeddingsInterface, config: RatchetVectorStoreConfig): Promise<RatchetVectorStore>;
  /** LangChain's name for `open`. */
  static fromExistingIndex(embeddings: EmbeddingsInterface, config: RatchetVectorStoreConfig): Promise<RatchetVectorStore>;
  /** A vector store holding `texts` (`metadatas`: one object per text, or one for all). */
  static fromTexts(
    texts: string[],
    metadatas: object[] | object,
    embeddings: EmbeddingsInterface,
    config: RatchetVectorStoreConfig & { ids?: string[] },
  ): Promise<RatchetVectorStore>;
  /** A vector store holding `docs` (ids from `config.ids`, else each document's id, else new). */
  static fromDocuments(
    docs: DocumentInterface[],
    embeddings: EmbeddingsInterface,
    config: RatchetVectorStoreConfig & { ids?: string[] },
  ): Promise<RatchetVectorStore>;

  _vectorstoreType(): string;
  /** Closes the underlying store. */
  close(): Promise<void>;

  /** Embeds and writes `documents`; returns their ids. */
  addDocuments(documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]>;
  /** Writes `documents` with precomputed `vectors`, all at one ticket; returns their ids. */
  addVectors(vectors: number[][], documents: DocumentInterface[], options?: { ids?: string[] }): Promise<string[]>;
  /** Versioned tombstones for `ids`, or every document of the source with `deleteAll`. */
  delete(params: { ids: string[] } | { deleteAll: true }): Promise<void>;
  /** The live documents with these ids. */
  getByIds(ids: string[]): Promise<DocumentInterface[]>;

  similaritySearchVectorWithScore(query: number[], k: number, filter?: RatchetFilter): Promise<[DocumentInterface, number][]>;
  similaritySearchByVector(query: number[], k?: number, filter?: RatchetFilter): Promise<DocumentInterface[]>;
  /** `fetchK` candidates (default 20) ranked by maximal marginal relevance (`lambda` default 0.5). */
  maxMarginalRelevanceSearch(
    query: string,
    options: MaxMarginalRelevanceSearchOptions<RatchetFilter>,
    callbacks?: Callbacks,
  ): Promise<DocumentInterface[]>;
  /** BM25 over the chunks' words. */
  textSearch(query: string, k?: number, filter?: RatchetFilter): Promise<DocumentInterface[]>;
  textSearchWithScore(query: string, k?: number, filter?: RatchetFilter): Promise<[DocumentInterface, number][]>;
  /** The text and vector rankings fused. */
  hybridSearch(query: string, k?: number, filter?: RatchetFilter, options?: RatchetHybridOptions): Promise<DocumentInterface[]>;
  hybridSearchWithScore(
    query: string,
    k?: number,
    filter?: RatchetFilter,
    options?: RatchetHybridOptions,
  ): Promise<[DocumentInterface, number][]>;

  asRetriever(
    kOrFields?: number | (Partial<Omit<RatchetRetrieverInput, 'vectorStore' | 'filter'>> & { filter?: object | string }),
    filter?: RatchetFilter,
    callbacks?: Callbacks,
    tags?: string[],
    metadata?: Record<string, unknown>,
    verbose?: boolean,
  ): RatchetRetriever<this>;
}

/** `index()`'s options (LangChain's names). */
export interface IndexOptions {
  /** Chunks embedded per call and written per transaction (default 100; a source is never split). */
  batchSize?: number;
  /** `null` (default) or `'incremental'`: absent sources are left alone; `'full'`: deleted. */
  cleanup?: 'incremental' | 'full' | null;
  /** A metadata key (default `'source'`), a function of the document, or null (content ids). */
  sourceIdKey?: string | ((doc: DocumentInterface) => string) | null;
  /** Accepted for LangChain's signature; the cleanup is one `retain`. */
  cleanupBatchSize?: number;
}

/** LangChain's counts, in chunks. */
export interface IndexingResult {
  numAdded: number;
  numUpdated: number;
  numSkipped: number;
  numDeleted: number;
}

/**
 * The guarded replacement of LangChain's `index()` and record manager: the chunks of each
 * source are written as one versioned ratchetdb document (never half-deleted); chunks whose
 * text the stored revision holds are not embedded again. A `recordManager` is not needed
 * (and not used if given).
 */
export declare function index(args: {
  docsSource: DocumentInterface[] | Iterable<DocumentInterface> | AsyncIterable<DocumentInterface> | BaseDocumentLoader;
  vectorStore: RatchetVectorStore;
  recordManager?: unknown;
  options?: IndexOptions;
}): Promise<IndexingResult>;

/**
 * LangChain embeddings over a ratchetdb embedder (`new HashingEmbedder(dim)`,
 * `await MiniLM.load()`), computed off the event loop; usable as a `RatchetVectorStore`'s.
 */
export declare class RatchetEmbeddings extends Embeddings {
  constructor(embedder: Embedder, params?: EmbeddingsParams);
  readonly embedder: Embedder;
  /** The length of every vector. */
  readonly dimension: number;
  /** The model name a store records for these vectors. */
  readonly model: string;
  embedDocuments(texts: string[]): Promise<number[][]>;
  embedQuery(text: string): Promise<number[]>;
}
