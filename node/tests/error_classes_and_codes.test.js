'use strict';
// Each failure a user can meet surfaces as its exported class with a `.code`, and its message
// names this API: a second writer (StoreLockedError), a write on a read-only store
// (ReadOnlyError), a closed store (ClosedError), a missing file with mustExist
// (StoreNotFoundError), another dimension on reopen (MismatchError), text search without the
// text index (NoTextIndexError), a file that is not a store (StoreOpenError).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const r = require('..');
const { tempDir } = require('./helpers');

const is = (Class, code) => (error) => {
  assert.ok(error instanceof Class, `${error.name}: ${error.message} is a ${Class.name}`);
  assert.ok(error instanceof r.RatchetError && error instanceof Error);
  assert.equal(error.code, code);
  assert.doesNotMatch(error.message, /::|--[a-z]|`ratchet /, `names the JavaScript API: ${error.message}`);
  return true;
};

test('error classes', async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'e.redb');
  const store = await r.Store.open(file, { dimension: 2 });
  await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'a', vector: [1, 0] }] });

  await assert.rejects(r.Store.open(file), is(r.StoreLockedError, 'ERR_RATCHET_LOCKED'));
  const reader = await r.Store.open(file, { readOnly: true });
  assert.equal(reader.readOnly, true);
  await assert.rejects(reader.upsert({ source: 's', id: 'b', version: 1, chunks: [] }), is(r.ReadOnlyError, 'ERR_RATCHET_READ_ONLY'));
  assert.equal((await reader.search([1, 0], { k: 1 }))[0].id, 'a');
  await reader.close();

  await store.close();
  assert.equal(store.closed, true);
  await assert.rejects(store.search([1, 0], { k: 1 }), is(r.ClosedError, 'ERR_RATCHET_CLOSED'));
  await assert.rejects(store.upsert({ source: 's', id: 'b', version: 1, chunks: [] }), is(r.ClosedError, 'ERR_RATCHET_CLOSED'));

  await assert.rejects(r.Store.open(path.join(dir, 'missing.redb'), { mustExist: true }), is(r.StoreNotFoundError, 'ERR_RATCHET_NOT_FOUND'));
  await assert.rejects(r.Store.open(file, { dimension: 3 }), (e) => is(r.MismatchError, 'ERR_RATCHET_MISMATCH')(e) && e.field === 'dimension');

  const bare = await r.Store.open(path.join(dir, 'bare.redb'), { dimension: 2, textIndex: false });
  await bare.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'words', vector: [1, 0] }] });
  await assert.rejects(bare.searchText('words', { k: 1 }), is(r.NoTextIndexError, 'ERR_RATCHET_NO_TEXT_INDEX'));
  await bare.close();

  const junk = path.join(dir, 'junk.redb');
  fs.writeFileSync(junk, Buffer.alloc(8192, 7));
  await assert.rejects(r.Store.open(junk), (e) => e instanceof r.StoreOpenError || e instanceof r.CorruptedError);
});

test('CommonJS and ESM export the same classes', async () => {
  const esm = await import('../index.mjs');
  for (const name of Object.keys(r)) assert.equal(esm[name], r[name], name);
  assert.equal(esm.default.Store, r.Store);
});
