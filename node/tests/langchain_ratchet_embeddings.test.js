'use strict';
// RatchetEmbeddings (ratchetdb/langchain) is LangChain `Embeddings` over a ratchetdb
// embedder: embedDocuments/embedQuery give the embedder's vectors as number arrays, and a
// RatchetVectorStore built with it adds texts and finds them by similarity.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Embeddings } = require('@langchain/core/embeddings');
const { HashingEmbedder, InputError } = require('..');
const { RatchetEmbeddings, RatchetVectorStore } = require('../langchain');
const { tempDir } = require('./helpers');

test('RatchetEmbeddings serves as a RatchetVectorStore\'s embeddings', async (t) => {
  const embedder = new HashingEmbedder(128);
  const embeddings = new RatchetEmbeddings(embedder);
  assert.ok(embeddings instanceof Embeddings);
  assert.equal(embeddings.dimension, 128);
  const texts = ['green tea is steeped briefly', 'the ferry leaves at noon', 'snow closed the mountain pass'];
  const docs = await embeddings.embedDocuments(texts);
  const direct = await embedder.embed(texts);
  assert.equal(docs.length, 3);
  docs.forEach((v, i) => { assert.ok(Array.isArray(v)); assert.deepEqual(v, Array.from(direct[i])); });
  assert.deepEqual(await embeddings.embedQuery(texts[1]), Array.from(direct[1]));
  assert.throws(() => new RatchetEmbeddings({}), (e) => e instanceof InputError && e.field === 'embedder');

  const vectorStore = await RatchetVectorStore.fromTexts(texts, texts.map((_, i) => ({ i })), embeddings, { path: path.join(tempDir(t), 'lc.redb') });
  t.after(() => vectorStore.close());
  const [found] = await vectorStore.similaritySearch('when does the ferry leave', 1);
  assert.equal(found.pageContent, texts[1]);
});
