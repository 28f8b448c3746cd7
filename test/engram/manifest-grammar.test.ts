// One table of engram-local.json texts (test/fixtures/manifest-grammar.json), run against every
// reader of a node-local copy: `spark wrapper` (Node), the --emit-sh script (under sh, dash and
// bash) and the Python reader. Each must accept exactly the cases marked ok, export the same
// ranges, and refuse the others as bad input (exit 2).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh, runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { Io } from '../../src/terminal/io.js';
import { packageRoot } from '../../src/addon/index.js';
import { MAX_MANIFEST_BYTES } from '../../src/engram/manifest-lexicon.js';
import { recordingEngine } from '../helpers/engine.js';
import { writeSparseShard } from '../helpers/engram-files.js';
import { needs } from '../helpers/external-tool.js';
import { tempDir } from '../helpers/tmp.js';
import { distinctShells } from '../helpers/shells.js';

interface Case {
  name: string;
  ok: boolean;
  text: string;
}

const FIXTURE = join(packageRoot(), 'test', 'fixtures', 'manifest-grammar.json');
const CASES = (JSON.parse(readFileSync(FIXTURE, 'utf8')) as { cases: Case[] }).cases;
const ROWS = '1:250:500,14:252:505';
const TABLES = [
  { layer: 1, rows: 1000, dim: 256 },
  { layer: 14, rows: 1010, dim: 256 },
];
// dash and bash, and /bin/sh when it is neither (helpers/shells.ts).
const SHELLS = distinctShells(['/usr/bin/dash', '/bin/bash', '/bin/sh']);

function io(): Io {
  return { stdout: () => {}, stderr: () => {}, env: {}, cwd: '/', stderrIsTTY: false, color: false };
}

/** A sparse copy of rank 1 of 4 with every row of its ranges written (the Python reader checks for holes). */
function copyDir(): string {
  const dir = tempDir('spark-grammar-');
  const shard = 'model-00001-of-00001.safetensors';
  const all = (lo: number, hi: number) => Array.from({ length: hi - lo }, (_, i) => lo + i);
  writeSparseShard(
    join(dir, shard),
    TABLES,
    new Map([
      [1, all(250, 500)],
      [14, all(252, 505)],
    ]),
  );
  const weightMap = Object.fromEntries(
    TABLES.flatMap((t) => ['weight', 'scale'].map((p) => [`layers.${t.layer}.engram.embed.${p}`, shard])),
  );
  writeFileSync(
    join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: 0 }, weight_map: weightMap }),
  );
  return dir;
}

async function viaNode(dir: string): Promise<{ code: number; rows?: string; message?: string }> {
  let exported: NodeJS.ProcessEnv | undefined;
  const exec: Exec = (_argv, e) => {
    exported = e;
    throw new Error('execed');
  };
  const env = { SPARK_ENGRAM_DIR: dir, NODE_RANK: '1' };
  try {
    await runWrapper(['engine', '--nnodes', '4'], {}, { ...io(), env }, exec);
  } catch (e) {
    if (!exported) return { code: (e as { exitCode?: number }).exitCode ?? 99, message: (e as Error).message };
  }
  return { code: 0, rows: exported!.SPARK_ENGRAM_ROWS! };
}

function viaSh(shell: string, script: string, dir: string): { code: number; rows?: string; message: string } {
  const engine = recordingEngine();
  const r = spawnSync(shell, [script, engine.path, '--nnodes', '4'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, SPARK_ENGRAM_DIR: dir, NODE_RANK: '1' },
  });
  if (r.status !== 0) return { code: r.status ?? 99, message: r.stderr };
  return { code: 0, rows: /^rows=(.*)$/m.exec(readFileSync(engine.record, 'utf8'))![1]!, message: r.stderr };
}

/**
 * The Python reader's exit code for each text, written in turn as DIR's manifest: its main() in
 * one process (one numpy import for the whole table).
 */
