'use strict';
// Proves the vector-store basics LangChain's standard suite checks: documents added with
// addDocuments are found again by similaritySearch (each is the nearest to its own text),
// an empty store answers [], and a hit is a Document with its text, metadata and id.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Document } = require('@langchain/core/documents');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('documents added are found again by similarity search', async (t) => {
  const embeddings = new HashEmbeddings();
  const store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  assert.equal(store._vectorstoreType(), 'ratchetdb');

  assert.deepEqual(await store.similaritySearch('anything at all', 3), []);

  const docs = [
    new Document({ pageContent: 'the cat sat on the warm mat', metadata: { n: 1 } }),
    new Document({ pageContent: 'rust compiles to native machine code', metadata: { n: 2 } }),
    new Document({ pageContent: 'tides follow the pull of the moon', metadata: { n: 3 } }),
  ];
  const ids = await store.addDocuments(docs);
  assert.equal(ids.length, docs.length);
  assert.equal(new Set(ids).size, docs.length);

  for (const [i, doc] of docs.entries()) {
    const [top] = await store.similaritySearch(doc.pageContent, 1);
    assert.ok(top instanceof Document);
    assert.equal(top.pageContent, doc.pageContent);
    assert.deepEqual(top.metadata, doc.metadata);
    assert.equal(top.id, ids[i]);
  }

  const all = await store.similaritySearch('the cat', 10);
  assert.equal(all.length, docs.length);
  assert.deepEqual(new Set(all.map((d) => d.id)), new Set(ids));
});
