'use strict';
// Bad input through the Node API is an InputError (or a subclass) naming the field, with a
// `.code`, and the store is exactly as before: its export is unchanged. Error messages name
// this API (no Rust paths such as `Store::`, no command-line flags).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const ratchetdb = require('..');
const { Store, InputError, DimensionMismatchError } = ratchetdb;
const { tempDir, exported } = require('./helpers');

const good = { source: 'wiki', id: 'a', version: 1, chunks: [{ text: 'ok', vector: [1, 0, 0] }] };

function expectInput(field, Class = InputError) {
  return (error) => {
    assert.ok(error instanceof Class, `${error} is a ${Class.name}`);
    assert.ok(error instanceof ratchetdb.RatchetError);
    assert.equal(typeof error.code, 'string');
    assert.equal(error.field, field, `${error.message} names ${field}`);
    assert.doesNotMatch(error.message, /::|--[a-z]|`ratchet /, 'the message names the JavaScript API');
    return true;
  };
}

test('bad input is refused, names its field and changes nothing', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'b.redb'), { dimension: 3 });
  t.after(() => store.close());
  await store.upsert(good);
  const before = await exported(store);

  const cases = [
    [{ ...good, id: 'n', chunks: [{ text: 'x', vector: [NaN, 0, 0] }] }, 'chunks[0].vector[0]'],
    [{ ...good, id: 'i', chunks: [{ text: 'x', vector: [Infinity, 0, 0] }] }, 'chunks[0].vector[0]'],
    [{ ...good, id: 's', chunks: [{ text: 'x', vector: ['1', 0, 0] }] }, 'chunks[0].vector[0]'],
    [{ ...good, id: 'v', chunks: [{ text: 'x', vector: 'not a vector' }] }, 'chunks[0].vector'],
    [{ ...good, id: 'u', chunks: [{ text: 'lone \ud800 surrogate', vector: [1, 0, 0] }] }, 'chunks[0].text'],
    [{ ...good, id: 'm', chunks: [{ text: 'x', vector: [1, 0, 0], meta: [1, 2] }] }, 'chunks[0].meta'],
    [{ ...good, id: 'k', chunks: [{ text: 'x', vector: [1, 0, 0], extra: 1 }] }, 'chunks[0].extra'],
    [{ ...good, version: 'seven' }, 'version'],
    [{ ...good, version: -1 }, 'version'],
    [{ ...good, version: 1.5 }, 'version'],
    [{ ...good, version: NaN }, 'version'],
    [{ ...good, version: new Date(NaN) }, 'version'],
    [{ ...good, id: 7 }, 'id'],
    [{ ...good, id: '' }, 'id'],
    [{ ...good, source: undefined }, 'source'],
    [{ ...good, chunks: 'text' }, 'chunks'],
  ];
  for (const [doc, field] of cases) {
    await assert.rejects(store.upsert(doc), expectInput(field), `${JSON.stringify(doc, (_, v) => (typeof v === 'number' && !Number.isFinite(v) ? String(v) : v))}`);
  }
  await assert.rejects(
    store.upsert({ ...good, id: 'd', chunks: [{ text: 'x', vector: [1, 0] }] }),
    expectInput('chunks[0].vector', DimensionMismatchError),
  );
  await assert.rejects(store.writeBatch([good, { op: 'upsert', ...good, version: 'x' }]), expectInput('ops[0].op'));
  await assert.rejects(store.writeBatch([{ op: 'upsert', ...good, version: 2 }, { op: 'upsert', ...good, version: 'x' }]), expectInput('ops[1].version'));

  for (const [options, field] of [
    [{ k: 0 }, 'k'], [{ k: 1.5 }, 'k'], [{ k: 1e20 }, 'k'], [{ k: '5' }, 'k'],
    [{ where: 'lang = en' }, 'where'], [{ where: { $bogus: 1 } }, 'where.$bogus'],
    [{ sources: [1] }, 'sources[0]'], [{ exact: 'yes' }, 'exact'], [{ ef: -1 }, 'ef'],
    [{ limit: 5 }, 'options.limit'],
  ]) {
    await assert.rejects(store.search([1, 0, 0], options), expectInput(field), JSON.stringify(options));
  }
  await assert.rejects(store.search([1, 0], { k: 1 }), (e) => e instanceof ratchetdb.RatchetError && /dimension|3/.test(e.message));
  await assert.rejects(store.searchText('\udc00', { k: 1 }), expectInput('query'));
  await assert.rejects(store.searchText(42, { k: 1 }), expectInput('query'));
  await assert.rejects(Store.open(path.join(tempDir(t), 'o.redb'), { dimensions: 3 }), expectInput('options.dimensions'));

  assert.deepEqual(await exported(store), before, 'nothing changed');
  assert.equal((await store.verify()).ok, true);
});
