'use strict';
// Metadata filters (`where`) and `sources` through the Node API return exactly the chunks a
// reference evaluation of the same filter keeps (exact search, so the order is the true one),
// for vector, text and hybrid search; a chunk's key falls back to its document's metadata.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store } = require('..');
const { tempDir } = require('./helpers');

test('filters and sources match a reference', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'f.redb'), { dimension: 2 });
  t.after(() => store.close());
  const chunks = [];
  for (let d = 0; d < 40; d++) {
    const source = d % 2 ? 'wiki' : 'mail';
    const docMeta = { year: 2010 + (d % 15) };
    const doc = { source, id: `d${d}`, version: 1, meta: docMeta, chunks: [] };
    for (let c = 0; c < 3; c++) {
      const meta = { lang: ['en', 'fr', 'de'][(d + c) % 3], tags: c === 1 ? ['rust', 'db'] : ['db'] };
      const angle = (d * 3 + c) / 10;
      doc.chunks.push({ text: `common word chunk ${d} ${c}`, vector: [Math.cos(angle), Math.sin(angle)], meta });
      chunks.push({ source, id: `d${d}`, position: c, meta: { ...docMeta, ...meta } });
    }
    await store.upsert(doc);
  }
  const filters = [
    [{ lang: 'en' }, (m) => m.lang === 'en'],
    [{ year: { $gte: 2020 } }, (m) => m.year >= 2020],
    [{ $or: [{ lang: 'fr' }, { year: { $lt: 2012 } }] }, (m) => m.lang === 'fr' || m.year < 2012],
    [{ tags: { $contains: 'rust' }, lang: { $in: ['en', 'de'] } }, (m) => m.tags.includes('rust') && ['en', 'de'].includes(m.lang)],
    [{ $not: { lang: 'en' } }, (m) => m.lang !== 'en'],
  ];
  const key = (h) => `${h.source}/${h.id}#${h.position}`;
  for (const [where, keep] of filters) {
    for (const sources of [undefined, ['wiki']]) {
      const expected = chunks.filter((c) => keep(c.meta) && (!sources || sources.includes(c.source))).map(key).sort();
      const options = { k: 200, where, sources, exact: true };
      const vector = (await store.search([1, 0], options)).map(key).sort();
      assert.deepEqual(vector, expected, `vector ${JSON.stringify(where)} ${sources}`);
      const text = (await store.searchText('common', { k: 200, where, sources })).map(key).sort();
      assert.deepEqual(text, expected, `text ${JSON.stringify(where)} ${sources}`);
      const hybrid = (await store.searchHybrid('common', [1, 0], options)).map(key).sort();
      assert.deepEqual(hybrid, expected, `hybrid ${JSON.stringify(where)} ${sources}`);
    }
  }
});
