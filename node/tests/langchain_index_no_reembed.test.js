'use strict';
// Proves index() embeds only what the store lacks, counting calls on a fake embedder: a
// re-run of unchanged sources embeds nothing (numSkipped counts every chunk); a metadata-only
// change re-writes the metadata without embedding; a new chunk in an existing source embeds
// that chunk only; a text repeated within a source is embedded once.

const test = require('node:test');
const assert = require('node:assert/strict');
const { RatchetVectorStore, index } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

const docsOf = (source, texts, extra = {}) => texts.map((pageContent) => ({ pageContent, metadata: { source, ...extra } }));

test('unchanged chunks are not embedded again', async (t) => {
  const embeddings = new HashEmbeddings();
  const store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  const run = (docs, options = {}) => index({ docsSource: docs, vectorStore: store, options });

  const x = ['x one', 'x two', 'x three'];
  const y = ['y one', 'y two'];
  const first = await run([...docsOf('x', x), ...docsOf('y', y)], { batchSize: 2 });
  assert.equal(first.numAdded, 5);
  assert.deepEqual([...embeddings.embedded].sort(), [...x, ...y].sort());
  const calls = embeddings.calls;

  const again = await run([...docsOf('x', x), ...docsOf('y', y)], { batchSize: 2 });
  assert.deepEqual(again, { numAdded: 0, numUpdated: 0, numSkipped: 5, numDeleted: 0 });
  assert.equal(embeddings.calls, calls, 'a re-run called the embedder');

  const retagged = await run(docsOf('x', x, { tag: 'new' }));
  assert.equal(embeddings.calls, calls, 'a metadata change called the embedder');
  assert.equal(retagged.numSkipped, 3);
  const [top] = await store.similaritySearch('x two', 1, { source: 'x' });
  assert.equal(top.metadata.tag, 'new');

  const grown = await run(docsOf('y', [...y, 'y three']));
  assert.deepEqual(embeddings.embedded.slice(5), ['y three']);
  assert.equal(grown.numUpdated, 1);
  assert.equal(grown.numSkipped, 2);

  const before = embeddings.embedded.length;
  await run(docsOf('z', ['z same', 'z other', 'z same']));
  assert.deepEqual(embeddings.embedded.slice(before).sort(), ['z other', 'z same']);
  const z = await store.store.get('langchain', 'z', { vectors: true });
  assert.deepEqual(Array.from(z.chunks[0].vector), Array.from(z.chunks[2].vector));
});
