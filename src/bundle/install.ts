// `spark fanout install FILE --cluster C`: the bundle to every node at once through the ssh
// channel (stdin of `ssh -- HOST sh -c SCRIPT`, the script install.sh), checked and switched
// on each node by that script; a node that fails keeps its previous version and says why.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { SparkError } from '../errors/errors.js';
import type { Io } from '../terminal/io.js';
import { openCluster } from '../recipes/index.js';
import { fanOut, describeEnd, type NodeJob, type NodeJobResult } from '../remote/node-jobs.js';
import { nodeArgv, toolsFromEnv } from '../remote/ssh.js';
import { shTemplate } from '../remote/sh-template.js';
import { bundledVersion, parseManifest, versionDirName, MANIFEST_NAME, type BundleManifest } from './manifest.js';

export const DEFAULT_LIB_DIR = '/var/lib/spark/lib';

export interface InstallRequest {
  bundle: string;
  cluster: string;
  /** Where the engine libraries go on each node. */
  libDir: string;
  /** The versions directory's parent on each node (default ~/.local/share/spark). */
  prefix?: string;
  /** Where the spark link goes on each node (default ~/.local/bin). */
  binDir?: string;
  dryRun?: boolean;
}

export interface BundleIdentity {
  path: string;
  bytes: number;
  sha256: string;
  manifest: BundleManifest;
}

export interface InstallOutcome {
  rank: number;
  host: string;
  status: 'installed' | 'failed' | 'planned';
  /** `spark --version` on the node after the install. */
  version?: string;
  /** The version directory `current` pointed at before (empty: none). */
  previous?: string;
  addon?: string;
  seconds: number;
  error?: string;
}

export interface InstallReport {
  bundle: { path: string; bytes: number; sha256: string; version: string; commit: string; arch: string };
  cluster: string;
  dir: string;
  libDir: string;
  dryRun: boolean;
  nodes: InstallOutcome[];
}

async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** The bundle's size, digest and manifest (read from the archive with tar). */
export async function readBundle(path: string): Promise<BundleIdentity> {
  let bytes: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw new SparkError('E_NOT_A_FILE', `${path}: not a file`, { path });
    bytes = st.size;
  } catch (err) {
    if (err instanceof SparkError) throw err;
    throw new SparkError('E_FILE_NOT_FOUND', `${path}: no such bundle (make one with spark bundle --out FILE)`, {
      path,
    });
  }
  const tar = spawnSync('tar', ['-xzOf', path, `./${MANIFEST_NAME}`], { encoding: 'utf8', maxBuffer: 64 << 20 });
  let manifest: BundleManifest;
  try {
    if (tar.status !== 0) throw new Error((tar.stderr || 'tar failed').trim().split('\n')[0]);
    manifest = parseManifest(tar.stdout);
  } catch (err) {
    throw new SparkError('E_USAGE', `${path}: not a spark bundle (${(err as Error).message})`, { path });
  }
  return { path, bytes, sha256: await fileSha256(path), manifest };
}

/** The program each node runs, with the bundle on its stdin. */
export function installScript(b: BundleIdentity, req: Pick<InstallRequest, 'libDir' | 'prefix' | 'binDir'>): string {
  const m = b.manifest;
  const shaOf = new Map(m.files.map((f) => [f.path, f.sha256]));
  return shTemplate(import.meta.url, 'install.sh').fill({
    SHA256: b.sha256,
    BYTES: b.bytes,
    NAME: versionDirName(m),
    VERSION: bundledVersion(m),
    PREFIX: req.prefix ?? '',
    BIN_DIR: req.binDir ?? '',
    LIB_DIR: req.libDir,
    LIBS: m.libs.flatMap((l) => [l, shaOf.get(l) ?? '']).join(' '),
  });
}

/** `key value` lines of the script's stdout. */
export function parseResult(stdout: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of stdout.split('\n')) {
    const m = /^([a-z]+) ?(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!;
  }
  return out;
}

