// What a command may touch of the outside world, so tests can run commands in-process.
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** stderr is a terminal: progress lines are shown only then. */
  stderrIsTTY: boolean;
  /** Colour allowed (a TTY and NO_COLOR unset). */
  color: boolean;
}

export function processIo(): Io {
  const tty = Boolean(process.stderr.isTTY);
  return {
    stdout: (t) => process.stdout.write(t),
    stderr: (t) => process.stderr.write(t),
    env: process.env,
    cwd: process.cwd(),
    stderrIsTTY: tty,
    color: tty && process.env.NO_COLOR === undefined,
  };
}

/** What every command's run function returns; bin.ts turns it into output and an exit code. */
export interface CommandResult {
  /** The one JSON document printed with --json. */
  json: unknown;
  /** The human report printed without --json. */
  text: string;
  /** 0 ok, 1 a check failed. Errors (2, 3) are thrown as SparkError instead. */
  exitCode: 0 | 1;
}

/** JSON.stringify that writes BigInts as exact decimal numbers. */
export function toJson(value: unknown, indent = 2): string {
  // BigInts go through a marker string; a per-call nonce keeps real strings from matching it.
  const marker = `__bigint_${Math.random().toString(36).slice(2)}_`;
  const marked = JSON.stringify(value, (_k, v: unknown) => (typeof v === 'bigint' ? `${marker}${v}` : v), indent);
  return marked.replace(new RegExp(`"${marker}(\\d+)"`, 'g'), '$1');
}

/**
 * The one stderr line of a failed check (exit 1): `spark CMD: message`, or with --json the
 * `{"error": {code, message}}` object every failure prints there.
 */
export function reportCheckFailure(io: Io, json: boolean, command: string, message: string): void {
  io.stderr(json ? toJson({ error: { code: 'E_CHECK_FAILED', message } }, 0) + '\n' : `spark ${command}: ${message}\n`);
}
