// Type-checked (never run) by ../typescript_declarations_cover_the_api.test.js with
// `tsc -p tests/types`: a TypeScript user's use of every part of the package's API, imported
// by the package's name as an application imports it. If index.d.ts stops declaring the
// JavaScript API (as when 8bce661 replaced it with the addon's generated declarations),
// this file no longer compiles.
import {
  Store, Ticket, Timestamp, Embedder, HashingEmbedder, MiniLM,
  RatchetError, InputError, DimensionMismatchError, VersionKindMismatchError, MissingVectorError,
  StoreOpenError, StoreLockedError, StoreNotFoundError, MismatchError, NeedsRecoveryError,
  CorruptedError, StorageError, PoisonedError, ReadOnlyError, ClosedError, UnsupportedError,
  NoTextIndexError, ModelNotFoundError, EmbedError,
  type OpenOptions, type DocumentInput, type ChunkInput, type Outcome, type BatchOp,
  type BatchResult, type Hit, type StoredDocument, type StoredChunk, type SpaceInfo,
  type SearchOptions, type TextSearchOptions, type HybridOptions, type VerifyReport,
  type Version, type SkipReason,
} from 'ratchetdb';
import {
  RatchetVectorStore, RatchetRetriever, RatchetEmbeddings, index,
  type RatchetVectorStoreConfig, type IndexingResult,
} from 'ratchetdb/langchain';

export async function storeApi(path: string): Promise<void> {
  const embedder: Embedder = new HashingEmbedder(64);
  const dim: number = embedder.dimension;
  const modelName: string = embedder.model;
  const vectors: Float32Array[] = await embedder.embed(['a', 'b']);

  const options: OpenOptions = {
    dimension: dim, metric: 'cosine', model: modelName, readOnly: false, durability: 'immediate',
    waitForLockMs: 1000, allowReaders: true, textIndex: true, cacheSize: 1 << 20,
    memoryBudget: 64 << 20, compactOnClose: true, mustExist: false, embedder, spinMicros: 1000,
  };
  const store: Store = await Store.open(path, options);
  await Store.open(path);

  const p: string = store.path;
  const d: number | null = store.dimension;
  const metric: string = store.metric;
  const ro: boolean = store.readOnly;
  const closed: boolean = store.closed;
  const e: Embedder | null = store.embedder;
  const m: string | null = store.model;

  const ticket: Ticket = await store.ticket();
  const tv: bigint = ticket.value;
  const ts: string = ticket.toString();
  const tj: { ticket: string } = ticket.toJSON();
  const versions: Version[] = [1, 2n, new Date(), ticket, new Ticket(5n), new Timestamp(1767225600123456n)];
  const micros: bigint = new Timestamp(5n).micros;
  const asDate: Date = new Timestamp(5n);

  const chunk: ChunkInput = {
    text: 'hello', vector: vectors[0], meta: { lang: 'en' },
    spaceVectors: { minilm: new Float32Array(384), other: [0.1, 0.2] },
  };
  const doc: DocumentInput = { source: 's', id: 'a', version: ticket, chunks: [chunk, { text: 'no vector' }], meta: { year: 2024 } };
  const written: Outcome = await store.upsert(doc);
  const status: 'written' | 'unchanged' | 'deleted' | 'skipped' | 'retained' = written.status;
  const reason: SkipReason | undefined = written.reason;
  const n: number | undefined = written.chunksWritten;
  await store.delete({ source: 's', id: 'a', version: 3 });
  const kept: Outcome = await store.retain({ source: 's', ids: ['a'], version: new Date() });
  const removed: number | undefined = kept.documentsRemoved;

  const ops: BatchOp[] = [
    { op: 'upsert', ...doc },
    { op: 'delete', source: 's', id: 'b', version: 4 },
    { op: 'retain', source: 's', ids: [], version: 5n },
  ];
  const results: BatchResult[] = await store.writeBatch(ops);
  for (const r of results) {
    if (r.status === 'error') {
      const err: RatchetError = r.error;
      const code: string = err.code;
    } else {
      const chunksRemoved: number | undefined = r.chunksRemoved;
    }
  }

  const textOptions: TextSearchOptions = { k: 5, where: { lang: 'en' }, sources: ['s'], exact: true, ef: 64, perDocument: true };
  const vectorOptions: SearchOptions = { ...textOptions, space: 'minilm' };
  const hybridOptions: HybridOptions = { ...vectorOptions, rrfK: 60, vectorWeight: 0.5 };
  const hits: Hit[] = await store.search(vectors[0], vectorOptions);
  await store.search([0.1, 0.2, 0.3]);
  const many: Hit[][] = await store.searchMany([vectors[0], [1, 2, 3]], { k: 3, space: 'default', perDocument: true });
  const byText: Hit[] = await store.searchText('hello', textOptions);
  const byQuestion: Hit[] = await store.searchQuery('what?', { k: 2, space: 'minilm', perDocument: false });
  const hybrid: Hit[] = await store.searchHybrid('hello', vectors[0], hybridOptions);
  const hybridEmbedded: Hit[] = await store.searchHybrid('hello', { k: 3, rrfK: 10, space: 'minilm' });
  const hybridNoVector: Hit[] = await store.searchHybrid('hello', null, { vectorWeight: 1 });
  for (const hit of [...hits, ...byText, ...byQuestion, ...hybrid, ...hybridEmbedded, ...hybridNoVector]) {
    const fields: [string, string, number, string, Record<string, unknown>, number, Version] =
      [hit.source, hit.id, hit.position, hit.text, hit.meta, hit.score, hit.version];
  }

  const got: StoredDocument | null = await store.get('s', 'a', { vectors: true });
  if (got !== null) {
    const deleted: boolean = got.deleted;
    const hash: string = got.contentHash;
    const generation: number = got.generation;
    for (const c of got.chunks) {
      const v: Float32Array | undefined = c.vector;
      const others: Record<string, Float32Array> | undefined = c.spaceVectors;
      // A read document writes back as it was.
      const back: ChunkInput = { text: c.text, vector: c.vector, meta: c.meta, spaceVectors: c.spaceVectors };
    }
  }
  await store.get('s', 'a');

  const spaces: SpaceInfo[] = await store.spaces();
  for (const s of spaces) {
    const info: [string, string, number | null, number, number, boolean, boolean] =
      [s.name, s.model, s.dimension, s.vectors, s.liveChunks, s.complete, s.active];
  }

  const stats: Record<string, unknown> = await store.stats();
  const report: VerifyReport = await store.verify();
  const ok: boolean = report.ok && report.violations.every((v) => v.problem.length > 0);
  const indexed: boolean = await store.waitForIndex(1000);
  await store.waitForIndex();

  for await (const exported of store.export({ vectors: true })) {
    const chunks: StoredChunk[] = exported.chunks;
    const spaceVectors: (Record<string, Float32Array> | undefined)[] = chunks.map((c) => c.spaceVectors);
  }
  for await (const exported of store.export()) {
    const id: string = exported.id;
  }
  await store.close();
}

