'use strict';
// Bad input around embedders is refused with a typed error naming the field and changes
// nothing: text without a vector on a store with no embedder (MissingVectorError on
// chunks[0].vector), searchQuery and a vector-less searchHybrid without an embedder
// (InputError on embedder / vector), an embedder whose model or dimension disagrees with
// what the store recorded (MismatchError on model / dimension), options that contradict the
// embedder, something that is not an embedder, and bad texts or dimensions.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, HashingEmbedder, InputError, MissingVectorError, MismatchError } = require('..');
const { tempDir, exported } = require('./helpers');

test('bad embedder input is refused and leaves the store unchanged', async (t) => {
  const file = path.join(tempDir(t), 'plain.redb');
  const plain = await Store.open(file, { dimension: 3, model: 'my-model' });
  await plain.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'kept', vector: [1, 0, 0] }] });
  const before = await exported(plain);

  await assert.rejects(plain.upsert({ source: 's', id: 'b', version: 1, chunks: [{ text: 'no vector here' }] }),
    (e) => e instanceof MissingVectorError && e.field === 'chunks[0].vector');
  await assert.rejects(plain.searchQuery('kept'), (e) => e instanceof InputError && e.field === 'embedder');
  await assert.rejects(plain.searchHybrid('kept', { k: 1 }), (e) => e instanceof InputError && e.field === 'vector');
  assert.deepEqual(await exported(plain), before);
  await plain.close();

  await assert.rejects(Store.open(file, { embedder: new HashingEmbedder(3) }),
    (e) => e instanceof MismatchError && e.field === 'model');
  const otherWidth = path.join(path.dirname(file), 'hashed.redb');
  const hashed = await Store.open(otherWidth, { embedder: new HashingEmbedder(8) });
  await hashed.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'eight wide' }] });
  const hashedBefore = await exported(hashed);
  await hashed.close();
  await assert.rejects(Store.open(otherWidth, { embedder: new HashingEmbedder(16) }),
    (e) => e instanceof MismatchError && (e.field === 'dimension' || e.field === 'model'));
  await assert.rejects(Store.open(otherWidth, { embedder: new HashingEmbedder(8), dimension: 9 }),
    (e) => e instanceof InputError && e.field === 'dimension');
  await assert.rejects(Store.open(otherWidth, { embedder: new HashingEmbedder(8), model: 'other' }),
    (e) => e instanceof InputError && e.field === 'model');
  await assert.rejects(Store.open(otherWidth, { embedder: { embed: async () => [] } }),
    (e) => e instanceof InputError && e.field === 'embedder');
  const reopened = await Store.open(otherWidth, { readOnly: true });
  assert.deepEqual(await exported(reopened), hashedBefore);
  await reopened.close();

  const other = await Store.open(path.join(path.dirname(file), 'reopened.redb'), { embedder: new HashingEmbedder(8) });
  t.after(() => other.close());
  assert.throws(() => new HashingEmbedder(0), (e) => e instanceof InputError && e.field === 'dimension');
  assert.throws(() => new HashingEmbedder(2.5), (e) => e instanceof InputError && e.field === 'dimension');
  await assert.rejects(other.embedder.embed('not an array'), (e) => e instanceof InputError && e.field === 'texts');
  await assert.rejects(other.embedder.embed(['ok', 7]), (e) => e instanceof InputError && e.field === 'texts[1]');
  await assert.rejects(other.searchQuery(42), (e) => e instanceof InputError && e.field === 'question');
  await assert.rejects(other.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'x', vector: [1, 0] }] }),
    (e) => e instanceof InputError && e.field === 'chunks[0].vector');
  assert.deepEqual(await exported(other), []);
});
