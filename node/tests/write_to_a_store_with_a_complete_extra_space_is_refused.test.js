'use strict';
// Regression (review of issue 46): a store given a second, complete vector space by `ratchet
// reembed` needs that space's vector with every new chunk, which this package cannot give; the
// refusal was a bare RatchetError quoting the Rust API (`Chunk::with_space_vector`). It is an
// InputError naming `chunks[i].vector` in this package's words, and nothing is written.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store, InputError } = require('..');
const { tempDir } = require('./helpers');

const root = path.resolve(__dirname, '..', '..');
const cli = process.env.RATCHET_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');

test('a write to a store with a complete extra space is refused in Node\'s words', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const dir = tempDir(t);
  const folder = path.join(dir, 'docs');
  fs.mkdirSync(folder);
  fs.writeFileSync(path.join(folder, 'a.txt'), 'The ratchet turns one way only.');
  const file = path.join(dir, 'spaces.redb');
  for (const args of [['ingest', '--db', file, folder], ['reembed', '--db', file, '--hashing', '16']]) {
    const run = spawnSync(cli, args, { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  }
  const store = await Store.open(file);
  t.after(() => store.close());
  const before = (await store.stats()).documents;
  assert.equal(before, 1);
  await assert.rejects(
    store.upsert({ source: 's', id: 'new', version: 1,
      chunks: [{ text: 'a new text', vector: new Float32Array(384).fill(1) }] }),
    (error) => {
      assert.ok(error instanceof InputError, String(error));
      assert.equal(error.field, 'chunks[0].vector');
      assert.match(error.message, /complete vector space/);
      assert.doesNotMatch(error.message, /::/);
      return true;
    });
  assert.equal((await store.stats()).documents, before);
  assert.equal(await store.get('s', 'new'), null);
});
