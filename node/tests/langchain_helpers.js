'use strict';
// Shared by the langchain_*.test.js files (no tests here): a deterministic embedder that
// counts what it embeds, and a temporary store path.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Embeddings } = require('@langchain/core/embeddings');

const DIMENSION = 64;

// FNV-1a, 32 bits.
function hash(word) {
  let h = 0x811c9dc5;
  for (let i = 0; i < word.length; i++) {
    h ^= word.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * A bag-of-words hashing embedder: each word adds ±1 to one of 64 buckets; the vector is
 * L2-normalized. Texts sharing words are close; equal texts embed equally. `embedded` lists
 * every text embedded, `calls` counts embedDocuments calls.
 */
class HashEmbeddings extends Embeddings {
  constructor() {
    super({});
    this.embedded = [];
    this.calls = 0;
  }

  static vector(text) {
    const v = new Array(DIMENSION).fill(0);
    for (const word of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      const h = hash(word);
      v[h % DIMENSION] += (h >>> 16) & 1 ? 1 : -1;
    }
    const norm = Math.hypot(...v);
    if (norm === 0) {
      v[0] = 1;
      return v;
    }
    return v.map((x) => x / norm);
  }

  async embedDocuments(texts) {
    this.calls += 1;
    this.embedded.push(...texts);
    return texts.map((t) => HashEmbeddings.vector(t));
  }

  async embedQuery(text) {
    return HashEmbeddings.vector(text);
  }
}

/** A fresh store path in a temporary folder removed after the test. */
function tempPath(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ratchetdb-langchain-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return path.join(dir, 'store.redb');
}

module.exports = { HashEmbeddings, tempPath, DIMENSION };
