'use strict';
// Proves the guarded index() never half-deletes or re-embeds a source whose chunks are split
// across batches (the batch-boundary defects of LangChain's index(): langchain #19335,
// #22135, #32612). Source A's chunks are interleaved with B's and batchSize is 2, smaller
// than A: at every embedding call (between batches) a reader sees A whole, either its old
// revision or its new one; after each run A holds exactly its latest chunks, once each; a
// re-run embeds nothing, and a revision embeds only its changed chunk.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Document } = require('@langchain/core/documents');
const { RatchetVectorStore, index } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

const chunksOf = (source, texts) => texts.map((pageContent, n) => new Document({ pageContent, metadata: { source, n } }));

function interleave(a, b) {
  const out = [];
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (i < a.length) out.push(a[i]);
    if (i < b.length) out.push(b[i]);
  }
  return out;
}

test('a source split across batches is written whole, never half-deleted or re-embedded', async (t) => {
  const revisions = [];
  const seen = [];
  const embeddings = new HashEmbeddings();
  const embed = embeddings.embedDocuments.bind(embeddings);
  let store;
  // Between batches, what does a reader see of A?
  embeddings.embedDocuments = async (texts) => {
    assert.ok(texts.length <= 2, `an embedding call of ${texts.length} texts (batchSize 2)`);
    const a = await store.store.get('langchain', 'a.md');
    const texts_ = a ? a.chunks.map((c) => c.text) : null;
    seen.push(texts_);
    assert.ok(texts_ === null || revisions.some((r) => JSON.stringify(r) === JSON.stringify(texts_)),
      `a reader saw A half-written: ${JSON.stringify(texts_)}`);
    return embed(texts);
  };
  store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  const run = (docs) => index({ docsSource: docs, vectorStore: store, options: { batchSize: 2, cleanup: 'incremental' } });
  const storedTexts = async (id) => (await store.store.get('langchain', id)).chunks.map((c) => c.text);

  const a1 = ['a zero', 'a one', 'a two', 'a three', 'a four'];
  const b1 = ['b zero', 'b one', 'b two'];
  revisions.push(a1);
  const first = await run(interleave(chunksOf('a.md', a1), chunksOf('b.md', b1)));
  assert.deepEqual(first, { numAdded: 8, numUpdated: 0, numSkipped: 0, numDeleted: 0 });
  assert.deepEqual(await storedTexts('a.md'), a1);
  assert.deepEqual(await storedTexts('b.md'), b1);
  assert.equal(embeddings.embedded.length, 8);

  // The same input again: nothing embedded, nothing deleted.
  const again = await run(interleave(chunksOf('a.md', a1), chunksOf('b.md', b1)));
  assert.deepEqual(again, { numAdded: 0, numUpdated: 0, numSkipped: 8, numDeleted: 0 });
  assert.equal(embeddings.embedded.length, 8);
  assert.deepEqual(await storedTexts('a.md'), a1);

  // A revised: one chunk changed, the last dropped. Only the changed chunk is embedded.
  const a2 = ['a zero', 'a one', 'a two', 'a three revised'];
  revisions.push(a2);
  const revised = await run(interleave(chunksOf('a.md', a2), chunksOf('b.md', b1)));
  assert.deepEqual(embeddings.embedded.slice(8), ['a three revised']);
  assert.equal(revised.numUpdated, 1);
  assert.equal(revised.numAdded, 0);
  assert.equal(revised.numSkipped, 3 + 3);
  assert.ok(revised.numDeleted >= 1, `numDeleted ${revised.numDeleted}`);
  assert.deepEqual(await storedTexts('a.md'), a2);
  assert.deepEqual(await storedTexts('b.md'), b1);

  // Searches see A's latest chunks only, each once, with LangChain ids `<source>#<n>`.
  const hits = await store.similaritySearch('a zero one two three four revised', 20, { source: 'a.md' });
  assert.deepEqual(hits.map((d) => d.pageContent).sort(), [...a2].sort());
  assert.deepEqual(new Set(hits.map((d) => d.id)), new Set(['a.md', 'a.md#1', 'a.md#2', 'a.md#3']));
  assert.ok(seen.length > 0);
  assert.equal((await store.store.verify()).ok, true);
});
