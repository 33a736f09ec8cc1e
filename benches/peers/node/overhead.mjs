// The Node binding's cost over the Rust call it wraps, side by side in one run (by hand,
// never in CI; the Node side of benches/peers/python_overhead.py):
//
//   cd node && npm install ../node     # or `npm install ./node` from the root: a release build
//   cd benches/peers/node && node overhead.mjs [--work DIR] [--paired-only]
//
// RATCHETDB_NODE_PACKAGE=DIR loads the package from DIR (a copy of node/ with its built
// ratchetdb.node) instead of the installed one, so two builds can alternate in one session.
// --paired-only skips steps 2 and 3 (no cargo bench). --spin-micros N opens the searched
// stores with `spinMicros: N` (the package's default when absent; 0: the loop sleeps while a
// search is in flight).
//
// 1. Makes seeded random data of the Python script's shapes (384-d): the search store of 200
//    documents of 100 chunks (20,000 chunks; texts `doc {d} chunk {c}`, meta {chunk: c}) and
//    a small store of one document (100 chunks, an exact scan), 100 queries; writes them with
//    the Node package and waits for the graph.
// 2. Runs `cargo bench --bench python_overhead -- search` on the same files: criterion's
//    medians of `Store::search` (k 10) on both stores.
// 3. Times `await store.search(query, { k: 10 })` from Node on the same files: the median of
//    15 repeats of 1,000 calls, each awaited before the next.
// 4. Paired: each awaited `_searchTimed` call's wall time less the Rust call's own time inside
//    it, 15,000 calls, median and minimum.
// 5. The floor in the same session: the paired figure on an empty store (a search that finds
//    nothing: the hand-offs alone), and an empty napi async task's round trip on libuv's pool
//    (`waitForIndex(0)` on that store), median and minimum of 15,000 awaited calls.
// Prints both medians, their difference, and the paired cost per call (the goal: ≤ 20 µs).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const loaded = process.env.RATCHETDB_NODE_PACKAGE
  ? await import(path.join(path.resolve(process.env.RATCHETDB_NODE_PACKAGE), 'index.js'))
  : await import('ratchetdb');
const Store = loaded.Store ?? loaded.default.Store;
const pairedOnly = process.argv.includes('--paired-only');
const spinAt = process.argv.indexOf('--spin-micros');
const spin = spinAt >= 0 ? { spinMicros: Number(process.argv[spinAt + 1]) } : {};

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../../..');
const DIM = 384;
const CHUNKS = 100;
const SEARCH_DOCS = 200;
const ALL_DOCS = 1000;
const QUERIES = 100;
const K = 10;
const at = process.argv.indexOf('--work');
const work = at >= 0 ? process.argv[at + 1] : fs.mkdtempSync(path.join(os.tmpdir(), 'ratchetdb-node-bench-'));
fs.mkdirSync(work, { recursive: true });

let state = 0x9e3779b97f4a7c15n;
function random() { // SplitMix64, as a float in [-0.5, 0.5)
  state = (state + 0x9e3779b97f4a7c15n) & 0xffffffffffffffffn;
  let z = state;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & 0xffffffffffffffffn;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & 0xffffffffffffffffn;
  z ^= z >> 31n;
  return Number(z >> 40n) / 2 ** 24 - 0.5;
}
const matrix = (rows) => { const m = new Float32Array(rows * DIM); for (let i = 0; i < m.length; i++) m[i] = random(); return m; };
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

const base = matrix(ALL_DOCS * CHUNKS);
const queries = matrix(QUERIES);
fs.writeFileSync(path.join(work, 'base.f32'), Buffer.from(base.buffer));
fs.writeFileSync(path.join(work, 'queries.f32'), Buffer.from(queries.buffer));
const ops = (docs) => docs.map((d) => ({
  op: 'upsert', source: 'bench', id: `doc${d}`, version: 1,
  chunks: Array.from({ length: CHUNKS }, (_, c) => ({
    text: `doc ${d} chunk ${c}`, vector: base.subarray((d * CHUNKS + c) * DIM, (d * CHUNKS + c + 1) * DIM), meta: { chunk: c },
  })),
}));
for (const [name, docs] of [['store.redb', SEARCH_DOCS], ['small.redb', 1]]) {
  const file = path.join(work, name);
  if (fs.existsSync(file)) continue;
  const store = await Store.open(file, { dimension: DIM });
  for (let d = 0; d < docs; d += 100) await store.writeBatch(ops(Array.from({ length: Math.min(100, docs - d) }, (_, i) => d + i)));
  await store.waitForIndex(600000);
  await store.close();
}

