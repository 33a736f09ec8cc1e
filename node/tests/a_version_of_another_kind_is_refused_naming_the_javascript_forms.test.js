'use strict';
// Regression test for the bug where a write whose version is of another kind than the
// document's said "versioned by timestamp_micros", the Rust name of the kind (and, on a store
// with an embedder writing a chunk without a vector, was a plain InputError saying so). The
// refusal is a VersionKindMismatchError on `version` whose message names the kinds as the
// JavaScript values that carry them (a number or bigint, a Date or Timestamp, a Ticket), and
// nothing is written.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, HashingEmbedder, VersionKindMismatchError } = require('..');
const { tempDir } = require('./helpers');

const RUST_NAME = /::|\b[a-z][a-z0-9]*_[a-z0-9_]+\b/;

const kindMismatch = (stored, incoming) => (error) => {
  assert.ok(error instanceof VersionKindMismatchError, `${error.name}: ${error.message}`);
  assert.equal(error.code, 'ERR_RATCHET_VERSION_KIND_MISMATCH');
  assert.equal(error.field, 'version');
  assert.doesNotMatch(error.message, RUST_NAME, `names no Rust item: ${error.message}`);
  assert.match(error.message, /version/);
  assert.ok(error.message.includes(`versioned by ${stored}`), error.message);
  assert.ok(error.message.includes(`version is ${incoming}`) || error.message.includes(`is ${incoming}, but`), error.message);
  return true;
};

const DATES = 'timestamps (Dates or Timestamps)';
const NUMBER = 'a number (or bigint)';
const TICKET = 'a Ticket (from store.ticket())';

test('a version of another kind than the document\'s is refused naming the JavaScript forms', async (t) => {
  const dir = tempDir(t);
  const store = await Store.open(path.join(dir, 'kinds.redb'), { dimension: 2 });
  t.after(() => store.close());
  const chunks = [{ text: 'dated', vector: [1, 0] }];
  await store.upsert({ source: 's', id: 'dated', version: new Date('2026-03-01T12:00:00Z'), chunks });
  await store.upsert({ source: 's', id: 'counted', version: 7, chunks });

  await assert.rejects(store.upsert({ source: 's', id: 'dated', version: 8, chunks }), kindMismatch(DATES, NUMBER));
  await assert.rejects(store.upsert({ source: 's', id: 'dated', version: 2n ** 60n, chunks }), kindMismatch(DATES, NUMBER));
  await assert.rejects(store.delete({ source: 's', id: 'dated', version: await store.ticket() }), kindMismatch(DATES, TICKET));
  await assert.rejects(store.upsert({ source: 's', id: 'counted', version: new Date(), chunks }),
    kindMismatch('numbers (or bigints)', 'a timestamp (a Date or Timestamp)'));
  const [batched] = await store.writeBatch([{ op: 'upsert', source: 's', id: 'dated', version: 9, chunks }]);
  assert.equal(batched.status, 'error');
  kindMismatch(DATES, NUMBER)(batched.error);
  assert.ok((await store.get('s', 'dated')).version instanceof Date, 'nothing was written');

  // With an embedder and a chunk without a vector the store plans the write first: the same
  // refusal.
  const embedded = await Store.open(path.join(dir, 'embedded.redb'), { embedder: new HashingEmbedder(8) });
  t.after(() => embedded.close());
  await embedded.upsert({ source: 's', id: 'dated', version: new Date('2026-03-01T12:00:00Z'), chunks: [{ text: 'dated' }] });
  await assert.rejects(embedded.upsert({ source: 's', id: 'dated', version: 8, chunks: [{ text: 'a new text' }] }), kindMismatch(DATES, NUMBER));
  assert.equal((await embedded.get('s', 'dated')).chunks[0].text, 'dated');
});
