'use strict';
// Proves the constructors: fromTexts (metadatas one per text, or one object for all),
// fromDocuments (ids from config.ids or each document), fromExistingIndex and the lazy
// `new RatchetVectorStore(embeddings, { path })` over a file written earlier: what was added
// is found again after the store is closed and reopened.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Document } = require('@langchain/core/documents');
const { VectorStore } = require('@langchain/core/vectorstores');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('fromTexts, fromDocuments and reopening an existing file', async (t) => {
  const embeddings = new HashEmbeddings();
  const path = tempPath(t);

  const a = await RatchetVectorStore.fromTexts(['north wind', 'south sea'], [{ n: 1 }, { n: 2 }], embeddings, { path, source: 'a' });
  assert.ok(a instanceof VectorStore);
  assert.ok(a instanceof RatchetVectorStore);
  assert.deepEqual((await a.similaritySearch('south sea', 1))[0].metadata, { n: 2 });
  await a.close();

  const b = await RatchetVectorStore.fromTexts(['east hill', 'west field'], { shared: true }, embeddings, { path, source: 'b' });
  for (const d of await b.similaritySearch('hill field', 5)) assert.deepEqual(d.metadata, { shared: true });
  await b.close();

  const c = await RatchetVectorStore.fromDocuments(
    [new Document({ pageContent: 'upper room', metadata: {} }), new Document({ pageContent: 'lower room', metadata: {}, id: 'ignored' })],
    embeddings, { path, source: 'c', ids: ['up', 'low'] },
  );
  assert.deepEqual((await c.getByIds(['up', 'low'])).map((d) => d.pageContent), ['upper room', 'lower room']);
  await c.close();

  const reopened = await RatchetVectorStore.fromExistingIndex(embeddings, { path, source: 'a', mustExist: true });
  assert.equal((await reopened.similaritySearch('north wind', 1))[0].pageContent, 'north wind');
  assert.equal((await reopened.similaritySearch('north wind', 10)).length, 2);
  await reopened.close();

  const lazy = new RatchetVectorStore(embeddings, { path, source: 'b' });
  assert.equal((await lazy.similaritySearch('east hill', 1))[0].pageContent, 'east hill');
  await lazy.close();
});
