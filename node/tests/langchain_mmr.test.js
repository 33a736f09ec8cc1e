'use strict';
// Proves maxMarginalRelevanceSearch trades similarity for diversity: among near-duplicates
// and one different match, similarity search returns two duplicates while MMR returns one
// duplicate and the different one; lambda = 1 ranks as similarity does; k caps the result.

const test = require('node:test');
const assert = require('node:assert/strict');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('MMR picks diverse results from fetchK candidates', async (t) => {
  const embeddings = new HashEmbeddings();
  const store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  const dup = 'apple banana kiwi';
  await store.addDocuments([
    { pageContent: dup, metadata: { kind: 'dup' } },
    { pageContent: dup, metadata: { kind: 'dup' } },
    { pageContent: dup, metadata: { kind: 'dup' } },
    { pageContent: 'apple cherry', metadata: { kind: 'other' } },
    { pageContent: 'submarine cables under the ocean', metadata: { kind: 'far' } },
  ]);
  const query = 'apple banana';

  const similar = await store.similaritySearch(query, 2);
  assert.deepEqual(similar.map((d) => d.metadata.kind), ['dup', 'dup']);

  const diverse = await store.maxMarginalRelevanceSearch(query, { k: 2, fetchK: 5, lambda: 0.5 });
  assert.deepEqual(diverse.map((d) => d.metadata.kind), ['dup', 'other']);

  const relevanceOnly = await store.maxMarginalRelevanceSearch(query, { k: 3, fetchK: 5, lambda: 1 });
  const bySimilarity = await store.similaritySearch(query, 3);
  assert.deepEqual(relevanceOnly.map((d) => d.pageContent), bySimilarity.map((d) => d.pageContent));

  const capped = await store.maxMarginalRelevanceSearch(query, { k: 10, fetchK: 20 });
  assert.equal(capped.length, 5);
  assert.equal(new Set(capped.map((d) => d.id)).size, 5);
});
