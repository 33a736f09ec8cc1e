'use strict';
// The guard's outcomes through the Node API: a stale write refused as 'older' with both
// versions; a redelivery counted 'duplicate'; a newer version with the same content
// 'unchanged'; a delete followed by a stale write refused as 'tombstoned'; an equal version
// with other content refused as 'conflict'; a listing (retain) deleting what it omits.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store } = require('..');
const { tempDir } = require('./helpers');

const doc = (version, text, vector = [1, 0, 0]) => ({
  source: 'wiki', id: 'a.md', version, chunks: [{ text, vector }],
});

test('every outcome of the guard', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'g.redb'), { dimension: 3 });
  t.after(() => store.close());

  assert.equal((await store.upsert(doc(2, 'turns one way'))).status, 'written');
  const stale = await store.upsert(doc(1, 'turns both ways', [0, 1, 0]));
  assert.deepEqual([stale.status, stale.reason, stale.storedVersion, stale.incomingVersion], ['skipped', 'older', 2, 1]);

  const again = await store.upsert(doc(2, 'turns one way'));
  assert.deepEqual([again.status, again.reason], ['skipped', 'duplicate']);

  const bumped = await store.upsert(doc(3, 'turns one way'));
  assert.deepEqual([bumped.status, bumped.version], ['unchanged', 3]);

  const conflict = await store.upsert(doc(3, 'other text at the same version'));
  assert.deepEqual([conflict.status, conflict.reason], ['skipped', 'conflict']);

  assert.equal((await store.delete({ source: 'wiki', id: 'a.md', version: 5 })).status, 'deleted');
  const late = await store.upsert(doc(4, 'a late revision'));
  assert.deepEqual([late.status, late.reason], ['skipped', 'tombstoned']);
  assert.equal((await store.get('wiki', 'a.md')).deleted, true);
  assert.deepEqual(await store.search([1, 0, 0], { k: 5 }), []);

  for (const id of ['x', 'y', 'z']) {
    await store.upsert({ source: 'sync', id, version: 1, chunks: [{ text: id, vector: [0, 0, 1] }] });
  }
  const listing = await store.retain({ source: 'sync', ids: ['x'], version: 2 });
  assert.equal(listing.status, 'retained');
  assert.equal(listing.documentsRemoved, 2);
  assert.deepEqual((await store.search([0, 0, 1], { k: 5 })).map((h) => h.id), ['x']);

  const counters = (await store.stats()).counters;
  assert.equal(counters.skippedOlder, 1);
  assert.equal(counters.skippedDuplicate, 1);
  assert.equal(counters.skippedConflict, 1);
  assert.equal(counters.skippedTombstoned, 1);
  assert.equal(counters.unchanged, 1);
  assert.equal((await store.verify()).ok, true);
});
