'use strict';
// Versions of every kind cross the binding unrounded: numbers, bigints above 2^53, Dates
// (source timestamps, compared to the microsecond) and store-issued Tickets; a write whose
// version is of another kind than the document's is a VersionKindMismatchError.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, Ticket, VersionKindMismatchError } = require('..');
const { tempDir } = require('./helpers');

const chunk = (text) => [{ text, vector: [1, 0] }];

test('numbers, bigints, Dates and tickets', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'v.redb'), { dimension: 2 });
  t.after(() => store.close());

  const big = 2n ** 60n + 1n;
  await store.upsert({ source: 's', id: 'big', version: big, chunks: chunk('big') });
  assert.equal((await store.get('s', 'big')).version, big);
  const older = await store.upsert({ source: 's', id: 'big', version: big - 1n, chunks: chunk('older') });
  assert.deepEqual([older.reason, older.storedVersion, older.incomingVersion], ['older', big, big - 1n]);

  const when = new Date('2026-03-01T12:00:00.123Z');
  await store.upsert({ source: 's', id: 'dated', version: when, chunks: chunk('dated') });
  const stored = (await store.get('s', 'dated')).version;
  assert.ok(stored instanceof Date);
  assert.equal(stored.getTime(), when.getTime());
  const earlier = await store.upsert({ source: 's', id: 'dated', version: new Date(when.getTime() - 1), chunks: chunk('x') });
  assert.equal(earlier.reason, 'older');

  const first = await store.ticket();
  const second = await store.ticket();
  assert.ok(first instanceof Ticket && second instanceof Ticket);
  assert.ok(second.value > first.value);
  await store.upsert({ source: 's', id: 'ticketed', version: second, chunks: chunk('new') });
  const retried = await store.upsert({ source: 's', id: 'ticketed', version: first, chunks: chunk('old') });
  assert.equal(retried.reason, 'older');
  const [hit] = await store.search([1, 0], { k: 1, sources: 's', where: {} });
  assert.ok(hit);

  await assert.rejects(
    store.upsert({ source: 's', id: 'dated', version: 99, chunks: chunk('a number now') }),
    (e) => e instanceof VersionKindMismatchError && e.code === 'ERR_RATCHET_VERSION_KIND_MISMATCH',
  );
});
