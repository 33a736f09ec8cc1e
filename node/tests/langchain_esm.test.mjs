// Proves `import { RatchetVectorStore, index } from 'ratchetdb/langchain'` works from an ES
// module and extends the ES module build of @langchain/core's VectorStore (the one an ESM
// application imports), adding and finding documents.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { VectorStore } from '@langchain/core/vectorstores';
import { Document } from '@langchain/core/documents';
import langchain, { RatchetVectorStore, RatchetRetriever, index } from 'ratchetdb/langchain';

const require = createRequire(import.meta.url);
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('ratchetdb/langchain as an ES module', async (t) => {
  assert.equal(langchain.RatchetVectorStore, RatchetVectorStore);
  assert.equal(typeof RatchetRetriever, 'function');
  const store = await RatchetVectorStore.open(new HashEmbeddings(), { path: tempPath(t) });
  t.after(() => store.close());
  assert.ok(store instanceof VectorStore);
  const counts = await index({ docsSource: [new Document({ pageContent: 'esm works', metadata: { source: 's' } })], vectorStore: store });
  assert.equal(counts.numAdded, 1);
  const [hit] = await store.similaritySearch('esm works', 1);
  assert.ok(hit instanceof Document);
  assert.equal(hit.pageContent, 'esm works');
});
