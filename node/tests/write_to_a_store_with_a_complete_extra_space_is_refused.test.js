'use strict';
// Regression (review of issue 46): a store given a second, complete vector space by `ratchet
// reembed` needs that space's vector with every new chunk, which this package could not give:
// every write was refused. A chunk now carries them (`spaceVectors: { NAME: Float32Array }`,
// in upsert and writeBatch), or a store opened with an embedder of that space's model embeds
// them; a write that still lacks one is refused with an InputError naming
// `chunks[i].spaceVectors.NAME` in this package's words (no Rust API quoted), and nothing is
// written.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store, HashingEmbedder, InputError } = require('..');
const { tempDir } = require('./helpers');

const root = path.resolve(__dirname, '..', '..');
const cli = process.env.RATCHET_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');

function refused(field) {
  return (error) => {
    assert.ok(error instanceof InputError, String(error));
    assert.equal(error.field, field);
    assert.match(error.message, /complete vector space/);
    assert.doesNotMatch(error.message, /::/);
    return true;
  };
}

test('a write to a store with a complete extra space carries its vectors, else is refused in Node\'s words', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const dir = tempDir(t);
  const folder = path.join(dir, 'docs');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'a.txt'), 'The ratchet turns one way only.');
  const file = path.join(dir, 'spaces.redb');
  for (const args of [['ingest', '--db', file, folder], ['reembed', '--db', file, '--hashing', '16', '--space', 'small']]) {
    const run = spawnSync(cli, args, { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  }
  const big = new HashingEmbedder(384);
  const small = new HashingEmbedder(16);
  const one = async (embedder, text) => (await embedder.embed([text]))[0];
  const nearestInSmall = async (store, text) => {
    const [hit] = await store.search(await one(small, text), { k: 1, exact: true, space: 'small' });
    return hit;
  };

  {
    const store = await Store.open(file);
    const before = (await store.stats()).documents;
    assert.equal(before, 1);
    // Without the space's vector: refused, nothing written.
    await assert.rejects(
      store.upsert({ source: 's', id: 'new', version: 1, chunks: [{ text: 'a new text', vector: await one(big, 'a new text') }] }),
      refused('chunks[0].spaceVectors.small'));
    // A vector of another width than the space's: refused naming it.
    await assert.rejects(
      store.upsert({ source: 's', id: 'new', version: 1,
        chunks: [{ text: 'a new text', vector: await one(big, 'a new text'), spaceVectors: { small: await one(big, 'a new text') } }] }),
      (error) => error instanceof InputError && error.field.startsWith('chunks[0].spaceVectors.small'));
    assert.equal((await store.stats()).documents, before);
    assert.equal(await store.get('s', 'new'), null);

    // Given, in upsert and writeBatch: written, and found in that space.
    const texts = ['an upserted text', 'another upserted text'];
    const chunks = [];
    for (const text of texts) chunks.push({ text, vector: await one(big, text), spaceVectors: { small: await one(small, text) } });
    assert.equal((await store.upsert({ source: 's', id: 'up', version: 1, chunks })).status, 'written');
    const [batched] = await store.writeBatch([{ op: 'upsert', source: 's', id: 'b', version: 1,
      chunks: [{ text: 'batched', vector: await one(big, 'batched'), spaceVectors: { small: await one(small, 'batched') } }] }]);
    assert.equal(batched.status, 'written');
    for (const text of [...texts, 'batched']) {
      const hit = await nearestInSmall(store, text);
      assert.equal(hit.text, text);
      assert.ok(Math.abs(hit.score - 1) < 1e-5, String(hit.score));
    }
    assert.ok((await store.verify()).ok);
    // Read back with its vectors: each chunk's space vectors, in a chunk's write shape.
    const stored = await store.get('s', 'up', { vectors: true });
    for (const [i, chunk] of stored.chunks.entries()) {
      assert.ok(chunk.spaceVectors.small instanceof Float32Array);
      const want = await one(small, texts[i]);
      assert.ok(chunk.spaceVectors.small.every((x, j) => Math.abs(x - want[j]) < 1e-6));
    }
    const copied = await store.upsert({ source: 's', id: 'up-copy', version: 1,
      chunks: stored.chunks.map(({ text, vector, spaceVectors }) => ({ text, vector, spaceVectors })) });
    assert.equal(copied.status, 'written');
    await store.close();
  }
  {
    // Opened with the embedder of the default space's model: the small space is still refused.
    const store = await Store.open(file, { embedder: big });
    t.after(() => store.close());
    await assert.rejects(store.upsert({ source: 's', id: 'new', version: 1, chunks: [{ text: 'a new text' }] }),
      refused('chunks[0].spaceVectors.small'));
    await store.close();
  }
  {
    // Opened with the small space's embedder: it embeds that space's vectors (the default
    // space's are the caller's, its model being another).
    const store = await Store.open(file, { embedder: small });
    t.after(() => store.close());
    const out = await store.upsert({ source: 's', id: 'emb', version: 1, chunks: [{ text: 'embedded for small', vector: await one(big, 'embedded for small') }] });
    assert.equal(out.status, 'written');
    const [op] = await store.writeBatch([{ op: 'upsert', source: 's', id: 'emb2', version: 1,
      chunks: [{ text: 'batched for small', vector: await one(big, 'batched for small') }] }]);
    assert.equal(op.status, 'written');
    for (const text of ['embedded for small', 'batched for small']) {
      const hit = await nearestInSmall(store, text);
      assert.equal(hit.text, text);
      assert.ok(Math.abs(hit.score - 1) < 1e-5, String(hit.score));
    }
    assert.ok((await store.verify()).ok);
    const spaces = Object.fromEntries((await store.spaces()).map((s) => [s.name, s]));
    assert.ok(spaces.small.complete);
    assert.equal(spaces.small.vectors, spaces.default.vectors);
    await store.close();
  }
});
