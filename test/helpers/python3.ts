// The python3 the tests run: the interpreter that `python3` on PATH starts, asked for once per
// process and then run directly. On PATH, python3 may be a version manager's shim (pyenv's costs
// ~0.3 s of CPU a call, more than most of the checks it runs); the interpreter behind it is the
// same one. When it cannot be asked, plain `python3` (and its error) it is.
import { spawnSync } from 'node:child_process';

let interpreter: string | undefined;

export function python3(): string {
  if (interpreter === undefined) {
    const r = spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' });
    const named = r.status === 0 ? r.stdout.trim() : '';
    interpreter = named !== '' ? named : 'python3';
  }
  return interpreter;
}