const empty = path.join(work, 'empty.redb');
if (!fs.existsSync(empty)) await (await Store.open(empty, { dimension: DIM })).close();

const bench = pairedOnly ? { status: 0 } : spawnSync('cargo', ['bench', '--bench', 'python_overhead', '--', 'search'], {
  cwd: root, env: { ...process.env, RATCHETDB_PY_BENCH_DIR: work }, stdio: 'inherit',
});
if (bench.status !== 0) throw new Error('cargo bench failed');
const target = process.env.CARGO_TARGET_DIR || path.join(root, 'target');
const criterion = (name) => JSON.parse(fs.readFileSync(path.join(target, 'criterion', 'python_overhead', name, 'new', 'estimates.json'))).median.point_estimate / 1e3;

async function nodeMedian(name) {
  const store = await Store.open(path.join(work, name), { readOnly: true, ...spin });
  await store.waitForIndex(600000);
  const rows = Array.from({ length: QUERIES }, (_, q) => queries.subarray(q * DIM, (q + 1) * DIM));
  for (const q of rows) await store.search(q, { k: K });
  const perCall = [];
  for (let r = 0; r < 15; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 1000; i++) await store.search(rows[i % QUERIES], { k: K });
    perCall.push(Number(process.hrtime.bigint() - t0) / 1000 / 1000);
  }
  await store.close();
  return median(perCall);
}

// Paired, as python_overhead.py's --paired-only: each awaited call's wall time less the time
// the Rust call took inside it (`_searchTimed`), so the machine's load largely cancels out.
// Also the process's CPU time per call (both threads: the loop's, polling or not, and the
// reader's search).
async function paired(name) {
  const store = await Store.open(path.join(work, name), { readOnly: true, ...spin });
  await store.waitForIndex(600000);
  const rows = Array.from({ length: QUERIES }, (_, q) => queries.subarray(q * DIM, (q + 1) * DIM));
  for (const q of rows) await store._searchTimed(q, { k: K });
  const costs = [];
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < 15000; i++) {
    const t0 = process.hrtime.bigint();
    const { innerNs } = await store._searchTimed(rows[i % QUERIES], { k: K });
    costs.push((Number(process.hrtime.bigint() - t0) - innerNs) / 1000);
  }
  const cpu = process.cpuUsage(cpu0);
  await store.close();
  return [median(costs), Math.min(...costs), (cpu.user + cpu.system) / 15000];
}

// An empty napi async task's round trip on libuv's pool: `waitForIndex(0)` on the empty store.
async function asyncTaskFloor() {
  const store = await Store.open(empty, { readOnly: true });
  for (let i = 0; i < 100; i++) await store.waitForIndex(0);
  const costs = [];
  for (let i = 0; i < 15000; i++) {
    const t0 = process.hrtime.bigint();
    await store.waitForIndex(0);
    costs.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
  await store.close();
  return [median(costs), Math.min(...costs), NaN];
}

const rows = [];
for (const [what, rust, name] of [
  ['`search`, k 10, 20,000 x 384-d, graph', 'search_rust', 'store.redb'],
  ['`search`, k 10, 100 x 384-d, one document (exact scan)', 'search_small_rust', 'small.redb'],
]) {
  rows.push([what, pairedOnly ? NaN : criterion(rust), pairedOnly ? NaN : await nodeMedian(name), await paired(name)]);
}
rows.push(['floor: `search` of an empty store (no hits)', NaN, NaN, await paired('empty.redb')]);
rows.push(['floor: an empty napi async task (`waitForIndex(0)`), wall time', NaN, NaN, await asyncTaskFloor()]);
console.log('| measurement | Rust (criterion median) | Node (median) | difference per call | paired: binding cost per call, median (min) | process CPU per call |');
console.log('|---|---|---|---|---|---|');
const us = (x) => (Number.isNaN(x) ? '–' : `${x.toFixed(1)} µs`);
for (const [what, rust, node, [cost, least, cpu]] of rows) {
  const difference = Number.isNaN(node - rust) ? '–' : `${(node - rust) >= 0 ? '+' : ''}${(node - rust).toFixed(1)} µs`;
  console.log(`| ${what} | ${us(rust)} | ${us(node)} | ${difference} | ${cost.toFixed(1)} µs (${least.toFixed(1)} µs) | ${us(cpu)} |`);
}
