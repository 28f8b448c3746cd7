// `spark bundle`: one gzip'd tar holding everything spark needs on a Linux node that has only
// Node >= 20: the compiled JavaScript (dist/src), the sh programs it sends (src/**/*.sh), the
// production dependencies, the addon as a prebuild where node-gyp-build finds it
// (prebuilds/linux-<arch>/node.napi.glibc.node), both engine libraries (build/Release, where
// `spark engine-lib` finds them) and bundle.json (manifest.ts). Another architecture's native
// files are cross-built (cross-build.sh); the tar is written by the system's tar, sorted and
// with fixed owners and times, so two bundles of one build hold the same bytes.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { SparkError } from '../errors/errors.js';
import { readElf, compareGlibc } from '../files/elf.js';
import { shTemplate } from '../remote/sh-template.js';
import { VERSION } from '../domain/version.js';
import { writeNewFile } from '../files/new-file.js';
import {
  ELF_MACHINE_OF,
  GLIBC_CEILING,
  MANIFEST_NAME,
  type BundleArch,
  type BundleFile,
  type BundleManifest,
} from './manifest.js';
import { STACKS } from '../stacks/registry.js';

/** The engine libraries a bundle carries, where `spark engine-lib` finds them (build/Release). */
const ENGINE_LIBS: readonly string[] = STACKS.map((s) => s.libraryFile);

export interface BundleRequest {
  arch: BundleArch;
  out: string;
  /** The package to bundle (default: the one this spark runs from). */
  root: string;
  /** Recorded instead of the checkout's git HEAD. */
  commit?: string;
  /** Cross compiler prefix (default aarch64-linux-gnu-). */
  crossPrefix?: string;
  /** Progress lines. */
  log(line: string): void;
}

export interface BundleResult {
  out: string;
  bytes: number;
  sha256: string;
  manifest: Omit<BundleManifest, 'files'> & { files: number };
  seconds: number;
}

/** The prebuild's path inside the tree for an architecture. */
export function addonPath(arch: BundleArch): string {
  return `prebuilds/linux-${arch}/node.napi.glibc.node`;
}

/** This machine's architecture as a bundle names it, or undefined. */
export function hostArch(): BundleArch | undefined {
  return process.arch === 'x64' || process.arch === 'arm64' ? process.arch : undefined;
}

export function parseArch(value: string | undefined): BundleArch {
  const v = value ?? hostArch();
  if (v === 'x64' || v === 'arm64') return v;
  throw new SparkError('E_USAGE', `--arch must be x64 or arm64, not ${String(value ?? process.arch)}`);
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** The checkout's commit, or undefined outside a git checkout. */
function gitCommit(root: string): string | undefined {
  const r = spawnSync('git', ['-C', root, 'rev-parse', 'HEAD'], { encoding: 'utf8' });
  const c = r.status === 0 ? r.stdout.trim() : '';
  return /^[0-9a-f]{40}$/.test(c) ? c : undefined;
}

/** The production dependencies, transitively, as paths under node_modules. */
export function productionModules(root: string): string[] {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name)) return;
    const dir = join(root, 'node_modules', name);
    if (!existsSync(join(dir, 'package.json')))
      throw new SparkError('E_FILE_NOT_FOUND', `${dir}: a dependency is not installed; run npm ci in ${root}`, {
        path: dir,
      });
    seen.add(name);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const d of Object.keys(pkg.dependencies ?? {})) visit(d);
  };
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const d of Object.keys(pkg.dependencies ?? {})) visit(d);
  return [...seen].sort();
}

function copyTree(from: string, to: string, keep: (rel: string) => boolean, base = from): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const src = join(from, entry.name);
    const rel = relative(base, src);
    if (entry.isDirectory()) copyTree(src, join(to, entry.name), keep, base);
    else if (entry.isFile() && keep(rel)) {
      mkdirSync(to, { recursive: true });
      copyFileSync(src, join(to, entry.name));
    }
  }
}