function viaPython(dir: string, texts: string[]): number[] {
  const driver = `
import contextlib, io, json, sys
sys.path.insert(0, ${JSON.stringify(join(packageRoot(), 'python'))})
import spark_engram_reader as r
codes = []
for text in json.load(sys.stdin):
    with open(${JSON.stringify(join(dir, 'engram-local.json'))}, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        codes.append(r.main([${JSON.stringify(dir)}, "--layer", "1", "--ids", "250,499"]))
print(json.dumps(codes))
`;
  const r = spawnSync('python3', ['-c', driver], {
    encoding: 'utf8',
    input: JSON.stringify(texts),
    maxBuffer: 1 << 26,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as number[];
}

test('every reader of a copy gives the same verdict on each case of the manifest grammar table', async (t) => {
  if (!needs(t, 'dash', 'numpy')) return;
  const dir = copyDir();
  const script = join(tempDir(), 'spark-wrapper.sh');
  // Made from the copy's own tables (1000 and 1010 rows), as a node would.
  writeFileSync(join(dir, 'engram-local.json'), '{"layers": {"1": [250, 500], "14": [252, 505]}}\n');
  await runEmitSh({ snapshot: dir, world: '4', out: script }, io());
  const big = '{"layers": {"1": [250, 500], "14": [252, 505]}, "pad": "' + 'x'.repeat(MAX_MANIFEST_BYTES) + '"}\n';
  const cases = [...CASES, { name: `more than ${MAX_MANIFEST_BYTES} bytes`, ok: false, text: big }];
  assert.ok(CASES.filter((c) => c.ok).length >= 5 && CASES.filter((c) => !c.ok).length >= 40);
  const wrong: string[] = [];
  const check = (who: string, c: Case, got: { code: number; rows?: string; message?: string }) => {
    const ok = c.ok ? got.code === 0 && (got.rows === undefined || got.rows === ROWS) : got.code === 2;
    if (!ok) wrong.push(`${who}, ${c.name}: exit ${got.code} ${got.rows ?? ''} ${got.message?.slice(0, 300) ?? ''}`);
  };
  for (const c of cases) {
    writeFileSync(join(dir, 'engram-local.json'), c.text);
    check('Node', c, await viaNode(dir));
    for (const shell of SHELLS) {
      const sh = viaSh(shell, script, dir);
      check(shell, c, sh);
      if (
        !c.ok &&
        sh.code === 2 &&
        !/^spark wrapper: .*engram-local\.json: .*; re-make the copy \(spark pack\)\n$/.test(sh.message)
      ) {
        wrong.push(`${shell}, ${c.name}: not one line naming the file: ${sh.message}`);
      }
    }
  }
  viaPython(
    dir,
    cases.map((c) => c.text),
  ).forEach((code, i) => check('Python', cases[i]!, { code }));
  assert.deepEqual(wrong, []);
});

test('the sh reader refuses 2,000 and 18,000 bogus layer keys at the first one, as Node does, exporting none', async (t) => {
  if (!needs(t, 'dash')) return;
  const dir = copyDir();
  const script = join(tempDir(), 'spark-wrapper.sh');
  writeFileSync(join(dir, 'engram-local.json'), '{"layers": {"1": [250, 500], "14": [252, 505]}}\n');
  await runEmitSh({ snapshot: dir, world: '4', out: script }, io());
  for (const n of [2000, 18000]) {
    const bogus = Array.from({ length: n }, (_, i) => `"${i + 100}": [0, 1]`).join(',\n  ');
    writeFileSync(
      join(dir, 'engram-local.json'),
      `{"layers": {\n  "1": [250, 500],\n  "14": [252, 505],\n  ${bogus}\n}}\n`,
    );
    const sh = viaSh('/usr/bin/dash', script, dir);
    assert.equal(sh.code, 2, sh.message);
    assert.match(
      sh.message,
      /engram-local\.json: layers names layer 100, but the snapshot this script was made from has no Engram table for it \(its tables: 1:1000 14:1010\)/,
    );
    const node = await viaNode(dir);
    assert.equal(node.code, 2);
    assert.match(node.message!, /engram-local\.json: layers has more than 1024 keys/);
  }
});

test('a manifest of almost 16 MiB, its bulk one string: read, and a digit escaped at the end of a 16 MiB key found', async () => {
  const dir = copyDir();
  const manifest = join(dir, 'engram-local.json');
  const layers = '"layers": {"1": [250, 500], "14": [252, 505]}';
  // Plain characters and escapes: a pattern with a repeated group recursed once per character.
  const long = 'x'.repeat(MAX_MANIFEST_BYTES - 1000) + '\\n'.repeat(100);
  writeFileSync(manifest, `{${layers}, "pad": "${long}"}\n`);
  assert.deepEqual(await viaNode(dir), { code: 0, rows: ROWS });
  writeFileSync(manifest, `{${layers}, "${long}\\u0031": 1}\n`);
  const bad = await viaNode(dir);
  assert.equal(bad.code, 2);
  assert.ok(bad.message!.length < 500, `${bad.message!.length} characters: ${bad.message!.slice(0, 300)}`);
  assert.match(bad.message!, /engram-local\.json has the key "x{56}…", a digit written with an escape; /);
});
