'use strict';
// Proves the LangChain layer refuses bad input with ratchetdb's InputError naming the field,
// and writes nothing: a config without path or store, path and store together, an unknown
// Store.open option, delete() without ids or with a non-string id, ids of the wrong length,
// a NaN, a vector of the wrong dimension (DimensionMismatchError): no document of the call
// is written; index() refuses non-object metadata and an embedder's wrong-dimension vector
// before writing any source of the batch.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Store, InputError, DimensionMismatchError } = require('ratchetdb');
const { RatchetVectorStore, index } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('bad input is refused, naming the field, and writes nothing', async (t) => {
  const embeddings = new HashEmbeddings();
  const path = tempPath(t);
  assert.throws(() => new RatchetVectorStore(embeddings, {}), (e) => e instanceof InputError && e.field === 'path');
  assert.throws(() => new RatchetVectorStore(embeddings, { path, source: '' }), (e) => e.field === 'source');
  await assert.rejects(RatchetVectorStore.open(embeddings, { path, dimensions: 3 }), (e) => e instanceof InputError && /dimensions/.test(e.field));

  const raw = await Store.open(path);
  t.after(() => raw.close());
  assert.throws(() => new RatchetVectorStore(embeddings, { store: raw, path }), (e) => e.field === 'path');
  const store = new RatchetVectorStore(embeddings, { store: raw });
  await store.addDocuments([{ pageContent: 'kept', metadata: {} }], { ids: ['kept'] });

  await assert.rejects(store.delete(), (e) => e instanceof InputError && e.field === 'ids');
  await assert.rejects(store.delete({ ids: 'kept' }), (e) => e.field === 'ids');
  await assert.rejects(store.delete({ ids: ['kept', 7] }), (e) => e.field === 'ids[1]');
  const nan = HashEmbeddings.vector('nan');
  nan[5] = NaN;
  await assert.rejects(store.addVectors([HashEmbeddings.vector('ok'), nan], [{ pageContent: 'ok', metadata: {} }, { pageContent: 'nan', metadata: {} }], { ids: ['ok', 'nan'] }),
    (e) => e instanceof InputError && e.field === 'vectors[1][5]');
  await assert.rejects(store.addDocuments([{ pageContent: 'a', metadata: {} }], { ids: [] }), (e) => e.field === 'ids');
  await assert.rejects(
    store.addVectors([HashEmbeddings.vector('fine'), [1, 0, 0]], [{ pageContent: 'fine', metadata: {} }, { pageContent: 'short', metadata: {} }], { ids: ['fine', 'short'] }),
    DimensionMismatchError,
  );
  assert.deepEqual((await store.getByIds(['kept', 'fine', 'short', 'ok', 'nan'])).map((d) => d.id), ['kept']);

  // index(): metadata that is not an object, and an embedder answering a wrong dimension,
  // are refused before any source of the batch is written.
  await assert.rejects(index({ docsSource: [{ pageContent: 'm', metadata: ['source'] }], vectorStore: store }),
    (e) => e instanceof InputError && e.field === 'docsSource[0].metadata');
  const short = new HashEmbeddings();
  short.embedDocuments = async (texts) => texts.map((t) => (t.includes('short') ? [1, 0, 0] : HashEmbeddings.vector(t)));
  const shortStore = new RatchetVectorStore(short, { store: raw });
  const docs = [{ pageContent: 'fine words', metadata: { source: 'f' } }, { pageContent: 'short words', metadata: { source: 's' } }];
  await assert.rejects(index({ docsSource: docs, vectorStore: shortStore }), (e) => e instanceof DimensionMismatchError && e.field === 'embeddings');
  assert.deepEqual(await store.getByIds(['f', 's']), []);
});
