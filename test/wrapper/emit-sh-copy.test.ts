// The --emit-sh script and `spark wrapper` agree on node-local copies in SPARK_ENGRAM_DIR: the
// same exported SPARK_ENGRAM_ROWS (the manifest's), the same refusals with the same exit codes,
// for spark's sparse copies, the overlay tool's (rank and world inferred), packs, and broken
// manifests. The script runs under dash; the Node wrapper reads the same directories.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh, runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { Io } from '../../src/terminal/io.js';
import { tileLayers } from '../../src/engram/ranges.js';
import { recordingEngine } from '../helpers/engine.js';
import { writePackDir } from '../helpers/engram-files.js';
import { writeSyntheticCopy, writeTablesDir, type SyntheticCopySpec } from '../helpers/sparse-copy.js';
import { tempDir } from '../helpers/tmp.js';
import { needs } from '../helpers/external-tool.js';

const DASH = '/usr/bin/dash';
const TABLES = [
  { layer: 1, rows: 1000, dim: 256 },
  { layer: 14, rows: 1010, dim: 256 },
];
const ROWS = TABLES.map(({ layer, rows }) => ({ layer, rows }));
const root = tempDir('spark-emit-copy-');

function io(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: '/', stderrIsTTY: false, color: false };
}

interface Outcome {
  code: number;
  rows?: string;
}

async function viaNode(env: NodeJS.ProcessEnv): Promise<Outcome & { message?: string }> {
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

function viaSh(script: string, env: NodeJS.ProcessEnv): Outcome & { stderr: string } {
  const engine = recordingEngine();
  const r = spawnSync(DASH, [script, engine.path, '--nnodes', '4'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, ...env },
  });
  if (r.status !== 0) return { code: r.status ?? 99, stderr: r.stderr };
  const rows = /^rows=(.*)$/m.exec(readFileSync(engine.record, 'utf8'))![1]!;
  return { code: 0, rows, stderr: r.stderr };
}

const snapshot = join(root, 'snap');
mkdirSync(snapshot);
writeTablesDir(snapshot, TABLES);

function dir(name: string): string {
  const d = join(root, name);
  mkdirSync(d);
  return d;
}

function sparse(name: string, spec: Omit<SyntheticCopySpec, 'tables'>): string {
  const d = dir(name);
  writeSyntheticCopy(d, { tables: TABLES, ...spec });
  return d;
}

/** A copy of rank r of `world` under `split`, in the layer order and JSON style given. */
function share(
  name: string,
  rank: number,
  world: number,
  split: 'floor' | 'front',
  o: Partial<SyntheticCopySpec> = {},
): string {
  const ranges = tileLayers(ROWS, world, split)[rank]!.map(({ layer, start, end }) => ({ layer, start, end }));
  return sparse(name, { ranges: o.style === 'one-line' ? [...ranges].reverse() : ranges, ...o });
}

function broken(name: string, text: string): string {
  const d = dir(name);
  writeTablesDir(d, TABLES);
  writeFileSync(join(d, 'engram-local.json'), text);
  return d;
}

async function script(): Promise<string> {
  const out = join(root, 'spark-wrapper.sh');
  await runEmitSh({ snapshot, world: '4', out }, io({}));
  return out;
}

