// SparkError: every failure a user can see. One line of message (what, where, the fix), a
// stable code from the shared table, and the exit code that code implies.
import { ERROR_CODES, exitCodeOf, type ErrorCode, type ExitCode } from './error-codes.js';

export interface ErrorDetails {
  path?: string;
  tensor?: string;
  offset?: number | bigint;
  key?: string;
  [extra: string]: unknown;
}

export class SparkError extends Error {
  readonly code: ErrorCode;
  readonly exitCode: ExitCode;
  readonly details: ErrorDetails;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = 'SparkError';
    this.code = code;
    this.exitCode = ERROR_CODES[code];
    this.details = details;
  }
}

/** Usage errors: a bad flag value or missing argument (exit 2). */
export function usageError(message: string, details: ErrorDetails = {}): SparkError {
  return new SparkError('E_USAGE', message, details);
}

/**
 * What an errno means for the person at the terminal, and the spark code it maps to. The
 * advice matters: a read-only or forbidden path is not fixed by freeing space.
 */
const ERRNO: Record<string, { code: ErrorCode; says: string }> = {
  ENOENT: { code: 'E_FILE_NOT_FOUND', says: 'no such file or directory' },
  ENOSPC: { code: 'E_NO_SPACE', says: 'no space left on the device: free space there, or use another disk' },
  EDQUOT: { code: 'E_NO_SPACE', says: 'disk quota exceeded: free space there, or use another disk' },
  EROFS: { code: 'E_IO', says: 'the file system is read-only: use a writable path (or remount it read-write)' },
  EACCES: { code: 'E_IO', says: 'permission denied: use a path this user may access, or run as a user who may' },
  EPERM: { code: 'E_IO', says: 'operation not permitted: use a path this user may change, or run as a user who may' },
  EISDIR: { code: 'E_NOT_A_FILE', says: 'is a directory where a file is expected' },
  ENOTDIR: { code: 'E_USAGE', says: 'a part of the path is a file where a directory is expected' },
  EEXIST: {
    code: 'E_USAGE',
    says: 'already exists as something other than what is expected there (a file where a directory belongs?)',
  },
  ELOOP: { code: 'E_USAGE', says: 'too many levels of symbolic links (a link loop?)' },
  ENAMETOOLONG: { code: 'E_USAGE', says: 'the path is too long' },
  EMFILE: { code: 'E_IO', says: 'too many open files: raise the limit (ulimit -n)' },
  ENFILE: { code: 'E_IO', says: 'too many open files on the system' },
  EIO: { code: 'E_IO', says: 'input/output error: the disk or network file system failed' },
  ESTALE: { code: 'E_IO', says: 'stale NFS file handle: the file changed on the server; run again' },
  ETIMEDOUT: { code: 'E_IO', says: 'timed out (a network file system not answering?)' },
};

type NodeError = Error & {
  code?: unknown;
  path?: unknown;
  dest?: unknown;
  tensor?: unknown;
  offset?: unknown;
  syscall?: unknown;
};

/**
 * An error as Node raised it, given the path it concerns: Node leaves the path out of errors
 * on descriptors (`write`, `fsync`, `close`), so an ENOSPC writing a manifest says nothing of
 * where. Other values are returned as they are.
 */
export function withPath(err: unknown, path: string): unknown {
  const e = err as NodeError;
  if (err instanceof Error && typeof e.code === 'string' && typeof e.syscall === 'string' && typeof e.path !== 'string')
    e.path = path;
  return err;
}

/** Any thrown value as a SparkError: native errors keep their code, Node errors map errno. */
export function toSparkError(err: unknown): SparkError {
  if (err instanceof SparkError) return err;
  if (err instanceof Error) {
    const e = err as NodeError;
    const code = typeof e.code === 'string' ? e.code : '';
    const details: ErrorDetails = {};
    if (typeof e.path === 'string') details.path = e.path;
    if (typeof e.tensor === 'string') details.tensor = e.tensor;
    if (typeof e.offset === 'number' || typeof e.offset === 'bigint') details.offset = e.offset;
    if (code in ERROR_CODES) return new SparkError(code as ErrorCode, e.message, details);
    if (code.startsWith('E') && typeof e.syscall === 'string') {
      // `PATH: what it means (CODE on SYSCALL)`: one line, the path first, as every spark error.
      const known = ERRNO[code];
      const says = known?.says ?? e.message.replace(/^E[A-Z]+: /, '').split(',')[0]!;
      const where = details.path !== undefined ? `${details.path}: ` : '';
      const to = typeof e.dest === 'string' ? ` (to ${e.dest})` : '';
      return new SparkError(known?.code ?? 'E_IO', `${where}${says} (${code} on ${e.syscall}${to})`, {
        ...details,
        errno: code,
      });
    }
    if (e instanceof RangeError && e.message === 'Invalid string length') {
      return new SparkError(
        'E_INTERNAL',
        'ran out of room for a string (Invalid string length): an input or the output is far larger than expected',
        details,
      );
    }
    if (e instanceof RangeError) return new SparkError('E_USAGE', e.message, details);
    return new SparkError('E_INTERNAL', e.stack ?? e.message, details);
  }
  return new SparkError('E_INTERNAL', String(err));
}

export { exitCodeOf };
