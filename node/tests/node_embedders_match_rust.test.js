'use strict';
// The Node embedders give the Rust embedders' vectors: a folder ingested by the `ratchet` CLI
// (the Rust hashing embedder) and exported with its vectors, then the same chunk texts
// embedded from Node with a HashingEmbedder of the store's dimension, agree within 1e-6 in
// every component; the store records the Node embedder's model name, so Node opens it with
// that embedder and `searchQuery` finds a file's text. The CLI is found as in
// one_file_format_across_languages.test.js (RATCHET_BIN, else the target directory's
// debug/ratchet); a missing one skips visibly.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store, HashingEmbedder } = require('..');
const { tempDir } = require('./helpers');

const root = path.resolve(__dirname, '..', '..');
const cli = process.env.RATCHET_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');

test('HashingEmbedder from Node gives the vectors the Rust CLI stored', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const dir = tempDir(t);
  const notes = path.join(dir, 'notes');
  fs.mkdirSync(notes);
  const texts = {
    'disk.md': 'Why does the disk fill up? The journal keeps every revision until compaction.',
    'cats.md': 'Cats purr when they are content, and sometimes when they are hurt.',
    'accents.txt': 'Crème brûlée, naïve café — und Übermäßigkeit; 東京 is a city.',
  };
  for (const [name, body] of Object.entries(texts)) fs.writeFileSync(path.join(notes, name), `${body}\n`);
  const file = path.join(dir, 'cli.redb');
  const ingest = spawnSync(cli, ['ingest', '--db', file, notes], { encoding: 'utf8' });
  assert.equal(ingest.status, 0, ingest.stderr);
  const exported = spawnSync(cli, ['export', '--db', file, '--vectors'], { encoding: 'utf8' });
  assert.equal(exported.status, 0, exported.stderr);
  const chunks = exported.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((line) => Array.isArray(line.chunks)).flatMap((doc) => doc.chunks);
  assert.ok(chunks.length >= Object.keys(texts).length);

  const dimension = chunks[0].vector.length;
  const embedder = new HashingEmbedder(dimension);
  assert.equal(embedder.dimension, dimension);
  const vectors = await embedder.embed(chunks.map((c) => c.text));
  assert.equal(vectors.length, chunks.length);
  chunks.forEach((chunk, i) => {
    assert.ok(vectors[i] instanceof Float32Array);
    assert.equal(vectors[i].length, dimension);
    chunk.vector.forEach((x, j) => assert.ok(Math.abs(vectors[i][j] - x) <= 1e-6, `chunk ${i} component ${j}: ${vectors[i][j]} vs ${x}`));
  });

  const store = await Store.open(file, { embedder, readOnly: true });
  t.after(() => store.close());
  assert.equal(store.model, embedder.model);
  const [hit] = await store.searchQuery('why does the disk fill up', { k: 1 });
  assert.match(hit.text, /disk fill up/);
});
