'use strict';
// A search's hits reach JavaScript exactly as `get` returns the same chunks, whatever their
// strings hold (characters outside the BMP, combining marks, NUL in texts, separators, JSON
// syntax, empty texts) and whatever their versions (numbers, bigints above 2^53, Dates,
// tickets), from every kind of search: hits cross the binding as a compact text of lengths
// and strings end to end (node/src/convert.rs, `hits_compact`), not as JSON.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, Ticket } = require('..');
const { tempDir } = require('./helpers');

const strings = ['plain', '', 'naïve café', '𝄞 clef 😀', 'e\u0301 combined', 'nul\u0000inside', ';{"x":[1,2]},', '\\"quoted\\"', '7;7;7', 'line\nbreak\ttab'];

test('hits carry every string and version exactly', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'strings.redb'), { dimension: 3 });
  t.after(() => store.close());
  const ticket = await store.ticket();
  const versions = [1, 2n ** 60n + 7n, new Date('2026-01-02T03:04:05.678Z'), ticket];
  const written = [];
  for (let i = 0; i < strings.length; i++) {
    // Sources and ids refuse NUL (texts and meta take it).
    const source = strings[(i + 3) % strings.length].replace('\u0000', '0') || 'src';
    const id = `${strings[(i + 5) % strings.length].replace('\u0000', '0')}#${i}`;
    const version = i % 4 === 3 ? await store.ticket() : versions[i % 4];
    const meta = i % 2 === 0 ? { s: strings[i], n: i, nested: { list: [strings[i], null, true] } } : undefined;
    await store.upsert({ source, id, version, chunks: [{ text: `${strings[i]} word${i}`, vector: [1, i / 10, 0], meta }, { text: strings[i], vector: [0, 1, i / 10] }] });
    written.push([source, id]);
  }
  const expected = new Map();
  for (const [source, id] of written) {
    const doc = await store.get(source, id);
    for (const chunk of doc.chunks) expected.set(`${source}\u0001${id}\u0001${chunk.position}`, { doc, chunk });
  }
  const check = (hits, label) => {
    assert.ok(hits.length > 0, label);
    for (const hit of hits) {
      assert.deepEqual(Object.keys(hit), ['source', 'id', 'position', 'text', 'meta', 'score', 'version'], label);
      const want = expected.get(`${hit.source}\u0001${hit.id}\u0001${hit.position}`);
      assert.ok(want, `${label}: a hit of a written chunk`);
      assert.equal(hit.text, want.chunk.text, label);
      assert.deepEqual(hit.meta, want.chunk.meta ?? {}, label);
      assert.equal(typeof hit.score, 'number', label);
      const version = want.doc.version;
      if (version instanceof Date) assert.equal(hit.version.getTime(), version.getTime(), label);
      else if (version instanceof Ticket) assert.equal(String(hit.version.value), String(version.value), label);
      else assert.equal(hit.version, version, label);
    }
  };
  const total = expected.size;
  check(await store.search([1, 0.5, 0], { k: total }), 'search');
  check(await store.search([1, 0.5, 0], { k: total, exact: true }), 'exact search');
  check(await store.searchText('word3 word4 word8', { k: total }), 'searchText');
  check(await store.searchHybrid('word5', [0, 1, 0.3], { k: total }), 'searchHybrid');
  for (const list of await store.searchMany([[1, 0, 0], [0, 1, 0]], { k: total })) check(list, 'searchMany');
  const everything = await store.search([1, 0.5, 0], { k: total, exact: true });
  assert.equal(everything.length, total);
  assert.deepEqual(new Set(everything.map((h) => `${h.source}\u0001${h.id}\u0001${h.position}`)), new Set(expected.keys()));
});
