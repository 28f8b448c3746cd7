// The manifest grammar table (test/fixtures/manifest-grammar.json) and the readers of a
// node-local copy it is run against: `spark wrapper` (Node), the --emit-sh script under a
// shell, and the Python reader.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runEmitSh, runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { Io } from '../../src/terminal/io.js';
import { packageRoot } from '../../src/addon/index.js';
import { MAX_MANIFEST_BYTES } from '../../src/engram/manifest-lexicon.js';
import { recordingEngine } from './engine.js';
import { writeSparseShard } from './engram-files.js';
import { tempDir } from './tmp.js';
import { distinctShells } from './shells.js';
import { python3 } from './python3.js';

export interface Case {
  name: string;
  ok: boolean;
  text: string;
}

const FIXTURE = join(packageRoot(), 'test', 'fixtures', 'manifest-grammar.json');
export const CASES = (JSON.parse(readFileSync(FIXTURE, 'utf8')) as { cases: Case[] }).cases;
export const ROWS = '1:250:500,14:252:505';
const TABLES = [
  { layer: 1, rows: 1000, dim: 256 },
  { layer: 14, rows: 1010, dim: 256 },
];
// dash and bash, and /bin/sh when it is neither (helpers/shells.ts).
export const SHELLS = distinctShells(['/usr/bin/dash', '/bin/bash', '/bin/sh']);

export function io(): Io {
  return { stdout: () => {}, stderr: () => {}, env: {}, cwd: '/', stderrIsTTY: false, color: false };
}

/** A sparse copy of rank 1 of 4 with every row of its ranges written (the Python reader checks for holes). */
export function copyDir(): string {
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

export async function viaNode(dir: string): Promise<{ code: number; rows?: string; message?: string }> {
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

export function viaSh(shell: string, script: string, dir: string): { code: number; rows?: string; message: string } {
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
export function viaPython(dir: string, texts: string[]): number[] {
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
  const r = spawnSync(python3(), ['-c', driver], {
    encoding: 'utf8',
    input: JSON.stringify(texts),
    maxBuffer: 1 << 26,
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout) as number[];
}

/**
 * Each case of the table, and one more than MAX_MANIFEST_BYTES, written in turn as the manifest
 * of a copy and read by `spark wrapper` (Node) and the Python reader when `others` is true, and
 * by the --emit-sh script under each of `shells`: what each got wrong ([] when none).
 */
export async function grammarVerdicts(shells: readonly string[], others: boolean): Promise<string[]> {
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
    if (others) check('Node', c, await viaNode(dir));
    for (const shell of shells) {
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
  if (others)
    viaPython(
      dir,
      cases.map((c) => c.text),
    ).forEach((code, i) => check('Python', cases[i]!, { code }));
  return wrong;
}
