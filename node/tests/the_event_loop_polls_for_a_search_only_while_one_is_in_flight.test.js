'use strict';
// While a search is in flight the event loop polls for its result (`setImmediate` turns)
// instead of sleeping, for at most `spinMicros`: every spin length answers the same hits
// (one search at a time and many at once), one chain of turns polls while searches are in
// flight and stops once they settle (no turn is left pending, so nothing keeps the process
// awake), a store with `spinMicros: 0` never polls, each store adapts its own spin (searches
// that outlast it turn it off, every 16th search probes, a probe that sees its search settle
// turns it on again, another store's searches never touch it), and a `spinMicros` that is not
// a whole number of microseconds from 0 to 100000 is refused.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, InputError } = require('..');
const { tempDir } = require('./helpers');

const DIM = 8;
const DOCS = 40;

function vectorOf(i) {
  const v = new Float32Array(DIM);
  for (let d = 0; d < DIM; d++) v[d] = Math.sin((i + 1) * (d + 3));
  return v;
}

const immediates = () => process.getActiveResourcesInfo().filter((r) => r === 'Immediate').length;
const settle = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('every spin length answers the same hits, one search at a time and many at once', async (t) => {
  const file = path.join(tempDir(t), 'spin.redb');
  const writer = await Store.open(file, { dimension: DIM });
  await writer.writeBatch(Array.from({ length: DOCS }, (_, i) => ({
    op: 'upsert', source: 's', id: `d${i}`, version: 1, chunks: [{ text: `doc ${i}`, vector: vectorOf(i) }],
  })));
  await writer.close();

  const answers = [];
  for (const spinMicros of [undefined, 0, 1, 100000]) {
    const store = await Store.open(file, spinMicros === undefined ? {} : { spinMicros });
    const one = [];
    for (let i = 0; i < DOCS; i++) {
      one.push((await store.search(vectorOf(i), { k: 3, exact: true })).map((h) => `${h.id}:${h.score}`));
    }
    const many = (await Promise.all(Array.from({ length: DOCS }, (_, i) => store.search(vectorOf(i), { k: 3, exact: true }))))
      .map((hits) => hits.map((h) => `${h.id}:${h.score}`));
    assert.deepEqual(many, one, `spinMicros ${spinMicros}: concurrent searches answer as sequential ones`);
    for (let i = 0; i < DOCS; i++) assert.equal(one[i][0].split(':')[0], `d${i}`);
    answers.push(one);
    await store.close();
  }
  for (const other of answers.slice(1)) assert.deepEqual(other, answers[0]);
});

test('the polling starts with a search and stops when the searches settle', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'poll.redb'), { dimension: DIM, spinMicros: 100000 });
  t.after(() => store.close());
  await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'only', vector: vectorOf(0) }] });
  await settle(5);
  assert.equal(immediates(), 0, 'no search in flight: no polling');

  const searches = Array.from({ length: 20 }, () => store.search(vectorOf(0), { k: 1 }));
  assert.equal(immediates(), 1, 'searches in flight: one chain of polling turns');
  for (const hits of await Promise.all(searches)) assert.equal(hits[0].id, 'a');
  // The turn that finds nothing in flight ends the chain.
  await new Promise((resolve) => setImmediate(resolve));
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(immediates(), 0, 'the polling stopped once the searches settled');
});

test('a store with spinMicros 0 never polls', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'sleep.redb'), { dimension: DIM, spinMicros: 0 });
  t.after(() => store.close());
  await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'only', vector: vectorOf(0) }] });
  const search = store.search(vectorOf(0), { k: 1 });
  assert.equal(immediates(), 0, 'a search in flight on a store that never spins starts no polling');
  assert.equal((await search)[0].id, 'a');
});

test('each store adapts its own spin: outlasted spins stop, a probe that sees its search restarts them', async (t) => {
  const dir = tempDir(t);
  const short = await Store.open(path.join(dir, 'short.redb'), { dimension: DIM, spinMicros: 1 });
  const long = await Store.open(path.join(dir, 'long.redb'), { dimension: DIM, spinMicros: 100000 });
  t.after(() => Promise.all([short.close(), long.close()]));
  for (const store of [short, long]) {
    await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'only', vector: vectorOf(0) }] });
  }
  // A 1 µs spin ends before any search settles: each search halves the store's spin until
  // it is off (1 -> 1/2 -> ... -> 1/128 -> 0: eight searches); the other store's spins, which
  // see their searches settle, stay whole, searches of both interleaved.
  for (let i = 0; i < 12; i++) {
    assert.equal((await short.search(vectorOf(0), { k: 1 }))[0].id, 'a');
    assert.equal((await long.search(vectorOf(0), { k: 1 }))[0].id, 'a');
  }
  assert.equal(short._spinScale, 0, 'outlasted spins turned the store\'s spin off');
  assert.equal(long._spinScale, 1, 'the other store kept its whole spin');
  // Off, a store starts no polling, except every 16th search, which probes in full (after a
  // turn that ends the other store's chain).
  await new Promise((resolve) => setImmediate(resolve));
  let polled = 0;
  for (let i = 0; i < 32; i++) {
    const search = short.search(vectorOf(0), { k: 1 });
    polled += immediates();
    await search;
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(polled, 2, 'two probes in 32 searches');
  assert.equal(short._spinScale, 0, 'a probe that ran out before its search settled keeps it off');
  // A probe long enough to see its search settle turns the spin on again.
  short._spinMicros = 100000;
  for (let i = 0; i < 16 && short._spinScale === 0; i++) await short.search(vectorOf(0), { k: 1 });
  assert.equal(short._spinScale, 1, 'a probe that saw its search settle restored the spin');
});

test('a spinMicros that is not a whole number of microseconds from 0 to 100000 is refused', async (t) => {
  const dir = tempDir(t);
  for (const spinMicros of [-1, 1.5, 100001, '10', null, Number.NaN]) {
    await assert.rejects(Store.open(path.join(dir, 'bad.redb'), { dimension: DIM, spinMicros }), (e) => {
      assert.ok(e instanceof InputError, `${spinMicros}: ${e}`);
      assert.equal(e.field, 'spinMicros');
      return true;
    });
  }
  assert.deepEqual(require('node:fs').readdirSync(dir), [], 'a refused open creates no file');
});
