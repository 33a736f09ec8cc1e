'use strict';
// One file format for every surface: a store written from Node is read by the `ratchet` CLI
// (and by the Python package when it is installed), and a store written by the CLI (and by
// Python) is read from Node. The CLI is found through RATCHET_BIN, else the Cargo target
// directory's debug/ratchet (`cargo build`, which `.ci/run` has done); a missing one skips
// that part visibly.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store } = require('..');
const { tempDir } = require('./helpers');

const root = path.resolve(__dirname, '..', '..');
const cli = process.env.RATCHET_BIN
  || path.join(process.env.CARGO_TARGET_DIR || path.join(root, 'target'), 'debug', 'ratchet');
const python = spawnSync('python3', ['-c', 'import ratchetdb'], { encoding: 'utf8' }).status === 0;

test('a store written from Node, read by the CLI', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const file = path.join(tempDir(t), 'from-node.redb');
  const store = await Store.open(file, { dimension: 3 });
  await store.upsert({ source: 'node', id: 'a.md', version: 3, meta: { from: 'node' },
    chunks: [{ text: 'written from node', vector: [1, 0, 0], meta: { lang: 'en' } }, { text: 'second chunk', vector: [0, 1, 0] }] });
  await store.delete({ source: 'node', id: 'gone.md', version: 2 });
  await store.close();

  const exported = spawnSync(cli, ['export', '--db', file], { encoding: 'utf8' });
  assert.equal(exported.status, 0, exported.stderr);
  const docs = exported.stdout.trim().split('\n').map((line) => JSON.parse(line));
  const live = docs.find((d) => d.id === 'a.md');
  assert.equal(live.version, 3);
  assert.deepEqual(live.chunks.map((c) => c.text), ['written from node', 'second chunk']);
  assert.equal(docs.find((d) => d.id === 'gone.md').deleted, true);
  const verified = spawnSync(cli, ['verify', '--db', file], { encoding: 'utf8' });
  assert.equal(verified.status, 0, verified.stdout + verified.stderr);
});

test('a store written by the CLI, read from Node', { skip: !fs.existsSync(cli) && `no ratchet binary at ${cli} (build it, or set RATCHET_BIN)` }, async (t) => {
  const file = path.join(tempDir(t), 'from-cli.redb');
  const lines = [
    { op: 'upsert', source: 'cli', id: 'x', version: 5, chunks: [{ text: 'ingested by the cli', vector: [0, 0, 1], meta: { n: 1 } }], meta: {} },
    { op: 'upsert', source: 'cli', id: 'x', version: 4, chunks: [{ text: 'a stale revision', vector: [0, 1, 0] }], meta: {} },
  ].map((l) => JSON.stringify(l)).join('\n');
  const ingest = spawnSync(cli, ['ingest', '--db', file, '--jsonl', '-'], { input: `${lines}\n`, encoding: 'utf8' });
  assert.equal(ingest.status, 0, ingest.stderr);
  const store = await Store.open(file, { readOnly: true });
  t.after(() => store.close());
  const doc = await store.get('cli', 'x');
  assert.equal(doc.version, 5);
  assert.deepEqual(doc.chunks.map((c) => c.text), ['ingested by the cli']);
  const [hit] = await store.search([0, 0, 1], { k: 1, where: { n: 1 } });
  assert.equal(hit.text, 'ingested by the cli');
  assert.equal((await store.stats()).counters.skippedOlder, 1);
});

test('Python and Node read each other\'s stores', { skip: !python && 'the ratchetdb Python package is not installed (pip install ./python)' }, async (t) => {
  const dir = tempDir(t);
  const fromNode = path.join(dir, 'node.redb');
  const fromPython = path.join(dir, 'python.redb');
  const store = await Store.open(fromNode, { dimension: 2 });
  await store.upsert({ source: 'n', id: 'd', version: new Date('2026-01-02T03:04:05.678Z'), chunks: [{ text: 'node text', vector: [1, 0] }] });
  await store.close();
  const script = `
import datetime, json, ratchetdb
with ratchetdb.Store(${JSON.stringify(fromNode)}, read_only=True) as s:
    d = s.get("n", "d")
    print(json.dumps({"text": d["chunks"][0]["text"], "version": d["version"].isoformat()}))
with ratchetdb.Store(${JSON.stringify(fromPython)}) as s:
    s.upsert("p", "d", 9, ["python text"], [[0.0, 1.0]], metas=[{"k": "v"}])
`;
  const run = spawnSync('python3', ['-c', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  const seen = JSON.parse(run.stdout.trim());
  assert.equal(seen.text, 'node text');
  assert.equal(new Date(seen.version).getTime(), new Date('2026-01-02T03:04:05.678Z').getTime());
  const reader = await Store.open(fromPython, { readOnly: true });
  t.after(() => reader.close());
  const [hit] = await reader.search([0, 1], { k: 1 });
  assert.deepEqual([hit.text, hit.version, hit.meta], ['python text', 9, { k: 'v' }]);
});
