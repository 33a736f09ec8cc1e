'use strict';
// Issue 48 in Node: `Store.open(path, { memoryBudget })` reaches the Rust option: a store under
// a budget answers searches with the same hits and exact scores as without one, and a budget
// too small for the store's live vectors is refused with an InputError on `memoryBudget`
// naming the smallest budget that works, the store left unchanged. `rerank` (the candidates a
// budgeted search scores exactly from the file) is passed too: every score stays exact, and 0
// is an InputError on `rerank`.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, InputError } = require('..');
const { tempDir } = require('./helpers');

test('a memory budget is passed through, and an impossible one refused', async (t) => {
  const file = path.join(tempDir(t), 'budget.redb');
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648 - 0.5; };
  const vectors = Array.from({ length: 300 }, () => Float32Array.from({ length: 32 }, random));
  let store = await Store.open(file, { dimension: 32 });
  await store.writeBatch(vectors.map((vector, i) => ({ op: 'upsert', source: 's', id: `d${i}`, version: 1,
    chunks: [{ text: `text ${i}`, vector }] })));
  const unbudgeted = await store.search(vectors[5], { k: 3 });
  await store.close();

  await assert.rejects(Store.open(file, { memoryBudget: 1024 }), (error) => {
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.field, 'memoryBudget');
    assert.match(error.message, /smallest budget that works/);
    assert.doesNotMatch(error.message, /memory_budget|Options::/);
    return true;
  });
  await assert.rejects(Store.open(file, { memoryBudget: -1 }), (error) => error instanceof InputError && error.field === 'memoryBudget');

  store = await Store.open(file, { memoryBudget: 64 * 1024 * 1024 });
  t.after(() => store.close());
  const budgeted = await store.search(vectors[5], { k: 3 });
  assert.equal(budgeted[0].id, 'd5');
  assert.deepEqual(budgeted.map((h) => h.id), unbudgeted.map((h) => h.id));
  budgeted.forEach((h, i) => assert.ok(Math.abs(h.score - unbudgeted[i].score) < 1e-5));
  const narrow = await store.search(vectors[5], { k: 3, ef: 64, rerank: 3 });
  assert.equal(narrow.length, 3);
  const cosine = (a, b) => {
    let [ab, aa, bb] = [0, 0, 0];
    a.forEach((x, i) => { ab += x * b[i]; aa += x * x; bb += b[i] * b[i]; });
    return ab / Math.sqrt(aa * bb);
  };
  narrow.forEach((h) => {
    const exact = cosine(vectors[Number(h.id.slice(1))], vectors[5]);
    assert.ok(Math.abs(h.score - exact) < 1e-5, `${h.id}: ${h.score} against ${exact}`);
  });
  await assert.rejects(store.search(vectors[5], { k: 3, rerank: 0 }), (error) => error instanceof InputError && error.field === 'rerank');
  // Above Limits::max_k (10,000): refused by the store itself, so the value reached it.
  await assert.rejects(store.search(vectors[5], { k: 3, rerank: 10001 }), (error) => error instanceof InputError && error.field === 'rerank' && /at most/.test(error.message));
});
