'use strict';
// MiniLM from Node: `MiniLM.load()` finds the installed all-MiniLM-L6-v2 as the CLI does,
// gives 384-d unit vectors that agree with the reference fixture the Rust embedder is tested
// against (tests/fixtures/minilm/reference.json, an independent NumPy forward pass; cosine
// >= 1 - 1e-3 as there) and, when the `ratchet` CLI was built with MiniLM, with the vector
// the CLI stored for the same text within 1e-6; a store opened with it records its model and
// answers `searchQuery`. Skips with a message when the model is not installed or the addon
// was built without MiniLM.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store, MiniLM, ModelNotFoundError, UnsupportedError } = require('..');
const { tempDir } = require('./helpers');

const fixture = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'tests', 'fixtures', 'minilm', 'reference.json'), 'utf8'));

test('MiniLM embeds as the Rust embedder does', async (t) => {
  let embedder;
  try {
    embedder = await MiniLM.load();
  } catch (error) {
    if (error instanceof ModelNotFoundError || error instanceof UnsupportedError) {
      t.skip(`MiniLM unavailable: ${error.message}`);
      return;
    }
    throw error;
  }
  assert.equal(embedder.model, 'all-MiniLM-L6-v2');
  assert.equal(embedder.dimension, 384);
  const vectors = await embedder.embed(fixture.entries.map((e) => e.sentence));
  fixture.entries.forEach((entry, i) => {
    let dot = 0; let a = 0; let b = 0;
    for (let j = 0; j < 384; j++) { dot += vectors[i][j] * entry.vector[j]; a += vectors[i][j] ** 2; b += entry.vector[j] ** 2; }
    assert.ok(Math.abs(Math.sqrt(a) - 1) < 1e-4, `vector ${i} is not unit length`);
    assert.ok(dot / Math.sqrt(a * b) >= 1 - 1e-3, `${entry.sentence.slice(0, 40)}: cosine ${dot / Math.sqrt(a * b)}`);
  });

  // The CLI's vector for one file of one chunk (the same batch shape as embedding it alone).
  const dir = tempDir(t);
  const root = path.resolve(__dirname, '..', '..');
  const cli = process.env.RATCHET_BIN
    || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');
  fs.mkdirSync(path.join(dir, 'notes'));
  fs.writeFileSync(path.join(dir, 'notes', 'a.md'), 'The heron waits in the shallow river at dawn.\n');
  const cliStore = path.join(dir, 'cli.redb');
  const ingest = fs.existsSync(cli)
    ? spawnSync(cli, ['ingest', '--db', cliStore, path.join(dir, 'notes')], { encoding: 'utf8', env: { ...process.env, RATCHET_MODEL: embedder.modelDir } })
    : null;
  if (ingest && ingest.status === 0) {
    const exported = spawnSync(cli, ['export', '--db', cliStore, '--vectors'], { encoding: 'utf8' });
    assert.equal(exported.status, 0, exported.stderr);
    const [chunk] = exported.stdout.trim().split('\n').map((line) => JSON.parse(line)).filter((l) => Array.isArray(l.chunks))[0].chunks;
    const [mine] = await embedder.embed([chunk.text]);
    chunk.vector.forEach((x, j) => assert.ok(Math.abs(mine[j] - x) <= 1e-6, `component ${j}: ${mine[j]} vs ${x}`));
  } else {
    t.diagnostic(`no comparison with the CLI's vectors: ${ingest ? ingest.stderr.trim().split('\n').pop() : `no ratchet binary at ${cli}`}`);
  }

  const store = await Store.open(path.join(dir, 'minilm.redb'), { embedder });
  t.after(() => store.close());
  assert.equal(store.model, 'all-MiniLM-L6-v2');
  await store.upsert({ source: 'notes', id: 'a', version: 1, chunks: [
    { text: 'The cat sat on the warm windowsill all afternoon.' },
    { text: 'Quarterly revenue grew by twelve percent.' },
  ] });
  const [hit] = await store.searchQuery('Where was the kitten resting?', { k: 1 });
  assert.match(hit.text, /cat/);
});

test('MiniLM.load names a missing model folder', async () => {
  // The message said the CLI's `--model DIR` (issue 43): it names the package's own call.
  await assert.rejects(MiniLM.load(path.join(__dirname, 'no-such-model-folder')),
    (e) => (e instanceof ModelNotFoundError && e.field === 'modelDir'
      && e.message.includes('MiniLM.load(dir)') && !e.message.includes('--model'))
      || e instanceof UnsupportedError);
});
