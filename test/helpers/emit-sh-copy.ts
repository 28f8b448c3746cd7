// The node-local copies the --emit-sh script and `spark wrapper` are compared on
// (test/wrapper/emit-sh-copy.test.ts, every rank in test/long/emit-sh-copy-ranks.test.ts):
// spark's sparse copies, the overlay tool's (rank and world inferred), packs, and broken
// manifests; the script runs under dash, the Node wrapper reads the same directories.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh, runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { Io } from '../../src/terminal/io.js';
import { tileLayers } from '../../src/engram/ranges.js';
import { recordingEngine } from './engine.js';
import { writePackDir } from './engram-files.js';
import { writeSyntheticCopy, writeTablesDir, type SyntheticCopySpec } from './sparse-copy.js';
import { tempDir } from './tmp.js';

export const DASH = '/usr/bin/dash';
export const TABLES = [
  { layer: 1, rows: 1000, dim: 256 },
  { layer: 14, rows: 1010, dim: 256 },
];
export const ROWS = TABLES.map(({ layer, rows }) => ({ layer, rows }));
export const root = tempDir('spark-emit-copy-');

export function io(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: '/', stderrIsTTY: false, color: false };
}

export interface Outcome {
  code: number;
  rows?: string;
}

export async function viaNode(env: NodeJS.ProcessEnv): Promise<Outcome & { message?: string }> {
  let exported: NodeJS.ProcessEnv | undefined;
  const exec: Exec = (_argv, e) => {
    exported = e;
    throw new Error('execed');
  };
  try {
    await runWrapper(['engine', '--nnodes', '4'], {}, io(env), exec);
  } catch (e) {
    if (!exported) return { code: (e as { exitCode?: number }).exitCode ?? 99, message: (e as Error).message };
  }
  return { code: 0, rows: exported!.SPARK_ENGRAM_ROWS ?? 'unset' };
}

export function viaSh(script: string, env: NodeJS.ProcessEnv): Outcome & { stderr: string } {
  const engine = recordingEngine();
  const r = spawnSync(DASH, [script, engine.path, '--nnodes', '4'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, ...env },
  });
  if (r.status !== 0) return { code: r.status ?? 99, stderr: r.stderr };
  const rows = /^rows=(.*)$/m.exec(readFileSync(engine.record, 'utf8'))![1]!;
  return { code: 0, rows, stderr: r.stderr };
}

export const snapshot = join(root, 'snap');
mkdirSync(snapshot);
writeTablesDir(snapshot, TABLES);

export function dir(name: string): string {
  const d = join(root, name);
  mkdirSync(d);
  return d;
}

export function sparse(name: string, spec: Omit<SyntheticCopySpec, 'tables'>): string {
  const d = dir(name);
  writeSyntheticCopy(d, { tables: TABLES, ...spec });
  return d;
}

/** A copy of rank r of `world` under `split`, in the layer order and JSON style given. */
export function share(
  name: string,
  rank: number,
  world: number,
  split: 'floor' | 'front',
  o: Partial<SyntheticCopySpec> = {},
): string {
  const ranges = tileLayers(ROWS, world, split)[rank]!.map(({ layer, start, end }) => ({ layer, start, end }));
  return sparse(name, { ranges: o.style === 'one-line' ? [...ranges].reverse() : ranges, ...o });
}

export function broken(name: string, text: string): string {
  const d = dir(name);
  writeTablesDir(d, TABLES);
  writeFileSync(join(d, 'engram-local.json'), text);
  return d;
}

export async function script(): Promise<string> {
  const out = join(root, 'spark-wrapper.sh');
  await runEmitSh({ snapshot, world: '4', out }, io({}));
  return out;
}

