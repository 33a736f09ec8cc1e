'use strict';
// Regression (review): metadata and filters were checked only at their top level, so a value
// napi's conversion cannot carry (NaN, Infinity, undefined in an array, a function, a nesting
// past its limit) failed with a plain Error naming `serde_json::Value`, and a Date or a Map
// inside became `{}` silently. Each is now an InputError naming the field, and nothing is
// written. And three inputs that panicked in the addon: `searchMany` of empty vectors (a
// reader thread died and its promise never settled), a lock wait or index wait too long for
// a Duration (the process aborted), a HashingEmbedder of 2^32 - 1 buckets (16 GiB a vector).

const test = require('node:test');
const assert = require('node:assert/strict');
const { Store, InputError, HashingEmbedder } = require('ratchetdb');
const path = require('node:path');
const { tempDir } = require('./helpers.js');

const tempPath = (t) => path.join(tempDir(t), 'store.redb');

test('metadata and filters of values JSON cannot hold are refused, naming the field', async (t) => {
  const store = await Store.open(tempPath(t), { dimension: 2 });
  t.after(() => store.close());
  const upsert = (meta, chunkMeta) => store.upsert({
    source: 's', id: 'a', version: 1, meta, chunks: [{ text: 't', vector: [1, 0], meta: chunkMeta }],
  });
  let deep = {};
  for (let i = 0; i < 200; i++) deep = { d: deep };
  const cases = [
    [upsert({ score: NaN }), 'meta.score'],
    [upsert({ score: Infinity }), 'meta.score'],
    [upsert({ tags: ['a', undefined] }), 'meta.tags[1]'],
    [upsert({ at: new Date(0) }), 'meta.at'],
    [upsert({ seen: new Map() }), 'meta.seen'],
    [upsert({ f: () => 1 }), 'meta.f'],
    [upsert({}, { gone: undefined }), 'chunks[0].meta.gone'],
    [upsert(deep), /^meta(\.d)+$/],
    [store.search([1, 0], { where: { year: { $gte: Infinity } } }), 'where.year.$gte'],
    [store.search([1, 0], { where: { lang: [new Date(0)] } }), 'where.lang[0]'],
  ];
  for (const [promise, field] of cases) {
    await assert.rejects(promise, (e) => {
      assert.ok(e instanceof InputError, `${field}: ${e}`);
      if (field instanceof RegExp) assert.match(e.field, field);
      else assert.equal(e.field, field);
      return true;
    });
  }
  assert.equal(await store.get('s', 'a'), null, 'nothing written');
  // A null prototype and plain values are JSON.
  const meta = Object.assign(Object.create(null), { n: 1, s: 'x', b: true, z: null, a: [1, 'two'], big: 2n ** 60n });
  assert.equal((await upsert(meta)).status, 'written');
});

test('inputs that panicked in the addon are refused or served', async (t) => {
  const store = await Store.open(tempPath(t), { dimension: 2, waitForLockMs: 1e30 });
  t.after(() => store.close());
  await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 't', vector: [1, 0] }] });
  await assert.rejects(store.searchMany([[]]), (e) => e instanceof InputError && e.field === 'vectors[0]');
  await assert.rejects(store.searchMany([new Float32Array(0)]), (e) => e instanceof InputError);
  // Still served afterwards: no reader thread was lost.
  for (let i = 0; i < 8; i++) assert.equal((await store.search([1, 0], { k: 1 })).length, 1);
  assert.equal(await store.waitForIndex(Number.MAX_VALUE), true);
  assert.equal(await store.waitForIndex(Infinity), true);
  assert.throws(() => new HashingEmbedder(2 ** 32 - 1), (e) => e instanceof InputError && e.field === 'dimension');
  assert.throws(() => new HashingEmbedder(8193), (e) => e instanceof InputError && e.field === 'dimension');
  assert.equal(new HashingEmbedder(8192).dimension, 8192);
});
