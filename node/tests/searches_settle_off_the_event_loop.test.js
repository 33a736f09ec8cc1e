'use strict';
// Searches run on the addon's reader threads and settle through the store's completer: many
// concurrent searches of every kind each get their own hits; a search in flight keeps the
// process alive until it settles (a script whose only pending work is a search still prints
// its hits), and a store left open with nothing in flight does not keep the process from
// exiting.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Store } = require('..');
const { tempDir } = require('./helpers');

test('concurrent searches each settle with their own hits', async (t) => {
  const store = await Store.open(path.join(tempDir(t), 'reads.redb'), { dimension: 4 });
  t.after(() => store.close());
  const axes = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
  await store.writeBatch(axes.map((v, i) => ({ op: 'upsert', source: 's', id: `d${i}`, version: 1, chunks: [{ text: `word${i} axis`, vector: v }] })));
  const rounds = 50;
  const searches = [];
  for (let r = 0; r < rounds; r++) {
    axes.forEach((v, i) => {
      searches.push(store.search(v, { k: 1 }).then(([hit]) => assert.equal(hit.id, `d${i}`)));
      searches.push(store.searchText(`word${i}`, { k: 1 }).then(([hit]) => assert.equal(hit.id, `d${i}`)));
      searches.push(store.searchHybrid(`word${i}`, v, { k: 1 }).then(([hit]) => assert.equal(hit.id, `d${i}`)));
    });
    searches.push(store.searchMany(axes, { k: 1 }).then((lists) => lists.forEach(([hit], i) => assert.equal(hit.id, `d${i}`))));
  }
  searches.push(assert.rejects(store.search([1, 0], { k: 1 }), (e) => e.name === 'DimensionMismatchError' || e.name === 'InputError'));
  await Promise.all(searches);
});

test('a search in flight keeps the process alive; an idle open store does not', (t) => {
  const file = path.join(tempDir(t), 'alive.redb');
  const script = `
    const { Store } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const store = await Store.open(${JSON.stringify(file)}, { dimension: 2 });
      await store.upsert({ source: 's', id: 'a', version: 1, chunks: [{ text: 'only', vector: [1, 0] }] });
      store.search([1, 0], { k: 1 }).then((hits) => console.log('hit', hits[0].text));
    })();`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /hit only/);
});
