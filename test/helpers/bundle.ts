// What every bundle must be, whatever its architecture: unpacked, every file matches the
// manifest; the addon and both engine libraries are ELF files of its machine needing at most
// glibc 2.35 (the project's ELF reader); node-gyp-build, asked as on a linux-<arch> node,
// resolves the prebuild.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compareGlibc, readElf } from '../../src/files/elf.js';
import {
  ELF_MACHINE_OF,
  GLIBC_CEILING,
  parseManifest,
  type BundleArch,
  type BundleManifest,
} from '../../src/bundle/manifest.js';
import { tempDir } from './tmp.js';

/** Builds a bundle with the CLI (a real process); returns its path. */
export function makeBundle(arch: BundleArch, extra: string[] = [], dir = tempDir('spark-bundle-')): string {
  const out = join(dir, `spark-${arch}.tgz`);
  const r = spawnSync(
    process.execPath,
    [join(process.cwd(), 'dist', 'src', 'bin.js'), 'bundle', '--arch', arch, '--out', out, ...extra],
    {
      encoding: 'utf8',
    },
  );
  assert.equal(r.status, 0, r.stderr);
  return out;
}

export function unpack(bundle: string): { dir: string; manifest: BundleManifest } {
  const dir = tempDir('spark-unpacked-');
  const r = spawnSync('tar', ['-xzf', bundle, '-C', dir], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return { dir, manifest: parseManifest(readFileSync(join(dir, 'bundle.json'), 'utf8')) };
}

export function checkBundle(bundle: string, arch: BundleArch): { dir: string; manifest: BundleManifest } {
  const u = unpack(bundle);
  const m = u.manifest;
  assert.equal(m.arch, arch);
  for (const f of m.files) {
    const data = readFileSync(join(u.dir, f.path));
    assert.equal(createHash('sha256').update(data).digest('hex'), f.sha256, f.path);
    assert.equal(data.length, f.bytes, f.path);
  }
  assert.equal(m.addon, `prebuilds/linux-${arch}/node.napi.glibc.node`);
  assert.deepEqual(m.libs, ['build/Release/libengram_rows.so', 'build/Release/librow_store.so']);
  for (const rel of [m.addon, ...m.libs]) {
    const elf = readElf(readFileSync(join(u.dir, rel)));
    assert.equal(elf.machine, ELF_MACHINE_OF[arch], rel);
    assert.equal(elf.type, 3, `${rel}: a shared object`);
    assert.ok(elf.glibcMax !== undefined, `${rel}: imports glibc`);
    assert.ok(compareGlibc(elf.glibcMax, GLIBC_CEILING) <= 0, `${rel} needs ${elf.glibcMax}`);
  }
  // node-gyp-build as a linux-<arch> node runs it: no build/Release/*.node, the prebuild.
  const r = spawnSync(process.execPath, ['-e', 'console.log(require("node-gyp-build").resolve("."))'], {
    cwd: u.dir,
    encoding: 'utf8',
    env: { ...process.env, npm_config_arch: arch, npm_config_platform: 'linux' },
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), join(u.dir, m.addon));
  return u;
}
