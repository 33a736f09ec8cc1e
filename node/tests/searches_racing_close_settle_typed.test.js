'use strict';
// Searches racing `close()` each settle: one started before the close resolves with its own
// hits (its reader thread holds the store until it ends) or rejects typed, one started after
// it rejects with a ClosedError; none hangs, and the process exits once they have settled
// (the completer that settles them keeps the event loop alive no longer than that).
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir } = require('./helpers');

test('searches racing close settle with hits or a ClosedError, and the process exits', (t) => {
  const file = path.join(tempDir(t), 'race.redb');
  const script = `
    const { Store, ClosedError, RatchetError } = require(${JSON.stringify(path.resolve(__dirname, '..'))});
    (async () => {
      const store = await Store.open(${JSON.stringify(file)}, { dimension: 4 });
      const axes = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]];
      await store.writeBatch(axes.map((v, i) => ({ op: 'upsert', source: 's', id: 'd' + i, version: 1, chunks: [{ text: 'word' + i, vector: v }] })));
      const searches = [];
      const launch = (r) => {
        const i = r % 4;
        const kind = r % 3;
        const p = kind === 0 ? store.search(axes[i], { k: 1 }).then(([hit]) => hit.id === 'd' + i)
          : kind === 1 ? store.searchText('word' + i, { k: 1 }).then(([hit]) => hit.id === 'd' + i)
          : store.searchMany(axes, { k: 1 }).then((lists) => lists.every(([hit], j) => hit.id === 'd' + j));
        searches.push(p);
      };
      for (let r = 0; r < 150; r++) launch(r);
      const closing = store.close();
      for (let r = 150; r < 300; r++) launch(r);
      const settled = await Promise.allSettled(searches);
      await closing;
      let right = 0; let closed = 0;
      settled.forEach((s, r) => {
        if (s.status === 'fulfilled') {
          if (s.value !== true) throw new Error('search ' + r + ' got another query\\'s hits');
          right++;
        } else {
          if (!(s.reason instanceof RatchetError)) throw s.reason;
          if (r >= 150 && !(s.reason instanceof ClosedError)) throw s.reason;
          if (s.reason instanceof ClosedError) closed++;
        }
      });
      if (closed < 150) throw new Error('a search after close did not reject with ClosedError');
      console.log('settled', settled.length, 'right', right, 'closed', closed);
    })().catch((e) => { console.error(e); process.exit(1); });`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
  assert.equal(run.error, undefined, 'the process exits (no search hangs)');
  assert.equal(run.status, 0, run.stderr);
  const [, settled, right] = run.stdout.match(/settled (\d+) right (\d+) closed (\d+)/).map(Number);
  assert.equal(settled, 300);
  assert.ok(right > 0, 'searches started before the close got their hits');
});
