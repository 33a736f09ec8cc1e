'use strict';
// Proves `filter` is ratchetdb's where language in every search (similarity, with score,
// MMR, text, hybrid, retriever): only chunks whose metadata match are returned, equality and
// operators alike; a malformed filter is refused with an InputError.

const test = require('node:test');
const assert = require('node:assert/strict');
const { InputError } = require('ratchetdb');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('filters restrict every kind of search', async (t) => {
  const embeddings = new HashEmbeddings();
  const docs = [];
  for (let year = 2015; year < 2025; year++) {
    docs.push({ pageContent: `report about storage engines from ${year}`, metadata: { year, lang: year % 2 ? 'en' : 'de' } });
  }
  const store = await RatchetVectorStore.fromDocuments(docs, embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  const query = 'report about storage engines';
  const wanted = (m) => m.lang === 'en' && m.year >= 2020;
  const filter = { lang: 'en', year: { $gte: 2020 } };
  const expected = docs.filter((d) => wanted(d.metadata)).length;

  const runs = {
    similaritySearch: await store.similaritySearch(query, 10, filter),
    withScore: (await store.similaritySearchWithScore(query, 10, filter)).map(([d]) => d),
    mmr: await store.maxMarginalRelevanceSearch(query, { k: 10, fetchK: 10, filter }),
    text: await store.textSearch('storage engines', 10, filter),
    hybrid: await store.hybridSearch(query, 10, filter),
    retriever: await store.asRetriever({ k: 10, filter }).invoke(query),
  };
  for (const [name, found] of Object.entries(runs)) {
    assert.equal(found.length, expected, `${name} returned ${found.length}`);
    for (const d of found) assert.ok(wanted(d.metadata), `${name} returned ${JSON.stringify(d.metadata)}`);
  }

  await assert.rejects(store.similaritySearch(query, 3, { year: { $nope: 1 } }), InputError);
});