/** Why a node failed: the script's `install failed:` line, else ssh's or the last line. */
export function failureReason(r: NodeJobResult): string {
  const said = [...r.tail].reverse().find((l) => l.includes('install failed: '));
  if (said) return said.slice(said.indexOf('install failed: ') + 'install failed: '.length);
  if (r.stopped) return 'stopped; the previous version stays';
  if (r.signal || r.code === 137)
    return `ssh ended (${describeEnd(r)}) before the node said the install was done; the previous version stays unless the summary of a retry says otherwise`;
  if (r.code === 255) return `ssh failed: ${r.tail.at(-1) ?? 'no output'}`;
  return `${r.tail.at(-1) ?? describeEnd(r)} (${describeEnd(r)})`;
}

export function outcome(r: NodeJobResult): InstallOutcome {
  const res = parseResult(r.stdout);
  if (r.code === 0 && res.version !== undefined) {
    return {
      rank: r.rank,
      host: r.host,
      status: 'installed',
      version: res.version,
      previous: res.previous ?? '',
      ...(res.addon !== undefined ? { addon: res.addon } : {}),
      seconds: r.seconds,
    };
  }
  return { rank: r.rank, host: r.host, status: 'failed', seconds: r.seconds, error: failureReason(r) };
}

export async function runInstall(req: InstallRequest, io: Io): Promise<InstallReport> {
  const bundlePath = resolve(io.cwd, req.bundle);
  const bundle = await readBundle(bundlePath);
  const { cluster } = await openCluster(req.cluster, { env: io.env, cwd: io.cwd });
  const tools = toolsFromEnv(io.env);
  const m = bundle.manifest;
  const dir = versionDirName(m);
  const report: InstallReport = {
    bundle: {
      path: bundlePath,
      bytes: bundle.bytes,
      sha256: bundle.sha256,
      version: bundledVersion(m),
      commit: m.commit,
      arch: m.arch,
    },
    cluster: cluster.file,
    dir,
    libDir: req.libDir,
    dryRun: Boolean(req.dryRun),
    nodes: [],
  };
  const script = installScript(bundle, req);
  const jobs: NodeJob[] = cluster.nodes.map((n) => ({
    rank: n.rank,
    host: n.host,
    argv: nodeArgv(n.host, ['sh', '-c', script], tools),
    stdinFile: bundlePath,
  }));
  if (req.dryRun) {
    report.nodes = jobs.map((j) => ({ rank: j.rank, host: j.host, status: 'planned', seconds: 0 }));
    return report;
  }
  io.stderr(
    `installing spark ${bundledVersion(m)} (linux-${m.arch}, ${bundle.bytes} bytes) on ${jobs.length} node(s) of ${cluster.name}: ${jobs.map((j) => j.host).join(', ')}\n`,
  );
  const results = await fanOut(jobs, { env: io.env, write: io.stderr, captureStdout: true });
  report.nodes = results.map(outcome);
  return report;
}

/** The plan of a dry run, one paragraph. */
export function describePlan(report: InstallReport, req: Pick<InstallRequest, 'prefix' | 'binDir'>): string {
  const prefix = req.prefix ?? '~/.local/share/spark';
  const bin = req.binDir ?? '~/.local/bin';
  const b = report.bundle;
  return [
    `spark ${b.version} for linux-${b.arch}: ${b.path} (${b.bytes} bytes, sha256 ${b.sha256})`,
    `on each of ${report.nodes.map((n) => `${n.rank} ${n.host}`).join(', ')}, at once:`,
    `  1. copy the bundle through ssh (stdin of sh -c on the node) and check its size and sha256`,
    `  2. unpack it, check every file against bundle.json, run its spark --version and load its addon`,
    `  3. copy ${b.arch === 'arm64' ? 'the aarch64' : 'the x86-64'} engine libraries to ${report.libDir} (checked by sha256)`,
    `  4. move it to ${prefix}/versions/${report.dir}, point ${prefix}/current at it (a new link renamed over the old)`,
    `  5. link ${bin}/spark to ${prefix}/current/dist/src/bin.js and check its spark --version`,
    'A node where a step fails keeps its previous version. Nothing was run (--dry-run).',
  ].join('\n');
}
