'use strict';
// Regression test for the bug where a timestamp version came back as a Date, cut to the
// millisecond: a version stored to the microsecond (1767225600123456) read back as
// 1767225600123000, lower than stored, so passing it back in was refused as older instead of
// recognised as the same version. Reads now give a Timestamp (a Date that also carries the
// exact microseconds): from `get`, `export`, a hit and a write's outcome it is the stored
// version, and written again it is a duplicate, not a write.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, Timestamp } = require('..');
const { tempDir } = require('./helpers');

const MICROS = 1767225600123456n; // 2026-01-01T00:00:00.123456Z
const chunks = [{ text: 'to the microsecond', vector: [1, 0] }];

test('a microsecond timestamp version reads back exactly and writes back as the same version', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'micros.redb'), { dimension: 2 });
  t.after(() => store.close());

  const written = await store.upsert({ source: 's', id: 'd', version: new Timestamp(MICROS), chunks });
  assert.equal(written.status, 'written');
  assert.equal(written.version.micros, MICROS);

  const { version } = await store.get('s', 'd');
  assert.ok(version instanceof Timestamp && version instanceof Date);
  assert.equal(version.micros, MICROS, 'the stored microseconds, not the millisecond below them');
  assert.equal(version.getTime(), 1767225600123);
  const [hit] = await store.search([1, 0], { k: 1 });
  assert.equal(hit.version.micros, MICROS);
  const exported = [];
  for await (const doc of store.export()) exported.push(doc.version.micros);
  assert.deepEqual(exported, [MICROS]);

  // The version read back, written again: the same version (a duplicate), nothing written.
  const again = await store.upsert({ source: 's', id: 'd', version, chunks });
  assert.deepEqual([again.status, again.reason], ['skipped', 'duplicate']);
  assert.equal(again.storedVersion.micros, MICROS);
  assert.equal(again.incomingVersion.micros, MICROS);
  // The outcome's storedVersion, written again with a new text: the same version still.
  const changed = await store.upsert({ source: 's', id: 'd', version: again.storedVersion, chunks: [{ text: 'other', vector: [0, 1] }] });
  assert.equal(changed.status, 'skipped');
  assert.equal(changed.storedVersion.micros, MICROS);
  assert.equal((await store.get('s', 'd')).chunks[0].text, 'to the microsecond');
  // A Date of the same millisecond is older: what a read gave before the fix.
  const asDate = await store.upsert({ source: 's', id: 'd', version: new Date(version.getTime()), chunks });
  assert.equal(asDate.reason, 'older');
  // One microsecond later is newer.
  const next = await store.upsert({ source: 's', id: 'd', version: new Timestamp(MICROS + 1n), chunks });
  assert.equal(next.status, 'unchanged');
  assert.equal((await store.get('s', 'd')).version.micros, MICROS + 1n);

  // Past a Date's range (year 275760) the Date is invalid but the microseconds still hold.
  const far = (1n << 63n) + 5n;
  await store.upsert({ source: 's', id: 'far', version: new Timestamp(far), chunks });
  const stored = (await store.get('s', 'far')).version;
  assert.equal(stored.micros, far);
  assert.ok(Number.isNaN(stored.getTime()));
  assert.equal((await store.upsert({ source: 's', id: 'far', version: stored, chunks })).reason, 'duplicate');

  // A Timestamp moved by a Date setter is the Date's time, as any Date.
  const moved = new Timestamp(MICROS);
  moved.setTime(1767225600124);
  const movedOutcome = await store.upsert({ source: 's', id: 'd', version: moved, chunks });
  assert.equal(movedOutcome.status, 'unchanged');
  assert.equal(movedOutcome.version.micros, 1767225600124000n);
  assert.throws(() => new Timestamp(-1n), /timestamp/);
  assert.throws(() => new Timestamp(5), /timestamp/);
});
