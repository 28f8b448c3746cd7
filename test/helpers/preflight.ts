// A world for preflight tests, built in a temp dir: the users' recipes with their host paths
// pointed into it, a 4-node cluster file whose hf_cache holds a synthetic DSV4.1 snapshot, a
// fake sysfs with the HCAs and interfaces the recipes name, and free ports.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, join } from 'node:path';
import type { Io } from '../../src/terminal/io.js';
import { packageRoot } from '../../src/addon/index.js';
import { runPreflight, type PreflightOptions, type PreflightReport } from '../../src/preflight/index.js';
import { makeSnapshot } from './synth.js';
import { buildSysfs, typical } from './sysfs.js';
import { tempDir } from './tmp.js';

export const DSV41 = 'recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml';
export const EUGR = 'recipes/deepseek-v4-flash-eugr-agent/recipe.toml';
export const PACKED = 'recipes/dsv41-flash-4x-sglang-packed/recipe.toml';
export const MIA_ENV = 'recipes/docker-images/mia-tp4/.env.example';
export const MIA = 'recipes/dsv41-flash-4x-sglang-mia/recipe.toml';
export const REVISION = 'dba1be0a40aa45a94ad051997016db3960a90277';
export const V41_MODEL = 'deepseek-ai/DeepSeek-V4.1-Flash';

export function repoFile(rel: string): string {
  return readFileSync(join(packageRoot(), rel), 'utf8');
}

export function write(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  return path;
}

/** Replaces `from` (which must occur) in `text`. */
export function edit(text: string, from: string | RegExp, to: string): string {
  const out = text.replace(from, to);
  if (out === text) throw new Error(`fixture edit found nothing to replace: ${String(from)}`);
  return out;
}

export function quietIo(env: NodeJS.ProcessEnv = {}): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: process.cwd(), stderrIsTTY: false, color: false };
}

/** A port nothing listens on right now. */
export async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '0.0.0.0', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** A port held open until `close()`. */
export async function busyPort(): Promise<{ port: number; close(): Promise<void> }> {
  const s: Server = createServer();
  await new Promise<void>((r) => s.listen(0, '0.0.0.0', r));
  return { port: (s.address() as { port: number }).port, close: () => new Promise<void>((r) => s.close(() => r())) };
}

export interface World {
  root: string;
  hfCache: string;
  snapshotDir: string;
  sysfs: string;
  cluster: string;
  /** Writes a cluster file (4 nodes by default) and returns its path. */
  writeCluster(opts?: {
    nodes?: number;
    nccl?: Record<string, string>;
    extra?: string;
    distPort?: number;
    name?: string;
  }): string;
  /** Writes recipe text into the world and returns its path. */
  recipe(text: string, name?: string): string;
  /** The dsv41 seed recipe, its wrapper mount pointed at a wrapper that sets SPARK_ENGRAM_ROWS. */
  dsv41Text: string;
  /** The eugr seed recipe, its cache mount pointed into the world. */
  eugrText: string;
  /** The packed recipe with its pack mount pointed into the world. */
  packedText: string;
  packDir: string;
  servingPort: number;
  distPort: number;
  options(recipe: string, extra?: Partial<PreflightOptions>): PreflightOptions;
}

export const FABRIC = {
  NCCL_IB_HCA: 'rocep1s0f0,roceP2p1s0f0',
  NCCL_SOCKET_IFNAME: 'enp1s0f0np0',
  GLOO_SOCKET_IFNAME: 'enp1s0f0np0',
  NCCL_IB_ADDR_RANGE: '192.168.200.0/24',
};

/** A fake sysfs: RDMA devices (port 1 with the typical GID table for the given IPv4) and interfaces. */
export function fakeSysfs(root: string, hcas: Record<string, string>, ifaces: string[]): string {
  buildSysfs(Object.fromEntries(Object.entries(hcas).map(([hca, ip]) => [hca, { 1: typical(ip) }])), root);
  for (const i of ifaces) mkdirSync(join(root, 'class', 'net', i), { recursive: true });
  mkdirSync(join(root, 'class', 'net'), { recursive: true });
  return root;
}

let shared: Promise<World> | undefined;

/** One world per test process (the snapshot takes a moment to write). */
export function world(): Promise<World> {
  shared ??= makeWorld();
  return shared;
}

async function makeWorld(): Promise<World> {
  const root = tempDir('spark-preflight-');
  const hfCache = join(root, 'hf');
  const modelDir = join(hfCache, 'hub', 'models--deepseek-ai--DeepSeek-V4.1-Flash');
  const snapshotDir = join(modelDir, 'snapshots', REVISION);
  makeSnapshot({ dir: snapshotDir });
  write(join(modelDir, 'refs', 'main'), REVISION);
  const sysfs = fakeSysfs(
    join(root, 'sys'),
    { rocep1s0f0: '192.168.200.1', roceP2p1s0f0: '192.168.200.11', rocep1s0f1: '10.0.22.1' },
    ['enp1s0f0np0', 'enP7s7', 'lo'],
  );
  const wrapper = write(
    join(root, 'aiden4x-launch.sh'),
    '#!/bin/sh\nexport SPARK_ENGRAM_ROWS="$(spark engram-ranges "$SPARK_ENGRAM_DIR" --rank "$NODE_RANK" --world 4)"\nexec "$@"\n',
  );
  const packDir = join(root, 'engram');
  mkdirSync(join(root, 'vllm-cache'), { recursive: true });
  const servingPort = await freePort();
  const distPort = await freePort();

  const writeCluster: World['writeCluster'] = (opts = {}) => {
    const n = opts.nodes ?? 4;
    const nccl = { ...FABRIC, ...(opts.nccl ?? {}) };
    const lines = [
      `name = "${opts.name ?? 'test-cluster'}"`,
      `hf_cache = "${hfCache}"`,
      `dist_port = ${opts.distPort ?? distPort}`,
      opts.extra ?? '',
      ...Array.from(
        { length: n },
        (_, i) => `\n[[nodes]]\nhost = "spark${i + 1}"\nfabric_addr = "192.168.200.${i + 1}"`,
      ),
      '\n[nccl]',
      ...Object.entries(nccl).map(([k, v]) => `${k} = "${v}"`),
    ];
    return write(join(root, `cluster-${opts.name ?? n}.toml`), lines.join('\n') + '\n');
  };
  const cluster = writeCluster();
  let count = 0;
  const w: World = {
    root,
    hfCache,
    snapshotDir,
    sysfs,
    cluster,
    writeCluster,
    recipe: (text, name) => write(join(root, 'recipes', name ?? `r${count++}`, 'recipe.toml'), text),
    dsv41Text: edit(
      edit(repoFile(DSV41), '/home/kilork/aiden4x-launch.sh', wrapper),
      'port = 30000',
      `port = ${servingPort}`,
    ),
    eugrText: edit(repoFile(EUGR), '~/.cache/vllm-ds4-eugr', join(root, 'vllm-cache')),
    packedText: edit(
      edit(repoFile(PACKED), /\/var\/lib\/spark\/engram/g, packDir),
      'port = 30000',
      `port = ${servingPort}`,
    ),
    packDir,
    servingPort,
    distPort,
    options: (recipe, extra = {}) => ({ recipe, cluster, nodeRank: 0, sysfs, ...extra }),
  };
  return w;
}

export async function preflight(options: PreflightOptions, env: NodeJS.ProcessEnv = {}): Promise<PreflightReport> {
  return runPreflight(options, quietIo(env));
}
