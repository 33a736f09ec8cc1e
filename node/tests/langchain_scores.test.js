'use strict';
// Proves similaritySearchWithScore and similaritySearchVectorWithScore return
// [Document, score] pairs ordered best first, with the store's cosine similarity: a query
// equal to a stored text scores (about) 1 and above every other text.

const test = require('node:test');
const assert = require('node:assert/strict');
const { RatchetVectorStore } = require('ratchetdb/langchain');
const { HashEmbeddings, tempPath } = require('./langchain_helpers.js');

test('scores are cosine similarities, best first', async (t) => {
  const embeddings = new HashEmbeddings();
  const texts = ['red green blue', 'red green', 'violet indigo', 'a quiet harbour at dawn'];
  const store = await RatchetVectorStore.fromTexts(texts, {}, embeddings, { path: tempPath(t) });
  t.after(() => store.close());

  const scored = await store.similaritySearchWithScore('red green blue', texts.length);
  assert.equal(scored.length, texts.length);
  for (const [doc, score] of scored) {
    assert.equal(typeof doc.pageContent, 'string');
    assert.equal(typeof score, 'number');
    assert.ok(score <= 1 + 1e-5 && score >= -1 - 1e-5, `cosine score ${score} out of range`);
  }
  for (let i = 1; i < scored.length; i++) assert.ok(scored[i - 1][1] >= scored[i][1], 'not best first');
  assert.equal(scored[0][0].pageContent, 'red green blue');
  assert.ok(Math.abs(scored[0][1] - 1) < 1e-5, `identical text scored ${scored[0][1]}`);
  assert.ok(scored[1][1] < scored[0][1]);

  // The same through a precomputed vector, and the store's own cosine agrees with ours.
  const query = HashEmbeddings.vector('red green');
  const byVector = await store.similaritySearchVectorWithScore(query, 2);
  assert.equal(byVector[0][0].pageContent, 'red green');
  for (const [doc, score] of byVector) {
    const v = HashEmbeddings.vector(doc.pageContent);
    const cosine = v.reduce((sum, x, i) => sum + x * query[i], 0);
    assert.ok(Math.abs(cosine - score) < 1e-4, `score ${score} vs cosine ${cosine}`);
  }
});
