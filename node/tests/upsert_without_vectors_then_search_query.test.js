'use strict';
// A store opened with an embedder embeds the chunks written without a vector: upserts (and
// writeBatch) of text alone are written with the embedder's vectors (the same ones
// `embedder.embed` gives), `searchQuery` embeds the question and finds the text, and
// `searchHybrid` without a vector embeds its query. The store records the embedder's model
// and dimension; a rewrite re-embeds only the chunks whose text is new.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, HashingEmbedder } = require('..');
const { tempDir } = require('./helpers');

test('upsert without vectors, then searchQuery finds the text', async (t) => {
  const embedder = new HashingEmbedder(256);
  const store = await Store.open(path.join(tempDir(t), 'embedded.redb'), { embedder });
  t.after(() => store.close());
  assert.equal(store.embedder, embedder);
  assert.equal(store.model, embedder.model);
  assert.equal(store.dimension, 256);

  const texts = ['the kettle whistles when the water boils', 'a heron waits in the shallow river', 'compaction frees the pages of old revisions'];
  const out = await store.upsert({ source: 'notes', id: 'a.md', version: 1, chunks: texts.slice(0, 2).map((text) => ({ text, meta: { lang: 'en' } })) });
  assert.equal(out.status, 'written');
  const [batch] = await store.writeBatch([{ op: 'upsert', source: 'notes', id: 'b.md', version: 1, chunks: [{ text: texts[2] }] }]);
  assert.equal(batch.status, 'written');

  const expected = await embedder.embed(texts);
  const doc = await store.get('notes', 'a.md', { vectors: true });
  doc.chunks.forEach((chunk, i) => chunk.vector.forEach((x, j) => assert.ok(Math.abs(x - expected[i][j]) <= 1e-6)));

  for (const text of texts) {
    const [hit] = await store.searchQuery(text, { k: 1 });
    assert.equal(hit.text, text);
  }
  const [filtered] = await store.searchQuery('heron river', { k: 1, where: { lang: 'en' } });
  assert.equal(filtered.text, texts[1]);
  const [hybrid] = await store.searchHybrid('kettle water boils', { k: 1 });
  assert.equal(hybrid.text, texts[0]);

  // A rewrite keeping one text reuses its stored vector and embeds only the new one.
  const rewrite = await store.upsert({ source: 'notes', id: 'a.md', version: 2, chunks: [{ text: texts[0] }, { text: 'an owl calls at night' }] });
  assert.equal(rewrite.status, 'written');
  assert.equal(rewrite.chunksReused, 1);
  assert.equal(rewrite.chunksWritten, 1);
  const [owl] = await store.searchQuery('owl at night', { k: 1 });
  assert.equal(owl.text, 'an owl calls at night');
  assert.equal((await store.verify()).ok, true);
});
