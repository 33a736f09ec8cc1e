'use strict';
// The README's Node.js example runs as printed (an ES module with top-level await), against
// this package, in an empty folder: what a new user pastes works.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir } = require('./helpers');

test("the README's Node.js example runs", (t) => {
  const readme = fs.readFileSync(path.resolve(__dirname, '..', '..', 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Node.js and Electron'));
  const match = section.match(/```js\n([\s\S]*?)```/);
  assert.ok(match, 'the section has a js block');
  const dir = tempDir(t);
  // The example imports the package by name; here the name is this folder.
  const code = match[1].replace(/from 'ratchetdb'/, `from ${JSON.stringify(path.resolve(__dirname, '..', 'index.mjs'))}`);
  fs.writeFileSync(path.join(dir, 'example.mjs'), code);
  const run = spawnSync(process.execPath, ['example.mjs'], { cwd: dir, encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.match(run.stdout, /a\.md 2/, 'the export loop prints the document and its version');
});
