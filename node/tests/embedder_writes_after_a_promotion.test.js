'use strict';
// Regression (issue 46): after `ratchet reembed --activate --drop-old` promoted a space in the
// default one's place, a store opened with the new model's embedder refused every upsert of
// new text: spaces() lists the default space under the promoted space's name, the package
// took it for an extra space and sent its vectors as that space's, which the store refuses
// (the name now means the default space). Writes after a promotion embed with the store's one
// model and are found by searchQuery, under the promoted name and `default` too.
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

test('an embedder writes after a promotion', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'promoted.redb');
  {
    const store = await Store.open(file, { embedder: new HashingEmbedder(64) });
    for (const [i, text] of ['The ratchet turns one way only.', 'Bananas are yellow.'].entries()) {
      await store.upsert({ source: 'notes', id: `d${i}`, version: 1, chunks: [{ text }] });
    }
    await store.close();
  }
  const run = spawnSync(cli, ['reembed', '--db', file, '--hashing', '32', '--space', 'wide', '--activate', '--drop-old'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);

  const wide = new HashingEmbedder(32);
  const store = await Store.open(file, { embedder: wide });
  t.after(() => store.close());
  assert.deepEqual((await store.spaces()).map((s) => [s.name, s.model, s.dimension]), [['wide', wide.model, 32]]);
  const text = 'Owls hunt mice in the barn after dusk.';
  assert.equal((await store.upsert({ source: 'notes', id: 'owl', version: 1, chunks: [{ text }] })).status, 'written');
  assert.equal((await store.upsert({ source: 'notes', id: 'd0', version: 2, chunks: [{ text: "The pawl drops into the gear's teeth." }] })).status, 'written');
  for (const space of [undefined, 'wide', 'default']) {
    const hits = await store.searchQuery(text, { k: 1, exact: true, space });
    assert.deepEqual(hits.map((h) => [h.id, h.text]), [['owl', text]]);
  }
  assert.equal((await store.verify()).ok, true);
});
