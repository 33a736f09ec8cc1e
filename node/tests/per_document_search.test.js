'use strict';
// Issue 45, item 5, in Node: `perDocument: true` returns one hit per document (its best
// chunk), `k` distinct documents, where an ungrouped search fills its top k with chunks of
// one document; for vector, text and hybrid search.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, InputError } = require('..');
const { tempDir } = require('./helpers');

test('one hit per document', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'p.redb'), { dimension: 3 });
  t.after(() => store.close());
  await store.upsert({ source: 'docs', id: 'long', version: 1,
    chunks: Array.from({ length: 30 }, (_, i) => ({ text: `ratchet pawl ${i}`, vector: [1, 0.01 * i, 0] })) });
  for (let d = 0; d < 6; d++) {
    await store.upsert({ source: 'docs', id: `short${d}`, version: 1,
      chunks: [{ text: `ratchet note ${d}`, vector: [1, 0.5 + d, 0] }] });
  }
  const firstPerDocument = (hits, k) => {
    const seen = new Set();
    return hits.filter((h) => !seen.has(h.id) && seen.add(h.id)).slice(0, k).map((h) => `${h.id}#${h.position}`);
  };
  const plain = await store.search([1, 0, 0], { k: 5, exact: true });
  assert.equal(new Set(plain.map((h) => h.id)).size, 1, 'ungrouped: one document fills the top 5');
  const full = await store.search([1, 0, 0], { k: 100, exact: true });
  const grouped = await store.search([1, 0, 0], { k: 5, exact: true, perDocument: true });
  assert.deepEqual(grouped.map((h) => `${h.id}#${h.position}`), firstPerDocument(full, 5));
  const text = await store.searchText('ratchet', { k: 4, perDocument: true });
  assert.deepEqual(text.map((h) => `${h.id}#${h.position}`), firstPerDocument(await store.searchText('ratchet', { k: 100 }), 4));
  const hybrid = await store.searchHybrid('ratchet', [1, 0, 0], { k: 4, perDocument: true });
  assert.equal(new Set(hybrid.map((h) => h.id)).size, 4);
  await assert.rejects(store.search([1, 0, 0], { perDocument: 'yes' }), (e) => e instanceof InputError && e.field === 'perDocument');
});