export async function embedders(modelDir: string): Promise<void> {
  const minilm: MiniLM = await MiniLM.load(modelDir);
  const fromDefault: MiniLM = await MiniLM.load();
  const folder: string = minilm.modelDir;
  const asEmbedder: Embedder = fromDefault;
  const out: Float32Array[] = await minilm.embed(['x']);
}

export function errors(error: unknown): string {
  if (error instanceof InputError) return `${error.code} ${error.field}`;
  if (error instanceof DimensionMismatchError) return error.field;
  if (error instanceof VersionKindMismatchError) return error.field;
  if (error instanceof MissingVectorError) return error.field;
  if (error instanceof MismatchError) return `${error.code} ${error.field}`;
  if (error instanceof ModelNotFoundError) return `${error.code} ${error.field ?? 'none'}`;
  const plain = [StoreOpenError, StoreLockedError, StoreNotFoundError, NeedsRecoveryError, CorruptedError,
    StorageError, PoisonedError, ReadOnlyError, ClosedError, UnsupportedError, NoTextIndexError, EmbedError];
  for (const Class of plain) {
    if (error instanceof Class) return error.code;
  }
  if (error instanceof RatchetError) {
    const asError: Error = error;
    return `${error.code}: ${asError.message}`;
  }
  const made: InputError = new InputError('k', 'invalid k');
  return made.field;
}

export async function langchain(path: string, store: Store): Promise<void> {
  const embeddings = new RatchetEmbeddings(new HashingEmbedder(32));
  const inner: Embedder = embeddings.embedder;
  const dim: number = embeddings.dimension;
  const model: string = embeddings.model;
  const docVectors: number[][] = await embeddings.embedDocuments(['a']);
  const queryVector: number[] = await embeddings.embedQuery('a');

  const byPath: RatchetVectorStoreConfig = { path, source: 'docs', memoryBudget: 1 << 26 };
  const vs: RatchetVectorStore = await RatchetVectorStore.open(embeddings, byPath);
  const overStore = new RatchetVectorStore(embeddings, { store });
  const ids: string[] = await vs.addDocuments([{ pageContent: 'a', metadata: {} }], { ids: ['a'] });
  await vs.addVectors(docVectors, [{ pageContent: 'a', metadata: {} }]);
  const scored = await vs.similaritySearchVectorWithScore(queryVector, 2, { lang: 'en' });
  const hybrid = await vs.hybridSearch('a', 2, undefined, { rrfK: 10 });
  const text = await vs.textSearch('a', 2);
  const retriever: RatchetRetriever = vs.asRetriever({ k: 2, searchType: 'hybrid', searchKwargs: { vectorWeight: 0.5 } });
  const result: IndexingResult = await index({ docsSource: [{ pageContent: 'a', metadata: { source: 'x' } }], vectorStore: vs, options: { cleanup: 'full' } });
  await vs.delete({ ids });
  await overStore.close();
  await vs.close();
}
