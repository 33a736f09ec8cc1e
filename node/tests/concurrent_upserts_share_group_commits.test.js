'use strict';
// 1,000 upserts started at once (Promise.all) are all written, each promise settled with its
// own outcome, and they share group commits through the store's one writer: far fewer
// commits than writes.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Store } = require('..');
const { tempDir } = require('./helpers');

test('a thousand concurrent upserts share group commits', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'c.redb'), { dimension: 4 });
  t.after(() => store.close());
  const before = (await store.stats()).counters.commits;
  const outcomes = await Promise.all(Array.from({ length: 1000 }, (_, i) => store.upsert({
    source: 'load', id: `doc-${i}`, version: 1,
    chunks: [{ text: `chunk ${i}`, vector: [1, i % 7, i % 5, 1] }],
  })));
  assert.equal(outcomes.length, 1000);
  assert.ok(outcomes.every((o) => o.status === 'written'), 'every upsert is written');
  const stats = await store.stats();
  assert.equal(stats.documents, 1000);
  const commits = stats.counters.commits - before;
  assert.ok(commits < 500, `1,000 writes took ${commits} commits: group commit shares them`);
  assert.equal((await store.verify()).ok, true);
});
