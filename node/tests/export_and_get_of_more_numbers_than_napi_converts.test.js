'use strict';
// Regression (review): stored vectors came back as JSON arrays, one value per number, and
// napi's conversion refuses more than 1,000,000 values: `export({ vectors: true })` failed on
// a page of 256 documents once they held about a million numbers (the page's documents lost
// to the iteration), and `get(..., { vectors: true })` on one document of about 2,600 384-d
// chunks. Vectors now come as one value each, and a page stops before the limit.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store } = require('ratchetdb');
const { tempDir } = require('./helpers.js');

const DIM = 384;
const vectorOf = (seed) => {
  const v = new Float32Array(DIM);
  for (let i = 0; i < DIM; i++) v[i] = Math.sin(seed * 7.31 + i * 0.37) + (i === seed % DIM ? 3 : 0);
  return v;
};

test('a document of 3,000 chunks and an export of 1.2 million numbers come back whole', async (t) => {
  // L2: the store keeps the vectors as given (cosine stores them at unit length).
  const store = await Store.open(path.join(tempDir(t), 'big.redb'), { dimension: DIM, metric: 'l2' });
  t.after(() => store.close());
  const big = Array.from({ length: 3000 }, (_, i) => ({ text: `chunk ${i}`, vector: vectorOf(i) }));
  assert.equal((await store.upsert({ source: 's', id: 'big', version: 1, chunks: big })).status, 'written');
  const many = Array.from({ length: 100 }, (_, d) => ({
    op: 'upsert', source: 's', id: `d${String(d).padStart(3, '0')}`, version: 1,
    chunks: Array.from({ length: 3 }, (_, c) => ({ text: `d${d} c${c}`, vector: vectorOf(10_000 + d * 3 + c) })),
  }));
  for (const result of await store.writeBatch(many)) assert.equal(result.status, 'written');

  const got = await store.get('s', 'big', { vectors: true });
  assert.equal(got.chunks.length, 3000);
  for (const i of [0, 1234, 2999]) {
    assert.ok(got.chunks[i].vector instanceof Float32Array);
    assert.deepEqual(got.chunks[i].vector, vectorOf(i), `chunk ${i}, bit for bit`);
  }

  const seen = [];
  for await (const doc of store.export({ vectors: true })) seen.push(doc);
  assert.equal(seen.length, 101, 'every document, none lost to a failed page');
  const numbers = seen.reduce((n, doc) => n + doc.chunks.reduce((m, c) => m + c.vector.length, 0), 0);
  assert.equal(numbers, (3000 + 300) * DIM);
  const d042 = seen.find((doc) => doc.id === 'd042');
  assert.deepEqual(d042.chunks[2].vector, vectorOf(10_000 + 42 * 3 + 2));
});
