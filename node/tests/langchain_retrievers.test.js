'use strict';
// Proves asRetriever(): invoke() answers through the chosen searchType — 'similarity'
// (default; also the numeric asRetriever(k) form), 'mmr' (searchKwargs fetchK/lambda),
// 'text' (only chunks holding the query's words) and 'hybrid' (searchKwargs rrfK or
// vectorWeight) — with k and filter; an unknown searchType is refused.

const test = require('node:test');
const assert = require('node:assert/strict');
const { VectorStoreRetriever } = require('@langchain/core/vectorstores');
const { InputError } = require('ratchetdb');
const { RatchetVectorStore, RatchetRetriever } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('retrievers: similarity, mmr, text and hybrid', async (t) => {
  const embeddings = new HashEmbeddings();
  const texts = [
    'error E1234 in the disk driver',
    'error E5678 in the network driver',
    'the disk fills up quickly',
    'weather is sunny and warm',
    'the disk fills up quickly',
  ];
  const store = await RatchetVectorStore.fromTexts(texts, texts.map((_, i) => ({ i })), embeddings, { path: tempPath(t) });
  t.after(() => store.close());

  const similarity = store.asRetriever(2);
  assert.ok(similarity instanceof VectorStoreRetriever);
  assert.ok(similarity instanceof RatchetRetriever);
  assert.ok(similarity.tags.includes('ratchetdb'));
  const sim = await similarity.invoke('the disk fills up quickly');
  assert.equal(sim.length, 2);
  assert.deepEqual(sim.map((d) => d.pageContent), [texts[2], texts[4]]);

  const mmr = store.asRetriever({ k: 2, searchType: 'mmr', searchKwargs: { fetchK: 5, lambda: 0.3 } });
  const diverse = await mmr.invoke('the disk fills up quickly');
  assert.equal(diverse.length, 2);
  assert.equal(diverse[0].pageContent, texts[2]);
  assert.notEqual(diverse[1].pageContent, texts[2], 'mmr returned the duplicate');

  const text = store.asRetriever({ k: 5, searchType: 'text' });
  const exact = await text.invoke('E1234');
  assert.deepEqual(exact.map((d) => d.pageContent), [texts[0]]);
  const textFiltered = store.asRetriever({ k: 5, searchType: 'text', filter: { i: { $gte: 1 } } });
  assert.deepEqual(await textFiltered.invoke('E1234'), []);

  for (const searchKwargs of [undefined, { rrfK: 10 }, { vectorWeight: 0.3 }]) {
    const hybrid = store.asRetriever({ k: 3, searchType: 'hybrid', searchKwargs });
    const fused = await hybrid.invoke('disk driver E1234');
    assert.equal(fused.length, 3);
    assert.equal(fused[0].pageContent, texts[0], `hybrid ${JSON.stringify(searchKwargs)} top`);
    for (const d of fused) assert.ok(/disk|driver/.test(d.pageContent));
  }
  const scored = await store.hybridSearchWithScore('disk', 5);
  for (let i = 1; i < scored.length; i++) assert.ok(scored[i - 1][1] >= scored[i][1]);

  assert.throws(() => store.asRetriever({ searchType: 'nearest' }), InputError);
});
