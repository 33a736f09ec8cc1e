'use strict';
// Issue 46 (vector spaces in the bindings): search, searchMany, searchQuery and searchHybrid
// take `{ space }` (default: the active space) and `spaces()` lists every space. A store opened
// with the embedder of another space's model is accepted and embeds questions for that space;
// an embedder of another model than the searched space's is a MismatchError naming `space`,
// and an unknown space an InputError naming `space`.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store, HashingEmbedder, InputError, MismatchError } = require('..');
const { tempDir } = require('./helpers');

const root = path.resolve(__dirname, '..', '..');
const cli = process.env.RATCHET_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');

const TEXTS = [
  'The ratchet turns one way only.',
  'Bananas are yellow and grow in bunches.',
  'A lighthouse keeps ships off the rocks at night.',
  "The pawl drops into the gear's teeth.",
  'Rain fell on the harbour all week.',
];

const keys = (hits) => hits.map((h) => `${h.source}/${h.id}#${h.position}`);

test('search a named vector space', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const dir = tempDir(t);
  const file = path.join(dir, 'spaces.redb');
  const narrow = new HashingEmbedder(64);
  const wide = new HashingEmbedder(16);
  {
    const store = await Store.open(file, { embedder: narrow });
    for (const [i, text] of TEXTS.entries()) {
      await store.upsert({ source: 'notes', id: `d${i}`, version: 1, chunks: [{ text }, { text: `${text} Again, note ${i}.` }] });
    }
    await store.close();
  }
  const run = spawnSync(cli, ['reembed', '--db', file, '--hashing', '16', '--space', 'wide'], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);

  const question = 'ships and rocks at night';
  const [wideVector] = await wide.embed([question]);
  const [narrowVector] = await narrow.embed([question]);
  let inWide;
  {
    const store = await Store.open(file, { embedder: narrow });
    t.after(() => store.close());
    const spaces = await store.spaces();
    assert.deepEqual(spaces.map((s) => [s.name, s.model, s.dimension, s.active, s.complete]), [
      ['default', narrow.model, 64, true, true],
      ['wide', wide.model, 16, false, true],
    ]);
    for (const s of spaces) assert.equal(s.vectors, s.liveChunks);
    inWide = await store.search(wideVector, { k: 4, exact: true, space: 'wide' });
    assert.equal(inWide.length, 4);
    assert.deepEqual(keys(await store.searchQuery(question, { k: 4, exact: true })),
      keys(await store.search(narrowVector, { k: 4, exact: true, space: 'default' })));
    const many = await store.searchMany([wideVector, wideVector], { k: 4, exact: true, space: 'wide' });
    assert.deepEqual(many.map(keys), [keys(inWide), keys(inWide)]);
    for (const call of [() => store.searchQuery(question, { space: 'wide' }), () => store.searchHybrid(question, { space: 'wide' })]) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof MismatchError, String(error));
        assert.equal(error.field, 'space');
        return true;
      });
    }
    for (const call of [
      () => store.search(wideVector, { space: 'nope' }),
      () => store.searchMany([wideVector], { space: 'nope' }),
      () => store.searchHybrid(question, wideVector, { space: 'nope' }),
    ]) {
      await assert.rejects(call(), (error) => {
        assert.ok(error instanceof InputError, String(error));
        assert.equal(error.field, 'space');
        return true;
      });
    }
    await assert.rejects(store.search(narrowVector, { space: 'wide' }), InputError);
    await store.close();
  }
  {
    // Opened with the embedder of the wide space's model: questions are embedded for it.
    const store = await Store.open(file, { embedder: wide });
    t.after(() => store.close());
    assert.deepEqual(keys(await store.searchQuery(question, { k: 4, exact: true, space: 'wide' })), keys(inWide));
    assert.deepEqual(keys(await store.searchHybrid(question, { k: 4, space: 'wide' })),
      keys(await store.searchHybrid(question, wideVector, { k: 4, space: 'wide' })));
    await assert.rejects(store.searchQuery(question), (error) => error instanceof MismatchError && error.field === 'space');
    await store.close();
  }
  // An embedder of no space's model is still refused.
  await assert.rejects(Store.open(file, { embedder: new HashingEmbedder(32) }), MismatchError);
});