function listFiles(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? listFiles(join(dir, e.name), base) : [relative(base, join(dir, e.name))],
  );
}

/** The native files of `arch`: this machine's build, or a cross build in a scratch directory. */
function nativeFiles(req: BundleRequest, scratch: string): { addon: string; libs: string[] } {
  let release = join(req.root, 'build', 'Release');
  if (req.arch !== hostArch()) {
    if (hostArch() !== 'x64' || req.arch !== 'arm64')
      throw new SparkError(
        'E_USAGE',
        `spark bundle cross-builds arm64 on x64 only; build the ${req.arch} bundle on a ${req.arch} machine`,
      );
    const work = join(scratch, 'cross');
    req.log(`cross-building the addon and the engine libraries for ${req.arch} (a few minutes)`);
    const script = shTemplate(import.meta.url, 'cross-build.sh').fill({
      ROOT: req.root,
      WORK: work,
      ARCH: req.arch,
      PREFIX: req.crossPrefix ?? 'aarch64-linux-gnu-',
    });
    const r = spawnSync('sh', ['-c', script], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
      maxBuffer: 64 << 20,
    });
    if (r.status !== 0) {
      const tail = (r.stderr || r.stdout || '').trim().split('\n').slice(-15).join('\n');
      throw new SparkError(
        r.status === 3 ? 'E_EXEC' : 'E_CHECK_FAILED',
        `the ${req.arch} cross build failed:\n${tail}`,
      );
    }
    release = join(work, 'build', 'Release');
  }
  const addon = join(release, 'spark.node');
  const libs = ENGINE_LIBS.map((l) => join(release, l));
  for (const f of [addon, ...libs])
    if (!existsSync(f))
      throw new SparkError('E_FILE_NOT_FOUND', `${f}: not built; run npm run build:native in ${req.root}`, { path: f });
  return { addon, libs };
}

/** Checks a native file is an ELF object of the arch that needs at most GLIBC_CEILING. */
export function checkNative(path: string, arch: BundleArch): { machine: string; glibcMax?: string } {
  let elf;
  try {
    elf = readElf(readFileSync(path));
  } catch (err) {
    throw new SparkError('E_CHECK_FAILED', `${path}: ${(err as Error).message}`, { path });
  }
  const want = ELF_MACHINE_OF[arch];
  if (elf.machine !== want)
    throw new SparkError('E_CHECK_FAILED', `${path} is built for ${elf.machine}, not ${want} (${arch})`, { path });
  if (elf.glibcMax !== undefined && compareGlibc(elf.glibcMax, GLIBC_CEILING) > 0)
    throw new SparkError(
      'E_CHECK_FAILED',
      `${path} needs ${elf.glibcMax}, newer than ${GLIBC_CEILING} (Ubuntu 22.04 nodes could not load it)`,
      { path },
    );
  return { machine: elf.machine, ...(elf.glibcMax !== undefined ? { glibcMax: elf.glibcMax } : {}) };
}