/** The copies, by name: every kind of copy, pack and broken manifest the comparison covers. */
export function buildCopies(): Record<string, string> {
  const copies: Record<string, string> = { snapshot };
  for (let r = 0; r < 4; r++) {
    copies[`spark-r${r}`] = share(`spark-r${r}`, r, 4, 'floor', { spark: { rank: r, world: 4, split: 'floor' } });
    copies[`overlay-r${r}`] = share(`overlay-r${r}`, r, 4, 'floor', { style: 'one-line' });
  }
  copies['front-r1of3'] = share('front-r1of3', 1, 3, 'front');
  copies['floor-r1of2'] = share('floor-r1of2', 1, 2, 'floor', { style: 'one-line' });
  copies['spark-r1of2'] = share('spark-r1of2', 1, 2, 'floor', { spark: { rank: 1, world: 2, split: 'floor' } });
  copies.custom = sparse('custom', {
    ranges: [
      { layer: 1, start: 0, end: 10 },
      { layer: 14, start: 0, end: 700 },
    ],
  });
  copies.extra = share('extra', 2, 4, 'floor', { extra: { rank: 0, world: 1, layers_note: { '1': [0, 1] } } });
  const pack = dir('pack-v1');
  writePackDir(pack, {
    rank: 2,
    world: 4,
    layout: 'dense',
    dim: 256,
    layers: [
      { layer: 1, rows: 1000, start: 500, end: 750 },
      { layer: 14, rows: 1010, start: 505, end: 757 },
    ],
  });
  copies['pack-v1'] = pack;
  const pack2 = dir('pack-v2');
  writePackDir(pack2, {
    rank: 3,
    world: 4,
    layout: 'page',
    dim: 256,
    layers: [
      { layer: 1, rows: 1000, start: 750, end: 1000 },
      { layer: 14, rows: 1010, start: 757, end: 1010 },
    ],
  });
  renameSync(join(pack2, 'engram-local.json'), join(pack2, 'spark-pack.json'));
  copies['pack-v2'] = pack2;
  copies.truncated = broken('truncated', '{"layers": {"1": [0, 250], "14": [0, 252]');
  copies.strings = broken('strings', '{"layers": {"1": ["0", "250"], "14": [0, 252]}}');
  copies.backwards = broken('backwards', '{"layers": {"1": [250, 0]}}');
  copies.scalar = broken('scalar', '{"layers": {"1": 250, "14": [0, 252]}}');
  copies.triple = broken('triple', '{"layers": {"1": [0, 250, 9], "14": [0, 252]}}');
  copies.empty = broken('empty', '{"layers": {}}');
  copies.list = broken('list', '{"layers": [1, 2]}');
  copies.nolayers = broken('nolayers', '{"source": "x"}');
  copies.badrank = share('badrank', 1, 4, 'floor', { spark: { rank: 5, world: 4, split: 'floor' } });

  return copies;
}

/**
 * Compares the sh script and the Node wrapper on each copy at the ranks `ranksOf` gives for
 * the copy's index, with no SPARK_ENGRAM_ROWS, a wrong one, and the one Node exported (in the
 * other grammar); the number of cases compared.
 */
export async function compare(
  sh: string,
  copies: Record<string, string>,
  ranksOf: (index: number) => string[],
): Promise<number> {
  let compared = 0;
  for (const [index, [name, path]] of Object.entries(copies).entries()) {
    for (const rank of ranksOf(index)) {
      const node = await viaNode({ SPARK_ENGRAM_DIR: path, NODE_RANK: rank });
      const presets = [undefined, '1:0:1,14:0:1'];
      if (node.code === 0) presets.push(node.rows!.replace(/:(\d+):(\d+)/g, ':$1-$2'));
      for (const preset of presets) {
        const env = { SPARK_ENGRAM_DIR: path, NODE_RANK: rank, ...(preset ? { SPARK_ENGRAM_ROWS: preset } : {}) };
        const n = preset ? await viaNode(env) : node;
        const s = viaSh(sh, env);
        assert.deepEqual(
          { code: s.code, rows: s.rows },
          { code: n.code, rows: n.rows },
          `${name} rank ${rank} preset ${preset}: ${s.stderr} / ${n.message}`,
        );
        compared++;
      }
    }
  }
  return compared;
}
