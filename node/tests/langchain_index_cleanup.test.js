'use strict';
// Proves index()'s cleanup modes, as the Python package's: null and 'incremental' leave
// sources absent from the run alone; 'full' deletes every document of the vector store's
// source the run did not write (counted in numDeleted). With cleanup, a document without a
// source id is refused and nothing is written; without cleanup it gets its own content id, so
// a re-run of it is skipped. sourceIdKey may be a function; a document loader is accepted.

const test = require('node:test');
const assert = require('node:assert/strict');
const { InputError } = require('ratchetdb');
const { RatchetVectorStore, index } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

const docsOf = (source, texts) => texts.map((pageContent) => ({ pageContent, metadata: { source } }));
const sourcesIn = async (store) => {
  const out = new Set();
  for await (const doc of store.store.export()) if (!doc.deleted && doc.source === store.source) out.add(doc.id);
  return [...out].sort();
};

test('cleanup null, incremental and full; source ids', async (t) => {
  const embeddings = new HashEmbeddings();
  const store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());
  const run = (docsSource, options) => index({ docsSource, vectorStore: store, options });

  await run([...docsOf('p', ['p1', 'p2']), ...docsOf('q', ['q1']), ...docsOf('r', ['r1', 'r2', 'r3'])]);
  assert.deepEqual(await sourcesIn(store), ['p', 'q', 'r']);

  for (const cleanup of [null, undefined, 'incremental']) {
    const counts = await run(docsOf('p', ['p1', 'p2']), { cleanup });
    assert.equal(counts.numDeleted, 0, `cleanup ${cleanup}`);
    assert.deepEqual(await sourcesIn(store), ['p', 'q', 'r'], `cleanup ${cleanup}`);
  }

  const full = await run(docsOf('q', ['q1']), { cleanup: 'full' });
  assert.equal(full.numDeleted, 2 + 3);
  assert.equal(full.numSkipped, 1);
  assert.deepEqual(await sourcesIn(store), ['q']);
  assert.deepEqual(await store.similaritySearch('p1', 10, { source: 'p' }), []);

  // No source id: refused under cleanup (nothing written), its own content id otherwise.
  const orphan = [{ pageContent: 'no source here', metadata: {} }];
  await assert.rejects(run([...docsOf('s', ['s1']), ...orphan], { cleanup: 'incremental' }),
    (e) => e instanceof InputError && e.field === 'docsSource[1]');
  assert.deepEqual(await sourcesIn(store), ['q']);
  assert.equal((await run(orphan)).numAdded, 1);
  assert.deepEqual(await run(orphan), { numAdded: 0, numUpdated: 0, numSkipped: 1, numDeleted: 0 });
  assert.equal((await run([{ pageContent: 'no source here', metadata: { other: 1 } }])).numAdded, 1, 'other metadata, other content id');

  // A function as sourceIdKey, and a loader as docsSource.
  const loader = { load: async () => [{ pageContent: 'from a loader', metadata: { path: '/a/b.txt' } }] };
  await run(loader, { sourceIdKey: (doc) => doc.metadata.path });
  assert.ok((await sourcesIn(store)).includes('/a/b.txt'));

  await assert.rejects(run([], { cleanup: 'partial' }), (e) => e.field === 'options.cleanup');
  await assert.rejects(run([], { batchSize: 0 }), (e) => e.field === 'options.batchSize');
  await assert.rejects(run([], { forceUpdate: true }), (e) => e.field === 'options.forceUpdate');
  assert.equal((await store.store.verify()).ok, true);
});
