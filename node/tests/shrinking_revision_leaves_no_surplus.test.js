'use strict';
// A revision with fewer chunks removes the surplus in the same transaction: no surplus chunk
// is found by get, vector, text or hybrid search, or the export; old words and vectors of a
// rewritten chunk are never returned.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store } = require('..');
const { tempDir } = require('./helpers');

test('a shrinking revision', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 's.redb'), { dimension: 3 });
  t.after(() => store.close());
  await store.upsert({ source: 'docs', id: 'guide', version: 1, chunks: [
    { text: 'alpha install steps', vector: [1, 0, 0], meta: { part: 1 } },
    { text: 'bravo configure zebra', vector: [0, 1, 0], meta: { part: 2 } },
    { text: 'charlie troubleshoot quokka', vector: [0, 0, 1], meta: { part: 3 } },
  ] });
  const out = await store.upsert({ source: 'docs', id: 'guide', version: 2, chunks: [
    { text: 'alpha install steps', vector: [1, 0, 0], meta: { part: 1 } },
  ] });
  assert.equal(out.status, 'written');
  assert.equal(out.chunksRemoved, 2);

  const doc = await store.get('docs', 'guide');
  assert.deepEqual(doc.chunks.map((c) => c.text), ['alpha install steps']);
  for (const vector of [[0, 1, 0], [0, 0, 1]]) {
    const hits = await store.search(vector, { k: 10, exact: true });
    assert.ok(hits.every((h) => h.text === 'alpha install steps' && h.version === 2));
  }
  for (const word of ['zebra', 'quokka']) {
    assert.deepEqual(await store.searchText(word, { k: 10 }), []);
    const hybrid = await store.searchHybrid(word, [0, 1, 0], { k: 10 });
    assert.ok(hybrid.every((h) => h.text === 'alpha install steps'));
  }
  assert.deepEqual(await store.search([0, 1, 0], { k: 10, where: { part: 2 } }), []);
  const exported = [];
  for await (const d of store.export()) exported.push(d);
  assert.equal(exported.length, 1);
  assert.equal(exported[0].chunks.length, 1);
  assert.equal((await store.verify()).ok, true);
});
