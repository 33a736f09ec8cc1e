'use strict';
// Regression (review): a search hit of an index()-written source carries the LangChain id
// `<source id>#<n>` for its chunk n. getByIds of such an id found nothing, and delete of it
// wrote a tombstone for a document `<id>#<n>` that never existed, leaving the chunk. Now
// getByIds returns that chunk, and delete refuses it (the source is one document) before
// writing anything.

const test = require('node:test');
const assert = require('node:assert/strict');
const { InputError } = require('ratchetdb');
const { RatchetVectorStore, index } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('chunk ids of an indexed source: read back one by one, refused by delete', async (t) => {
  const store = await RatchetVectorStore.open(new HashEmbeddings(), { path: tempPath(t) });
  t.after(() => store.close());
  const texts = ['alpha kettle', 'beta descaling', 'gamma firmware'];
  await index({ docsSource: texts.map((pageContent) => ({ pageContent, metadata: { source: 'manual' } })), vectorStore: store });

  const [hit] = await store.similaritySearch('gamma firmware', 1);
  assert.equal(hit.id, 'manual#2');
  const [read] = await store.getByIds(['manual#2']);
  assert.equal(read.id, 'manual#2');
  assert.equal(read.pageContent, 'gamma firmware');
  assert.deepEqual(await store.getByIds(['manual#7', 'nothing#1']), []);

  const before = await store.store.stats();
  await assert.rejects(store.delete({ ids: ['other', 'manual#2'] }),
    (e) => e instanceof InputError && e.field === 'ids[1]' && /manual/.test(e.message));
  assert.deepEqual(await store.store.stats(), before, 'nothing written, not even the first id');
  assert.equal((await store.getByIds(['manual'])).length, 3);

  // The source's own id deletes the whole source.
  await store.delete({ ids: ['manual'] });
  assert.deepEqual(await store.similaritySearch('gamma firmware', 3), []);
});
