'use strict';
// Shared by the tests: a fresh temporary folder per test, removed afterwards.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** A new empty folder, removed when the test `t` ends. */
function tempDir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratchetdb-node-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Every document of `store`'s export, vectors included, as comparable JSON. */
async function exported(store) {
  const docs = [];
  for await (const doc of store.export({ vectors: true })) {
    docs.push(JSON.stringify(doc, (_, v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Float32Array ? Array.from(v) : v)));
  }
  return docs;
}

module.exports = { tempDir, exported };
