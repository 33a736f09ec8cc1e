'use strict';
// Proves ids: addDocuments uses options.ids, else each Document's id, else new unique ids;
// adding an id again replaces that document (one chunk, the new text; the old text is no
// longer found); an id twice in one call keeps the last; addVectors writes precomputed
// vectors under the same rules.

const test = require('node:test');
const assert = require('node:assert/strict');
const { Document } = require('@langchain/core/documents');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('ids given, taken from documents, generated; re-adding an id replaces it', async (t) => {
  const embeddings = new HashEmbeddings();
  const store = await RatchetVectorStore.open(embeddings, { path: tempPath(t) });
  t.after(() => store.close());

  const given = await store.addDocuments(
    [new Document({ pageContent: 'first text', metadata: { v: 1 } }), new Document({ pageContent: 'second text', metadata: {} })],
    { ids: ['one', 'two'] },
  );
  assert.deepEqual(given, ['one', 'two']);

  const own = await store.addDocuments([new Document({ pageContent: 'third text', metadata: {}, id: 'three' })]);
  assert.deepEqual(own, ['three']);

  const generated = await store.addDocuments([{ pageContent: 'fourth text', metadata: {} }, { pageContent: 'fifth text', metadata: {} }]);
  assert.equal(generated.length, 2);
  assert.notEqual(generated[0], generated[1]);
  for (const id of generated) assert.ok(typeof id === 'string' && id.length > 0);

  assert.deepEqual((await store.getByIds(['one', 'three', generated[1]])).map((d) => d.pageContent),
    ['first text', 'third text', 'fifth text']);

  // Replace 'one'.
  await store.addDocuments([new Document({ pageContent: 'replacement words here', metadata: { v: 2 } })], { ids: ['one'] });
  const [one] = await store.getByIds(['one']);
  assert.equal(one.pageContent, 'replacement words here');
  assert.deepEqual(one.metadata, { v: 2 });
  const found = await store.similaritySearch('first text', 10);
  assert.ok(!found.some((d) => d.pageContent === 'first text'), 'the replaced text is still found');
  assert.equal(found.filter((d) => d.id === 'one').length, 1);

  // The same id twice in one call: the last wins.
  await store.addDocuments([{ pageContent: 'draft', metadata: {} }, { pageContent: 'final', metadata: {} }], { ids: ['dup', 'dup'] });
  assert.deepEqual((await store.getByIds(['dup'])).map((d) => d.pageContent), ['final']);

  // Precomputed vectors.
  const ids = await store.addVectors([HashEmbeddings.vector('zebra stripes')], [{ pageContent: 'zebra stripes', metadata: { k: 'z' } }], { ids: ['z'] });
  assert.deepEqual(ids, ['z']);
  const [top] = await store.similaritySearch('zebra stripes', 1);
  assert.equal(top.id, 'z');
  assert.deepEqual(top.metadata, { k: 'z' });

  await assert.rejects(store.addVectors([[1, 0]], []), (e) => e.field === 'vectors');
  await assert.rejects(store.addDocuments([{ pageContent: 'x', metadata: {} }], { ids: ['a', 'b'] }), (e) => e.field === 'ids');
});
