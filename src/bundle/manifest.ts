// The manifest of a bundle (bundle.json at the root of the unpacked tree): what `spark bundle`
// put in it, so that `spark fanout install` can check every file on a node and `spark
// --version` on that node names the build it runs (docs/cluster-ops.md).
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { VERSION } from '../domain/version.js';

export type BundleArch = 'x64' | 'arm64';

/** The ELF machine of each architecture, as the ELF reader names it. */
export const ELF_MACHINE_OF: Record<BundleArch, string> = { x64: 'x86_64', arm64: 'aarch64' };

/** The newest glibc the addon and the engine libraries may import (Ubuntu 22.04, DGX OS). */
export const GLIBC_CEILING = 'GLIBC_2.35';

export const MANIFEST_NAME = 'bundle.json';

export interface BundleFile {
  path: string;
  bytes: number;
  sha256: string;
  /** Executable (mode 755), else 644. */
  exec?: boolean;
}

export interface BundleManifest {
  format: 1;
  name: 'spark';
  version: string;
  commit: string;
  arch: BundleArch;
  platform: 'linux';
  /** The addon as node-gyp-build finds it, relative to the root. */
  addon: string;
  /** The engine libraries, relative to the root. */
  libs: string[];
  /** Every file of the tree but the manifest, sorted by path. */
  files: BundleFile[];
}

/** The directory holding the versioned tree: its name on a node (`<version>-<commit12>`). */
export function versionDirName(m: Pick<BundleManifest, 'version' | 'commit' | 'arch'>): string {
  return `${m.version}-${m.commit.slice(0, 12)}-${m.arch}`;
}

/** The version string of a bundled build: `0.1.0+<commit12>`. */
export function bundledVersion(m: Pick<BundleManifest, 'version' | 'commit'>): string {
  return `${m.version}+${m.commit.slice(0, 12)}`;
}

/** `0.1.0+abc` → `0.1.0`. */
export function baseVersion(v: string): string {
  return v.split('+')[0]!.trim();
}

let cached: string | undefined;

/**
 * What `spark --version` prints: the package version, followed by `+<commit>` when this spark
 * runs from an installed bundle (its manifest beside package.json).
 */
export function versionString(moduleUrl: string = import.meta.url): string {
  if (cached !== undefined) return cached;
  cached = VERSION;
  // dist/src/bundle/manifest.js → the package root three levels up.
  const root = join(dirname(fileURLToPath(moduleUrl)), '..', '..', '..');
  try {
    const m = JSON.parse(readFileSync(join(root, MANIFEST_NAME), 'utf8')) as Partial<BundleManifest>;
    if (m.name === 'spark' && typeof m.version === 'string' && typeof m.commit === 'string')
      cached = bundledVersion({ version: m.version, commit: m.commit });
  } catch {
    // a checkout or an npm install: no manifest
  }
  return cached;
}

/** Parses and checks a manifest's shape; throws with what is wrong. */
export function parseManifest(text: string): BundleManifest {
  const m = JSON.parse(text) as Partial<BundleManifest>;
  const bad = (what: string) => new Error(`not a spark bundle manifest: ${what}`);
  if (m.name !== 'spark' || m.format !== 1) throw bad('name/format');
  if (typeof m.version !== 'string' || !/^[0-9A-Za-z.+-]+$/.test(m.version)) throw bad('version');
  if (typeof m.commit !== 'string' || !/^[0-9a-z-]+$/.test(m.commit)) throw bad('commit');
  if (m.arch !== 'x64' && m.arch !== 'arm64') throw bad('arch');
  if (!Array.isArray(m.files) || !Array.isArray(m.libs) || typeof m.addon !== 'string') throw bad('files');
  for (const f of m.files)
    if (
      typeof f.path !== 'string' ||
      !/^[0-9a-f]{64}$/.test(f.sha256) ||
      f.path.startsWith('/') ||
      f.path.includes('..')
    )
      throw bad(`file ${String(f.path)}`);
  return m as BundleManifest;
}
