'use strict';
// Regression test for the bug where a refused search named Rust's items, not this API's: a `k`,
// `ef` or `rerank` above the limit said "(Limits::max_k)" and a too-long text query
// "(Limits::max_chunk_text_bytes)", names a JavaScript user cannot set or look up. Each
// refusal is an InputError on its field whose message says what the limit is, in this API's
// words (no `::`, no snake_case Rust name).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store, InputError } = require('..');
const { tempDir } = require('./helpers');

const RUST_NAME = /::|\b[a-z][a-z0-9]*_[a-z0-9_]+\b/;

const refusedOn = (field, says) => (error) => {
  assert.ok(error instanceof InputError, `${error.name}: ${error.message}`);
  assert.equal(error.field, field);
  assert.ok(error.message.startsWith(`invalid ${field}: `), error.message);
  assert.doesNotMatch(error.message, RUST_NAME, `names no Rust item: ${error.message}`);
  assert.match(error.message, says);
  return true;
};

test('k, ef, rerank and a text query over their limits are refused in JavaScript words', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'limits.redb'), { dimension: 2 });
  t.after(() => store.close());
  await store.upsert({ source: 's', id: 'd', version: 1, chunks: [{ text: 'some words', vector: [1, 0] }] });

  const tooMany = /at most 10000 hits can be asked for$/;
  await assert.rejects(store.search([1, 0], { k: 10001 }), refusedOn('k', tooMany));
  await assert.rejects(store.searchText('words', { k: 10001 }), refusedOn('k', tooMany));
  await assert.rejects(store.searchHybrid('words', [1, 0], { k: 10001 }), refusedOn('k', tooMany));
  await assert.rejects(store.searchMany([[1, 0]], { k: 10001 }), refusedOn('k', tooMany));
  const widest = /is 10001; it may be at most 10000, the most hits a search can ask for$/;
  await assert.rejects(store.search([1, 0], { ef: 10001 }), refusedOn('ef', widest));
  await assert.rejects(store.search([1, 0], { rerank: 10001 }), refusedOn('rerank', widest));

  const long = 'word '.repeat(300000);
  await assert.rejects(store.searchText(long), refusedOn('query',
    /^invalid query: is 1500000 bytes; a text query may be at most 1048576 bytes of UTF-8, as long as a chunk's text may be$/));
  await assert.rejects(store.searchHybrid(long, [1, 0]), refusedOn('query', /at most 1048576 bytes/));

  // At the limits, the same searches run.
  assert.equal((await store.search([1, 0], { k: 10000, ef: 10000 })).length, 1);
  assert.equal((await store.searchText('words', { k: 10000 })).length, 1);
});
