// ratchetdb's Node package beside LanceDB's (@lancedb/lancedb 0.31.0), from the same kind of
// Node process, on the same data, in one run (by hand, never in CI):
//
//   bash benches/data/fetch.sh minilm            # MINILM_MAX=11000 is enough here
//   cd benches/peers/node && npm install && node side_by_side.mjs [--n 10000] [--queries 1000]
//                                                   [--rounds 2] [--texts real|short]
//                                                   [--text-index]
//
// Libraries: ratchetdb (graph search, default ef; `ratchetdb-exact`, the exact scan, for
// recall 1.0; and `ratchetdb-no-text`, opened with `textIndex: false`: no BM25 index, what
// LanceDB's tables hold without `--text-index`), LanceDB without an index (a flat scan, recall 1.0; what it recommends below
// about 100k rows) and LanceDB with an HNSW-SQ index built after the add (`lancedb-hnsw`).
// Each library runs in its own child process (so each RSS is its own): add N chunks of the
// 384-d MiniLM set with metadata, then the queries with and without a filter. Reported: add
// time, median query latency and recall@10 against exact search (the same truth for both),
// the closed store's size on disk, and the child's peak RSS. The paired rounds alternate the
// two libraries.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const arg = (name, fallback) => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
};
const data = process.env.RATCHETDB_BENCH_DATA || path.resolve(here, '../../data/sets');
const n = Number(arg('n', 10000));
const nq = Number(arg('queries', 1000));
const rounds = Number(arg('rounds', 2));
const K = 10;

function readNpy(file) {
  const buf = fs.readFileSync(file);
  const headerLen = buf.readUInt16LE(8);
  const header = buf.toString('latin1', 10, 10 + headerLen);
  const shape = header.match(/'shape': \(([^)]*)\)/)[1].split(',').filter((s) => s.trim()).map(Number);
  if (!/'descr': '<f4'/.test(header)) throw new Error(`${file}: not little-endian float32`);
  const start = 10 + headerLen;
  const floats = new Float32Array(buf.buffer.slice(buf.byteOffset + start, buf.byteOffset + start + shape[0] * shape[1] * 4));
  return { rows: shape[0], dim: shape[1], floats };
}

const row = (m, i) => m.floats.subarray(i * m.dim, (i + 1) * m.dim);

// The chunk texts: the sentences the vectors were made from (`minilm.texts.txt`, one per base
// row), as a RAG store holds them; `--texts short` stores `chunk i` instead (the tables before
// 2026-12-06 did).
function chunkTexts(count) {
  const file = path.join(data, 'minilm.texts.txt');
  if (arg('texts', 'real') === 'short' || !fs.existsSync(file)) {
    return Array.from({ length: count }, (_, i) => `chunk ${i}`);
  }
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  if (lines.length < count) throw new Error(`${file}: ${lines.length} texts for ${count} rows`);
  return lines.slice(0, count);
}
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const group = (i) => `g${i % 10}`; // the filter keeps one chunk in ten

function truth(base, queries, filtered) {
  // Exact top-10 by cosine (the MiniLM vectors are unit length: dot product).
  const out = [];
  for (let q = 0; q < nq; q++) {
    const qv = row(queries, q);
    const scored = [];
    for (let i = 0; i < n; i++) {
      if (filtered && group(i) !== 'g3') continue;
      const v = row(base, i);
      let dot = 0;
      for (let d = 0; d < base.dim; d++) dot += qv[d] * v[d];
      scored.push([dot, i]);
    }
    scored.sort((a, b) => b[0] - a[0]);
    out.push(new Set(scored.slice(0, K).map((s) => `c${s[1]}`)));
  }
  return out;
}

