// Runs the CLI in-process with captured output, or as a real process through bin.js.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { runCli } from '../../src/main.js';
import type { Io } from '../../src/terminal/io.js';
import { packageRoot } from '../../src/addon/index.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function cli(argv: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const io: Io = {
    stdout: (t) => (stdout += t),
    stderr: (t) => (stderr += t),
    env,
    cwd: process.cwd(),
    stderrIsTTY: false,
    color: false,
  };
  const code = await runCli(argv, io);
  return { code, stdout, stderr };
}

export const binPath = join(packageRoot(), 'dist', 'src', 'bin.js');

export function bin(
  argv: string[],
  options: { env?: NodeJS.ProcessEnv; nodeArgs?: string[]; input?: string } = {},
): CliRun {
  const r = spawnSync(process.execPath, [...(options.nodeArgs ?? []), binPath, ...argv], {
    encoding: 'utf8',
    env: { ...process.env, ...options.env },
    input: options.input ?? '',
  });
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}
