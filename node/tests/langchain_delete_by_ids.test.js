'use strict';
// Proves delete({ ids }) removes exactly those documents (searches and getByIds no longer
// return them, the others stay), deleting an unknown id is harmless, and
// delete({ deleteAll: true }) empties the vector store's source only.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Store } = require('ratchetdb');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('delete by ids, then delete all', async (t) => {
  const embeddings = new HashEmbeddings();
  const raw = await Store.open(tempPath(t));
  t.after(() => raw.close());
  const store = new RatchetVectorStore(embeddings, { store: raw, source: 'notes' });
  const other = new RatchetVectorStore(embeddings, { store: raw, source: 'other' });

  const texts = ['alpha one', 'beta two', 'gamma three', 'delta four'];
  const ids = ['a', 'b', 'c', 'd'];
  await store.addDocuments(texts.map((pageContent) => ({ pageContent, metadata: {} })), { ids });
  await other.addDocuments([{ pageContent: 'alpha one', metadata: {} }], { ids: ['a'] });

  await store.delete({ ids: ['b', 'd', 'never-written'] });
  const left = await store.similaritySearch('alpha beta gamma delta', 10);
  assert.deepEqual(left.map((d) => d.id).sort(), ['a', 'c']);
  assert.deepEqual((await store.getByIds(['a', 'b', 'c', 'd'])).map((d) => d.id), ['a', 'c']);
  const tombstone = await raw.get('notes', 'b');
  assert.equal(tombstone.deleted, true);

  await store.delete({ deleteAll: true });
  assert.deepEqual(await store.similaritySearch('alpha', 10), []);
  assert.deepEqual((await other.similaritySearch('alpha', 10)).map((d) => d.id), ['a']);
  assert.equal((await raw.verify()).ok, true);
});
