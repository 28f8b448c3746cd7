// The worlds the rule cases are built in: a failing fixture for every rule starts from one of
// these (test/preflight/preflight-rules.test.ts runs them; the cases are in rule-cases.ts).

import { copyFileSync, existsSync, mkdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { PreflightOptions } from '../../src/preflight/index.js';
import { makeSnapshot } from './synth.js';
import { edit, MIA, repoFile, REVISION, type World } from './preflight.js';

export interface RuleCase {
  rule: string;
  pass(w: World): Promise<PreflightOptions> | PreflightOptions;
  fail(w: World): Promise<PreflightOptions> | PreflightOptions;
  /** The failing finding's message. */
  expect: RegExp;
  /** The failing finding's where (default: any). */
  where?: RegExp;
  /** Severity of the failing finding (default: the rule's). */
  severity?: 'error' | 'warn';
  env?: NodeJS.ProcessEnv;
  /** A fixture mounts a file system (root only): what it mounts, for the skip line. */
  mounts?: string;
}

export const moveArgsBelowMounts = (text: string): string => {
  const start = text.indexOf('args = [');
  const end = text.indexOf(']\n', start) + 2;
  const block = text.slice(start, end);
  return (text.slice(0, start) + text.slice(end)).replace('read_only = true\n', `read_only = true\n${block}`);
};

/** One row of the layer-1 table short of nothing: the full range of both synthetic tables. */
export function fullRange(w: World): string {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_num_embeddings: number[] };
  };
  const [a, b] = cfg.text_config.engram_num_embeddings;
  return `1:0:${a},14:0:${b}`;
}

/** A copy of the world's snapshot with its first shard one byte short. */
export function truncatedSnapshot(w: World): string {
  const dir = join(w.root, 'snap-truncated');
  if (!existsSync(dir)) {
    makeSnapshot({ dir });
    const shard = join(dir, 'model-00001-of-00003.safetensors');
    truncateSync(shard, statSync(shard).size - 1);
  }
  return dir;
}

/** A snapshot whose config names Engram layers 1 and 14 but which holds only layer 1's table. */
export function noEngramSnapshot(w: World): string {
  const dir = join(w.root, 'snap-one-layer');
  if (!existsSync(dir)) {
    makeSnapshot({ dir, layers: [1] });
    const path = join(dir, 'config.json');
    const cfg = JSON.parse(readFileSync(path, 'utf8'));
    const full = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8'));
    cfg.text_config = full.text_config;
    writeFileSync(path, JSON.stringify(cfg));
  }
  return dir;
}

/** The world's Engram tables: layer -> rows, from its config.json. */
export function tables(w: World): [number, number][] {
  const cfg = JSON.parse(readFileSync(join(w.snapshotDir, 'config.json'), 'utf8')) as {
    text_config: { engram_layer_ids: number[]; engram_num_embeddings: number[] };
  };
  return cfg.text_config.engram_layer_ids.map((l, i) => [l, cfg.text_config.engram_num_embeddings[i]!]);
}

/** A well-formed manifest of rank `rank` of 4 (floor split) for the world's tables; `rows` overrides layer 1's count. */
export const manifest = (w: World, rank: number, rows?: number) => {
  const layers = tables(w).map(([layer, n0]) => {
    const n = layer === 1 && rows !== undefined ? rows : n0;
    const [start, end] = [Math.floor((n * rank) / 4), Math.floor((n * (rank + 1)) / 4)];
    return {
      layer,
      rows: n,
      start,
      end,
      file: `engram-l${layer}-r${rank}of4.bin`,
      rowBytes: 264,
      stride: 264,
      dataOffset: 4096,
      weightDtype: 'F8_E4M3',
      scaleDtype: 'F8_E8M0',
      layout: 'dense',
      checksum: {
        algorithm: 'crc32',
        chunkRows: 1024,
        values: Array.from({ length: Math.ceil((end - start) / 1024) }, () => '0badf00d'),
      },
    };
  });
  return JSON.stringify({
    format: 'spark-engram-packed',
    version: 1,
    rank,
    world: 4,
    split: 'floor',
    source: { snapshot: '/x', revision: REVISION, files: [] },
    layers,
  });
};

export const heldPorts: { close(): Promise<void> }[] = [];

export const miaDirs = new Map<string, Promise<void>>();

/** The packed recipe with `FROM` (or `text`) mounted over the overlay's library, from `name` in the world. */
export function libRecipe(w: World, name: string, from?: string, text?: string): string {
  const dir = join(w.root, name);
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'libengram_rows.so');
  if (from !== undefined) copyFileSync(from, file);
  else writeFileSync(file, text ?? '');
  const mount = `[[extra_mounts]]\nhost = "${file}"\ncontainer = "/opt/dsv41-spark/overlay/libengram_rows.so"\nread_only = true\n\n[env]`;
  return w.recipe(edit(w.packedText, /^\[env\]$/m, mount), name);
}

/** The Mia recipe with its pack mount at `name` in the world, filled once by `fill`. */
export async function miaRecipe(w: World, name: string, fill: (dir: string) => Promise<unknown>): Promise<string> {
  const dir = join(w.root, name);
  if (!miaDirs.has(name))
    miaDirs.set(
      name,
      fill(dir).then(() => undefined),
    );
  await miaDirs.get(name);
  return w.recipe(edit(repoFile(MIA), 'host = "~/dsv41-engram"', `host = "${dir}"`), name);
}
