// Typed access to execEngine (native/binding/exec_binding.cc): replace this process with
// another program, with default signal dispositions, an empty signal mask and blocking stdio.
import { addon } from './index.js';

interface ExecAddon {
  execEngine(file: string, argv: string[], env: string[]): never;
}

/**
 * Replaces the current process (execve). `file` without a slash is searched in the PATH of
 * `env`. Returns only by throwing (code E_EXEC, with `errno`) when no candidate could be run.
 */
export function execEngine(argv: string[], env: NodeJS.ProcessEnv): never {
  const entries = Object.entries(env)
    .filter((kv): kv is [string, string] => kv[1] !== undefined)
    .map(([k, v]) => `${k}=${v}`);
  return (addon() as unknown as ExecAddon).execEngine(argv[0] ?? '', argv, entries);
}