export function buildBundle(req: BundleRequest): BundleResult {
  const began = performance.now();
  const root = resolve(req.root);
  checkRequest(req, root);
  const scratch = mkdtempSync(join(tmpdir(), 'spark-bundle-'));
  try {
    const tree = join(scratch, 'tree');
    const { addon, libs } = fillTree({ ...req, root }, scratch, tree);
    const manifest = writeManifest(tree, { ...req, root }, addon, libs);
    const out = resolve(req.out);
    // tar writes in the private scratch directory; the bundle is then created beside `out`
    // and renamed over it, never written through a link.
    const data = tarball(tree, join(scratch, 'bundle.tgz'), out);
    writeNewFile(out, data);
    const { files, ...rest } = manifest;
    return {
      out,
      bytes: data.length,
      sha256: sha256(data),
      manifest: { ...rest, files: files.length },
      seconds: (performance.now() - began) / 1000,
    };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function checkRequest(req: BundleRequest, root: string): void {
  if (!existsSync(join(root, 'dist', 'src', 'bin.js')))
    throw new SparkError('E_FILE_NOT_FOUND', `${root}/dist/src/bin.js: not built; run npm run build:ts`);
  if (req.commit !== undefined && !/^[0-9a-z-]+$/.test(req.commit))
    throw new SparkError('E_USAGE', `--commit ${req.commit}: letters, digits and - only`);
}

/** The bundle's tree: the package's files, the production modules, the addon and the libraries. */
function fillTree(req: BundleRequest, scratch: string, tree: string): { addon: string; libs: string[] } {
  const root = req.root;
  mkdirSync(tree);
  const native = nativeFiles(req, scratch);
  for (const f of [native.addon, ...native.libs]) checkNative(f, req.arch);
  copyFileSync(join(root, 'package.json'), join(tree, 'package.json'));
  // The addon's loader finds the package root by binding.gyp.
  copyFileSync(join(root, 'binding.gyp'), join(tree, 'binding.gyp'));
  copyTree(join(root, 'dist', 'src'), join(tree, 'dist', 'src'), (rel) => rel.endsWith('.js'));
  copyTree(join(root, 'src'), join(tree, 'src'), (rel) => rel.endsWith('.sh'));
  for (const stack of readdirSync(join(root, 'native', 'engine-libs'))) {
    const map = join(root, 'native', 'engine-libs', stack, 'exports.map');
    if (existsSync(map)) {
      mkdirSync(join(tree, 'native', 'engine-libs', stack), { recursive: true });
      copyFileSync(map, join(tree, 'native', 'engine-libs', stack, 'exports.map'));
    }
  }
  for (const m of productionModules(root))
    copyTree(join(root, 'node_modules', m), join(tree, 'node_modules', m), (rel) => !/\.(md|map)$/i.test(rel));
  const addon = addonPath(req.arch);
  mkdirSync(join(tree, dirname(addon)), { recursive: true });
  copyFileSync(native.addon, join(tree, addon));
  mkdirSync(join(tree, 'build', 'Release'), { recursive: true });
  const libs = native.libs.map((l, i) => {
    const rel = `build/Release/${ENGINE_LIBS[i]}`;
    copyFileSync(l, join(tree, rel));
    return rel;
  });
  chmodSync(join(tree, 'dist', 'src', 'bin.js'), 0o755);
  return { addon, libs };
}

/** Every file's mode, size and sha256 in the tree's bundle.json, with the version and commit. */
function writeManifest(tree: string, req: BundleRequest, addon: string, libs: string[]): BundleManifest {
  const execs = new Set(['dist/src/bin.js', addon, ...libs]);
  const files: BundleFile[] = listFiles(tree)
    .sort()
    .map((path) => {
      const data = readFileSync(join(tree, path));
      const exec = execs.has(path);
      chmodSync(join(tree, path), exec ? 0o755 : 0o644);
      return { path, bytes: data.length, sha256: sha256(data), ...(exec ? { exec: true } : {}) };
    });
  const manifest: BundleManifest = {
    format: 1,
    name: 'spark',
    version: VERSION,
    commit: req.commit ?? gitCommit(req.root) ?? 'unknown',
    arch: req.arch,
    platform: 'linux',
    addon,
    libs,
    files,
  };
  writeFileSync(join(tree, MANIFEST_NAME), JSON.stringify(manifest, null, 2) + '\n', { mode: 0o644 });
  return manifest;
}

/** The tree as a reproducible gzip tar (names sorted, owner 0, mtime 0), read back whole. */
function tarball(tree: string, file: string, out: string): Buffer {
  const tar = spawnSync(
    'tar',
    ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', '--mtime=@0', '-C', tree, '-czf', file, '.'],
    { encoding: 'utf8', env: { ...process.env, GZIP: '-9n' } },
  );
  if (tar.status !== 0)
    throw new SparkError('E_IO', `tar failed writing ${out}: ${(tar.stderr || tar.error?.message || '').trim()}`, {
      path: out,
    });
  return readFileSync(file);
}
