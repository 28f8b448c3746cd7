// spark bundle --arch arm64, cross-built on x86-64: the addon and both engine libraries are
// aarch64 ELF files needing glibc <= 2.35, every file is as the manifest says, and node-gyp-build
// asked as a linux-arm64 node resolves the prebuild. The cross build takes a few CPU minutes;
// SPARK_ARM64_BUNDLE names a bundle already built from this checkout to check instead.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { checkBundle, makeBundle } from '../helpers/bundle.js';
import { needs, type ExternalTool } from '../helpers/external-tool.js';

const CROSS: ExternalTool = {
  name: 'aarch64-linux-gnu-g++',
  checks: 'cross-builds the arm64 bundle on x86-64',
  apt: 'g++-aarch64-linux-gnu',
  probe: ['aarch64-linux-gnu-g++', '--version'],
};

test('the arm64 bundle: aarch64 addon and libraries with glibc <= 2.35, resolved by node-gyp-build for linux-arm64', (t) => {
  const given = process.env.SPARK_ARM64_BUNDLE;
  if (given === undefined || given === '') {
    if (process.arch !== 'x64') return t.skip('cross-builds arm64 on an x64 machine');
    if (!needs(t, CROSS)) return;
  }
  const file = given || makeBundle('arm64');
  const bytes = statSync(file).size;
  assert.ok(bytes > 200_000 && bytes < 8 << 20, `${bytes} bytes`);
  const { manifest } = checkBundle(file, 'arm64');
  assert.equal(manifest.arch, 'arm64');
});
