// The two wrappers' decisions side by side: `spark wrapper` (Node) and the --emit-sh script run
// under a shell, each as an exit code and the values it exports to the engine.
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { runWrapper, type Exec } from '../../src/commands/wrapper.js';
import type { LayerLoader } from '../../src/wrapper/plan.js';
import type { Io } from '../../src/terminal/io.js';
import { recordingEngine } from './engine.js';

export interface Outcome {
  code: number;
  rows?: string;
  gid?: string;
}

export function quietIo(env: NodeJS.ProcessEnv): Io {
  return { stdout: () => {}, stderr: () => {}, env, cwd: '/', stderrIsTTY: false, color: false };
}

/** The Node wrapper's decision for a snapshot at /snap, as exit code and exported values. */
export async function viaNode(argv: string[], env: NodeJS.ProcessEnv, load: LayerLoader): Promise<Outcome> {
  let exported: NodeJS.ProcessEnv | undefined;
  const exec: Exec = (_argv, e) => {
    exported = e;
    throw new Error('execed');
  };
  try {
    await runWrapper(['engine', ...argv], {}, quietIo({ SPARK_ENGRAM_DIR: '/snap', ...env }), exec, load);
  } catch (e) {
    if (!exported) return { code: (e as { exitCode?: number }).exitCode ?? 99 };
  }
  return { code: 0, rows: exported!.SPARK_ENGRAM_ROWS ?? 'unset', gid: exported!.B12X_ROCE_GID_INDEX ?? 'unset' };
}

/** Only what both wrappers decide (the sh side also carries its stderr and pid). */
export const outcome = (o: Outcome): Outcome =>
  o.code === 0 ? { code: 0, rows: o.rows!, gid: o.gid! } : { code: o.code };

/** The emitted script under `shell`, with a recording engine. */
export function viaSh(
  shell: string,
  script: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
): Outcome & { stderr: string; pid?: number } {
  const engine = recordingEngine();
  const r = spawnSync(shell, [script, engine.path, ...argv], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH, RECORD: engine.record, ...env },
    input: '',
  });
  if (r.status !== 0) return { code: r.status ?? 99, stderr: r.stderr };
  const rec = readFileSync(engine.record, 'utf8');
  const field = (k: string) => new RegExp(`^${k}=(.*)$`, 'm').exec(rec)![1]!;
  rmSync(engine.record);
  return { code: 0, rows: field('rows'), gid: field('gid'), stderr: r.stderr, pid: Number(field('pid')) };
}