test("sh and Node agree on every copy, rank and preset: the manifest's ranges, or the same refusal", async (t) => {
  if (!needs(t, 'dash')) return;
  const sh = await script();
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

  let compared = 0;
  for (const [name, path] of Object.entries(copies)) {
    for (const rank of ['0', '1', '2', '3']) {
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
  assert.ok(compared > 150, `${compared} cases`);
  // The exported values are the manifests' (not the baked ones) and the refusals say why.
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: copies.custom!, NODE_RANK: '2' }).rows, '1:0:10,14:0:700');
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: copies['overlay-r3']!, NODE_RANK: '3' }).rows, '1:750:1000,14:757:1010');
  const wrong = viaSh(sh, { SPARK_ENGRAM_DIR: copies['overlay-r1']!, NODE_RANK: '2' });
  assert.equal(
    wrong.stderr,
    `spark wrapper: ${copies['overlay-r1']} holds the rows of rank 1 of 4 (inferred from the ranges in engram-local.json), not rank 2 of 4's: mount this node's copy, or make it with spark pack --rank 2 --world 4\n`,
  );
  const world = viaSh(sh, { SPARK_ENGRAM_DIR: copies['spark-r1of2']!, NODE_RANK: '1' });
  assert.match(world.stderr, /holds the rows of rank 1 of 2 \(engram-local\.json\), not rank 1 of 4's/);
  const preset = viaSh(sh, {
    SPARK_ENGRAM_DIR: copies['spark-r1']!,
    NODE_RANK: '1',
    SPARK_ENGRAM_ROWS: '1:250:500,14:252:504',
  });
  assert.match(
    preset.stderr,
    /SPARK_ENGRAM_ROWS='1:250:500,14:252:504' disagrees with .*\/spark-r1\/engram-local\.json, which gives 1:250:500,14:252:505/,
  );
  const ok = viaSh(sh, {
    SPARK_ENGRAM_DIR: copies['spark-r1']!,
    NODE_RANK: '1',
    SPARK_ENGRAM_ROWS: '1:250-500,14:252-505',
  });
  assert.equal(ok.rows, '1:250:500,14:252:505');
  assert.match(
    ok.stderr,
    /SPARK_ENGRAM_ROWS=1:250:500,14:252:505 checked and rewritten in the overlay's grammar \(from the manifest of the sparse copy .*spark-r1, rank 1 of 4 \(engram-local\.json\)\)/,
  );
});

test('the sh reader: escaped quotes and brackets in strings, CRLF lines, and what it refuses on its own', async (t) => {
  if (!needs(t, 'dash')) return;
  const sh = await script();
  const d = dir('tricky');
  writeTablesDir(d, TABLES);
  const text =
    '{"note": "a \\"layers\\": {\\"1\\": [0, 1]} \\\\", "spark\\"": {"rank": 3},\r\n "layers": {"14": [252, 505],\r\n "1": [250, 500]}, "zz": [{"layers": [1]}]}\r\n';
  writeFileSync(join(d, 'engram-local.json'), text);
  assert.deepEqual(JSON.parse(text).layers, { '14': [252, 505], '1': [250, 500] });
  assert.deepEqual(
    { ...viaSh(sh, { SPARK_ENGRAM_DIR: d, NODE_RANK: '1' }), stderr: '' },
    { code: 0, rows: '1:250:500,14:252:505', stderr: '' },
  );
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: d, NODE_RANK: '1' })).rows, '1:250:500,14:252:505');
  // A string that does not end on its line cannot be JSON: refused, not guessed.
  const open = broken('open-string', '{"layers": {"1": [250, 500]}, "note": "a\n b"}');
  const r = viaSh(sh, { SPARK_ENGRAM_DIR: open, NODE_RANK: '1' });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /engram-local\.json: a string does not end on its line; re-make the copy/);
  // A layer named twice: the overlay would keep the last silently; sh and Node refuse.
  const twice = broken('twice', '{"layers": {"1": [250, 500], "1": [0, 250]}}');
  assert.match(
    viaSh(sh, { SPARK_ENGRAM_DIR: twice, NODE_RANK: '1' }).stderr,
    /engram-local\.json: an object has the key "1" twice/,
  );
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: twice, NODE_RANK: '1' })).code, 2);
  // The manifest must be a regular file; a missing SPARK_ENGRAM_DIR is refused like the Node wrapper does.
  const notFile = dir('not-a-file');
  mkdirSync(join(notFile, 'engram-local.json'));
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: notFile, NODE_RANK: '1' }).code, 2);
  assert.equal(viaSh(sh, { SPARK_ENGRAM_DIR: join(root, 'nowhere'), NODE_RANK: '1' }).code, 2);
  assert.equal((await viaNode({ SPARK_ENGRAM_DIR: join(root, 'nowhere'), NODE_RANK: '1' })).code, 2);
  rmSync(join(notFile, 'engram-local.json'), { recursive: true });
});
