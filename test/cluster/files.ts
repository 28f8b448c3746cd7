// What the scenarios give spark: a model cache on the bed's shared files (a synthetic
// DSV4.1-shaped snapshot, refs/main pointing at it), recipes for the fake engine, cluster files
// naming the bed's nodes; and spark itself, run as a real process.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binPath } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import type { Bed } from './bed.js';
import { ENGINE, IMAGE } from './image.js';

export const MODEL = 'bed/tiny-engram';
export const REV = '0123456789abcdef0123456789abcdef01234567';
export const PORT = 30000;

export interface Cache {
  hfCache: string;
  /** The snapshot on this machine, and inside the containers. */
  snapshot: string;
  containerSnapshot: string;
}

export function writeCache(bed: Bed): Cache {
  const hfCache = join(bed.shared, 'hf');
  const base = join(hfCache, 'hub', `models--${MODEL.replace('/', '--')}`);
  const snapshot = join(base, 'snapshots', REV);
  mkdirSync(join(base, 'refs'), { recursive: true });
  writeFileSync(join(base, 'refs', 'main'), REV + '\n');
  makeSnapshot({ dir: snapshot });
  return {
    hfCache,
    snapshot,
    containerSnapshot: `/root/.cache/huggingface/hub/models--${MODEL.replace('/', '--')}/snapshots/${REV}`,
  };
}

export interface RecipeOptions {
  nodes: number;
  entrypoint?: string[];
  env?: Record<string, string>;
  mounts?: { host: string; container: string; readOnly: boolean }[];
  /** Default 1g (preflight wants one; the launch then passes --shm-size, not --ipc host). */
  shmSize?: string;
}

export function writeBedRecipe(bed: Bed, name: string, o: RecipeOptions): string {
  const lines = [
    'engine = "sglang"',
    `name = ${JSON.stringify(name)}`,
    `docker_image = ${JSON.stringify(IMAGE)}`,
    `model = ${JSON.stringify(MODEL)}`,
    `port = ${PORT}`,
    `required_nodes = ${o.nodes}`,
    // The synthetic model's 64 heads do not divide by 3: three nodes run as pipeline stages.
    `tensor_parallel_size = ${o.nodes % 2 === 0 ? o.nodes : 1}`,
    `pipeline_parallel_size = ${o.nodes % 2 === 0 ? 1 : o.nodes}`,
    `shm_size = ${JSON.stringify(o.shmSize ?? '1g')}`,
    `entrypoint = ${JSON.stringify(o.entrypoint ?? [ENGINE])}`,
    'args = ["--served-model-name", "bed", "--json-arg", \'{"a": "b c"}\']',
  ];
  for (const m of o.mounts ?? []) {
    lines.push(
      '',
      '[[extra_mounts]]',
      `host = ${JSON.stringify(m.host)}`,
      `container = ${JSON.stringify(m.container)}`,
      `read_only = ${m.readOnly}`,
    );
  }
  lines.push('', '[env]');
  for (const [k, v] of Object.entries(o.env ?? {})) lines.push(`${k} = ${JSON.stringify(v)}`);
  const file = join(bed.dir, `${name}.toml`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

export interface ClusterOptions {
  name: string;
  hfCache: string;
  /** Ranks of the bed to use, in order (default: all); `down` adds a node nobody answers at. */
  ranks?: number[];
  down?: boolean;
  nodeEnv?: Record<number, Record<string, string>>;
}

export function writeBedCluster(bed: Bed, o: ClusterOptions): string {
  const addrs = (o.ranks ?? bed.nodes.map((n) => n.rank)).map((r) => bed.nodes[r]!.addr);
  if (o.down) addrs.push(bed.unusedAddr);
  const lines = [`name = ${JSON.stringify(o.name)}`, `hf_cache = ${JSON.stringify(o.hfCache)}`];
  addrs.forEach((addr, rank) => {
    lines.push('', '[[nodes]]', `host = ${JSON.stringify(addr)}`, `fabric_addr = "${addr}/24"`);
    const env = o.nodeEnv?.[rank];
    if (env) {
      lines.push('[nodes.env]');
      for (const [k, v] of Object.entries(env)) lines.push(`${k} = ${JSON.stringify(v)}`);
    }
  });
  const file = join(bed.dir, `${o.name}.toml`);
  writeFileSync(file, lines.join('\n') + '\n');
  return file;
}

export interface SparkRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/**
 * spark as a user runs it, a real process; `during` may act on it while it runs (Ctrl-C).
 * Killed after `timeoutMs` so that no scenario can hang the run.
 */
export function spark(
  bed: Bed,
  argv: string[],
  options: {
    timeoutMs?: number;
    env?: NodeJS.ProcessEnv;
    during?: (child: { stderr: () => string; kill: (s: NodeJS.Signals) => void }) => void;
  } = {},
): Promise<SparkRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [binPath, ...argv], {
      env: options.env ?? bed.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 90_000);
    options.during?.({ stderr: () => stderr, kill: (s) => child.kill(s) });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr });
    });
  });
}

/** Resolves once `text` appears on the run's stderr (polled, bounded). */
export async function stderrShows(child: { stderr: () => string }, text: string | RegExp, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  const seen = () => (typeof text === 'string' ? child.stderr().includes(text) : text.test(child.stderr()));
  while (!seen()) {
    if (Date.now() > until) throw new Error(`spark never printed ${String(text)}; stderr so far:\n${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