async function child(lib) {
  const base = readNpy(path.join(data, 'minilm.base.npy'));
  const queries = readNpy(path.join(data, 'minilm.queries.npy'));
  const truthAll = JSON.parse(process.env.TRUTH_ALL);
  const truthFiltered = JSON.parse(process.env.TRUTH_FILTERED);
  const texts = chunkTexts(n);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `peer-${lib}-`));
  const out = { lib };
  const recall = (hits, q, which) => hits.filter((id) => which[q].includes(id)).length / K;
  let search;
  let close;
  let addStart;
  if (lib.startsWith('ratchetdb')) {
    const { Store } = await import('ratchetdb');
    const store = await Store.open(path.join(dir, 'store.redb'), {
      dimension: base.dim, textIndex: lib !== 'ratchetdb-no-text' });
    addStart = performance.now();
    const ops = [];
    for (let i = 0; i < n; i++) {
      ops.push({ op: 'upsert', source: 'bench', id: `c${i}`, version: 1,
        chunks: [{ text: texts[i], vector: row(base, i), meta: { group: group(i) } }] });
    }
    for (let i = 0; i < ops.length; i += 1000) await store.writeBatch(ops.slice(i, i + 1000));
    out.writeSeconds = (performance.now() - addStart) / 1000;
    await store.waitForIndex(600000);
    out.addSeconds = (performance.now() - addStart) / 1000;
    const exact = lib === 'ratchetdb-exact';
    search = async (q, filtered) => (await store.search(row(queries, q), { k: K, exact, where: filtered ? { group: 'g3' } : undefined })).map((h) => h.id);
    close = () => store.close();
  } else {
    const lancedb = await import('@lancedb/lancedb');
    const db = await lancedb.connect(path.join(dir, 'lance'));
    addStart = performance.now();
    const rows = [];
    for (let i = 0; i < n; i++) rows.push({ id: `c${i}`, text: texts[i], group: group(i), vector: Array.from(row(base, i)) });
    const table = await db.createTable('chunks', rows);
    out.writeSeconds = (performance.now() - addStart) / 1000;
    if (lib === 'lancedb-hnsw') {
      await table.createIndex('vector', { config: lancedb.Index.hnswSq({ distanceType: 'cosine' }) });
    }
    // --text-index: LanceDB builds its full-text index on the chunks' text too, as ratchetdb
    // keeps its BM25 index (both then answer text and hybrid queries).
    if (process.argv.includes('--text-index')) {
      await table.createIndex('text', { config: lancedb.Index.fts() });
    }
    out.addSeconds = (performance.now() - addStart) / 1000;
    search = async (q, filtered) => {
      let query = table.vectorSearch(Array.from(row(queries, q))).distanceType('cosine').limit(K);
      if (filtered) query = query.where("`group` = 'g3'");
      return (await query.toArray()).map((r) => r.id);
    };
    close = async () => table.close();
  }
  for (const filtered of [false, true]) {
    const times = [];
    let hitRecall = 0;
    for (let q = 0; q < nq; q++) {
      const t0 = performance.now();
      const ids = await search(q, filtered);
      times.push(performance.now() - t0);
      hitRecall += recall(ids, q, filtered ? truthFiltered : truthAll);
    }
    out[filtered ? 'filtered' : 'unfiltered'] = { medianMs: median(times), recall: hitRecall / nq };
  }
  await close();
  const du = spawnSync('du', ['-sb', dir]).stdout.toString().split('\t')[0];
  out.diskBytes = Number(du);
  out.peakRssMb = process.resourceUsage().maxRSS / 1024;
  fs.rmSync(dir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

async function main() {
  const base = readNpy(path.join(data, 'minilm.base.npy'));
  const queries = readNpy(path.join(data, 'minilm.queries.npy'));
  if (base.rows < n || queries.rows < nq) throw new Error(`need ${n} base rows and ${nq} queries`);
  const toArrays = (sets) => JSON.stringify(sets.map((s) => [...s]));
  const env = { ...process.env, TRUTH_ALL: toArrays(truth(base, queries, false)), TRUTH_FILTERED: toArrays(truth(base, queries, true)) };
  const results = [];
  for (let r = 0; r < rounds; r++) {
    const libs = ['ratchetdb', 'ratchetdb-exact', 'ratchetdb-no-text', 'lancedb', 'lancedb-hnsw'];
    for (const lib of r % 2 === 0 ? libs : [...libs].reverse()) {
      const args = [fileURLToPath(import.meta.url), '--child', lib, '--n', String(n), '--queries', String(nq)];
      if (process.argv.includes('--text-index')) args.push('--text-index');
      const run = spawnSync(process.execPath, args, { env, encoding: 'utf8', maxBuffer: 1 << 26 });
      if (run.status !== 0) throw new Error(`${lib}: ${run.stderr}`);
      const result = JSON.parse(run.stdout.trim().split('\n').pop());
      result.round = r + 1;
      results.push(result);
      console.log(JSON.stringify(result));
    }
  }
  console.log('\n| round | library | add s (writes s) | query ms (recall) | filtered query ms (recall) | disk MB | peak RSS MB |');
  console.log('|---|---|---|---|---|---|---|');
  for (const r of results) {
    console.log(`| ${r.round} | ${r.lib} | ${r.addSeconds.toFixed(2)} (${r.writeSeconds.toFixed(2)}) | ${r.unfiltered.medianMs.toFixed(3)} (${r.unfiltered.recall.toFixed(3)}) | ${r.filtered.medianMs.toFixed(3)} (${r.filtered.recall.toFixed(3)}) | ${(r.diskBytes / 1e6).toFixed(1)} | ${r.peakRssMb.toFixed(0)} |`);
  }
}

const childAt = process.argv.indexOf('--child');
if (childAt >= 0) child(process.argv[childAt + 1]).catch((e) => { console.error(e); process.exit(1); });
else main().catch((e) => { console.error(e); process.exit(1); });
