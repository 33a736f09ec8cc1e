'use strict';
// Readers beside a writer: a read-only store in a worker thread and one in a second process
// search while this process rewrites documents. Every hit a reader gets is of a document's
// live revision at some commit (never a superseded chunk: each revision's chunk text names
// its own version, and hits carry the version they were read with), and the readers see the
// writer's later commits.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { spawn } = require('node:child_process');
const { Store } = require('..');
const { tempDir } = require('./helpers');

const READER = `
const { Store } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
module.exports = async function read(file, until) {
  const store = await Store.open(file, { readOnly: true });
  let searches = 0, highest = 0;
  const bad = [];
  while (Date.now() < until) {
    for (const hit of await store.search([1, 0, 0, 0], { k: 20 })) {
      searches++;
      if (hit.text !== 'revision ' + hit.version + ' of ' + hit.id) bad.push(hit.text + ' @ ' + hit.version);
      highest = Math.max(highest, hit.version);
    }
    for (const hit of await store.searchText('revision', { k: 20 })) {
      if (hit.text !== 'revision ' + hit.version + ' of ' + hit.id) bad.push(hit.text + ' @ ' + hit.version);
    }
  }
  await store.close();
  return { searches, highest, bad };
};`;

function inWorker(file, until) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(`${READER}\nconst { workerData, parentPort } = require('node:worker_threads');\nmodule.exports(workerData.file, workerData.until).then((r) => parentPort.postMessage(r), (e) => { throw e; });`, { eval: true, workerData: { file, until } });
    worker.once('message', resolve);
    worker.once('error', reject);
  });
}

function inProcess(file, until) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', `${READER}\nmodule.exports(${JSON.stringify(file)}, ${until}).then((r) => console.log(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });`]);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`reader process failed: ${err}`))));
  });
}

test('a worker thread and a second process read while this process writes', async (t) => {
  const file = path.join(tempDir(t), 'r.redb');
  const store = await Store.open(file, { dimension: 4 });
  const write = (id, version) => store.upsert({ source: 's', id, version,
    chunks: [{ text: `revision ${version} of ${id}`, vector: [1, version % 3, id.length % 2, 0.5] }] });
  for (let d = 0; d < 20; d++) await write(`doc${d}`, 1);

  const until = Date.now() + 3000;
  const readers = [inWorker(file, until), inProcess(file, until)];
  let version = 1;
  while (Date.now() < until - 500) {
    version++;
    await Promise.all(Array.from({ length: 20 }, (_, d) => write(`doc${d}`, version)));
  }
  const results = await Promise.all(readers);
  await store.close();
  for (const [who, result] of [['worker thread', results[0]], ['second process', results[1]]]) {
    assert.deepEqual(result.bad, [], `${who} saw no superseded or mixed chunk`);
    assert.ok(result.searches > 0, `${who} searched`);
    assert.ok(result.highest > 1, `${who} saw the writer's later commits (highest version ${result.highest} of ${version})`);
  }
});
