// Every command's --json on the demo's inputs (scripts/demo.ts: the synthetic snapshot of
// `npm run demo`, its sparse and dense copies of rank 0 of 2; the repository's recipes and
// clusters), compared whole with the documents committed in test/fixtures/golden/. A change to
// any command's JSON, a key renamed, added or dropped, a value that moved, fails here; when the
// change is meant, write the files again and commit them with it:
//   npm run build:ts && SPARK_UPDATE_GOLDEN=1 node --test dist/test/cli/golden-json.test.js
// Not covered: status, logs, fanout and launch without --dry-run (they need nodes; their JSON
// is checked against fake nodes in test/status, test/launch and test/bundle), and bundle (it
// builds the whole package).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { cli } from '../helpers/cli.js';
import { buildSysfs, typical } from '../helpers/sysfs.js';
import { tempDir } from '../helpers/tmp.js';

const root = packageRoot();
const goldenDir = join(root, 'test', 'fixtures', 'golden');
const update = process.env.SPARK_UPDATE_GOLDEN === '1';

/** A path into a JSON document; '*' matches any one key or index. */
type Path = string[];

/**
 * Makes two runs of one command on the same inputs give the same document. Three things differ
 * between runs and machines, and only these are changed:
 * - in every string, the run's temporary directory becomes <tmp> and the repository <repo>; a
 *   string that is this machine's host name becomes <host>;
 * - every value under a key named in VOLATILE_KEYS (wall times; how the filesystem under the
 *   temporary directory lets a copy be read and written: O_DIRECT or buffered), and under the
 *   paths a command names (what a benchmark measured, the machine it ran on, the bytes of a
 *   library as this compiler built it), becomes "<number>", "<string>", "<boolean>" or "<null>":
 *   its type stays checked, and an object or array keeps its keys and length.
 */
const VOLATILE_KEYS = new Set(['seconds', 'io']);

function normalize(value: unknown, ctx: { tmp: string; volatile: Path[] }, path: string[] = []): unknown {
  const masked = (p: string[]): boolean =>
    VOLATILE_KEYS.has(p[p.length - 1] ?? '') ||
    ctx.volatile.some((v) => v.length === p.length && v.every((s, i) => s === '*' || s === p[i]));
  const mask = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(mask);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, mask(x)]));
    return `<${v === null ? 'null' : typeof v}>`;
  };
  if (path.length > 0 && masked(path)) return mask(value);
  if (typeof value === 'string') {
    if (value === hostname()) return '<host>';
    return value.split(ctx.tmp).join('<tmp>').split(root).join('<repo>');
  }
  if (Array.isArray(value)) return value.map((v, i) => normalize(v, ctx, [...path, String(i)]));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, ctx, [...path, k])]));
  }
  return value;
}

interface Case {
  name: string;
  argv: string[];
  env?: NodeJS.ProcessEnv;
  volatile?: Path[];
}

const tmp = tempDir('spark-golden-');
const snap = join(tmp, 'snapshot');
const copy = join(tmp, 'engram-r0of2');
const packed = join(tmp, 'engram-r0of2-dense');
const sysfs = buildSysfs({ rocep1s0f0: { 1: typical('192.168.100.11') } }, join(tmp, 'sysfs'));
const AIDEN = 'recipes/dsv41-flash-4x-sglang-aiden16/recipe.toml';
const ENGINE = ['python3', '-m', 'sglang.launch_server', '--tp', '2'];
const MEASURED = [
  'duplicateFraction',
  'mergedFraction',
  'readsPerRow',
  'readsPerSec',
  'mappedFraction',
  'rowsPerSec',
  'mbPerSec',
  'p50Ms',
  'p99Ms',
  'batchesRun',
  'cpuUsPerRow',
  'devicePagesPerSec',
  'cachedAfter',
];
const LIBRARY: Path[] = [['bytes'], ['sha256'], ['elf', 'glibcMax']];

