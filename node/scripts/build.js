#!/usr/bin/env node
// Builds the native addon (`ratchetdb.node`) and its type declarations (`native.d.ts`) with
// napi-rs's CLI. Run by `npm install` (the package ships its Rust sources and is built on
// the machine that installs it: a Rust toolchain is needed). A release build by default;
// RATCHETDB_NODE_PROFILE=dev builds the faster-to-compile dev profile (what CI tests).
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const here = path.resolve(__dirname, '..');
const profile = process.env.RATCHETDB_NODE_PROFILE || 'release';
// `npm install ./node` links this folder without installing its own dependencies first: the
// pinned CLI (package-lock.json) is then installed here, scripts off, before the build.
function resolveCli() {
  try {
    return require.resolve('@napi-rs/cli/package.json', { paths: [here] });
  } catch {
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const install = spawnSync(npm, ['ci', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
    if (install.status !== 0) process.exit(install.status === null ? 1 : install.status);
    return require.resolve('@napi-rs/cli/package.json', { paths: [here] });
  }
}
const cliPackage = resolveCli();
const cli = path.join(path.dirname(cliPackage), require(cliPackage).bin.napi);
// `--dts native.d.ts`: napi's default would overwrite index.d.ts, the hand-written
// declarations of index.js's API (tests/typescript_declarations_cover_the_api.test.js).
const args = [cli, 'build', '--manifest-path', path.join(here, 'Cargo.toml'),
  '--package-json-path', path.join(here, 'package.json'),
  '--output-dir', here, '--dts', 'native.d.ts', '--no-dts-header'];
// Cargo's dev profile is napi's default (its `--profile dev` looks for a `dev` folder that
// Cargo never writes).
if (profile === 'release') args.push('--release');
else if (profile !== 'dev') args.push('--profile', profile);
const run = spawnSync(process.execPath, args, { cwd: here, stdio: 'inherit' });
if (run.error) throw run.error;
process.exit(run.status === null ? 1 : run.status);