/** In the demo's order: each command runs on what the ones before it made. */
const CASES: Case[] = [
  { name: 'synth', argv: ['synth', snap, '--vocab', '4000', '--shards', '4', '--json'] },
  { name: 'inspect', argv: ['inspect', snap, '--json'] },
  { name: 'engram-ranges', argv: ['engram-ranges', snap, '--world', '4', '--all', '--json'] },
  { name: 'engram-ranges-heads', argv: ['engram-ranges', snap, '--world', '4', '--all', '--split', 'heads', '--json'] },
  { name: 'pack-sparse', argv: ['pack', snap, '--out', copy, '--rank', '0', '--world', '2', '--json'] },
  { name: 'pack-sparse-noop', argv: ['pack', snap, '--out', copy, '--rank', '0', '--world', '2', '--json'] },
  { name: 'verify-sparse', argv: ['verify', copy, '--source', snap, '--full', '--json'] },
  {
    name: 'pack-dense',
    argv: ['pack', snap, '--out', packed, '--rank', '0', '--world', '2', '--layout', 'dense', '--json'],
  },
  { name: 'verify-dense', argv: ['verify', packed, '--source', snap, '--full', '--json'] },
  { name: 'rows-snapshot', argv: ['rows', snap, '--layer', '1', '--ids', '0,17,17', '--json'] },
  { name: 'rows-dense', argv: ['rows', packed, '--layer', '1', '--ids', '0,17,17', '--json'] },
  {
    name: 'bench-gather',
    argv: ['bench', 'gather', snap, '--variants', 'snapshot', '--threads', '1', '--batch', '24'].concat([
      '--seconds',
      '1',
      '--no-fio',
      '--no-naive',
      '--json',
    ]),
    volatile: [
      ...MEASURED.map((k) => ['results', '*', k]),
      ['machine'],
      ['pageCache', 'limitBytes'],
      ['pageCache', 'from'],
    ],
  },
  { name: 'wrapper-emit-sh', argv: ['wrapper', '--emit-sh', '--snapshot', snap, '--world', '2', '--json'] },
  {
    name: 'wrapper-dry-run',
    argv: ['wrapper', '--dry-run', '--skip-gid', '--json', '--', ...ENGINE],
    env: { NODE_RANK: '0', SPARK_ENGRAM_DIR: copy },
  },
  { name: 'gid', argv: ['gid', '--sysfs', sysfs, '--json'] },
  { name: 'engine-lib-overlay', argv: ['engine-lib', '--stack', 'overlay', '--json'], volatile: LIBRARY },
  { name: 'engine-lib-mia', argv: ['engine-lib', '--stack', 'mia', '--json'], volatile: LIBRARY },
  {
    // The checks of this machine (mounts, fabric, ports, the engine libraries, free space) left out: they
    // answer for whatever machine runs the test.
    name: 'preflight',
    argv: ['preflight', AIDEN, '--snapshot', snap, '--skip', 'mounts,fabric,node,enginelib,pack.free-space', '--json'],
    env: { HOME: tmp },
  },
  {
    name: 'launch-dry-run',
    argv: ['launch', AIDEN, '--cluster', 'recipes/clusters/4node-switch.toml', '--dry-run', '--json'],
    env: { HOME: tmp },
  },
  { name: 'recipe-convert', argv: ['recipe', 'convert', AIDEN, '--json'] },
];

test(`every command's --json on the demo's inputs is the committed one (${CASES.length} runs)`, async () => {
  const changed: string[] = [];
  for (const c of CASES) {
    const r = await cli(c.argv, { PATH: process.env.PATH, ...c.env });
    assert.equal(r.stderr.includes('"error"'), false, `${c.name}: ${r.stderr}`);
    const ctx = { tmp, volatile: c.volatile ?? [] };
    const got = {
      argv: normalize(c.argv, { tmp, volatile: [] }),
      exit: r.code,
      json: normalize(JSON.parse(r.stdout) as unknown, ctx),
    };
    const file = join(goldenDir, `${c.name}.json`);
    if (update) {
      mkdirSync(goldenDir, { recursive: true });
      writeFileSync(file, JSON.stringify(got, null, 2) + '\n');
      continue;
    }
    assert.ok(existsSync(file), `${file} is missing (SPARK_UPDATE_GOLDEN=1 writes it)`);
    try {
      assert.deepStrictEqual(got, JSON.parse(readFileSync(file, 'utf8')) as unknown);
    } catch (err) {
      changed.push(`${c.name}: ${(err as Error).message}`);
    }
  }
  assert.deepEqual(changed, [], 'each listed command printed other JSON than test/fixtures/golden/ holds');
});

test('the normalization changes only the run-dependent parts', () => {
  const ctx = { tmp: '/tmp/x', volatile: [['results', '*', 'rowsPerSec']] };
  const doc = {
    out: '/tmp/x/copy',
    seconds: 0.25,
    io: { read: 'direct', write: 'buffered' },
    results: [{ rowsPerSec: 12.5, threads: 4 }],
    rows: 97968,
    lib: `${root}/build/Release/librow_store.so`,
  };
  assert.deepEqual(normalize(doc, ctx), {
    out: '<tmp>/copy',
    seconds: '<number>',
    io: { read: '<string>', write: '<string>' },
    results: [{ rowsPerSec: '<number>', threads: 4 }],
    rows: 97968,
    lib: '<repo>/build/Release/librow_store.so',
  });
});
