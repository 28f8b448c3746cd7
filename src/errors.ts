// SparkError: every failure a user can see. One line of message (what, where, the fix), a
// stable code from the shared table, and the exit code that code implies.
import { ERROR_CODES, exitCodeOf, type ErrorCode, type ExitCode } from './native/codes.js';

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

/** Any thrown value as a SparkError: native errors keep their code, Node errors map errno. */
export function toSparkError(err: unknown): SparkError {
  if (err instanceof SparkError) return err;
  if (err instanceof Error) {
    const e = err as Error & { code?: unknown; path?: unknown; tensor?: unknown; offset?: unknown; syscall?: unknown };
    const code = typeof e.code === 'string' ? e.code : '';
    const details: ErrorDetails = {};
    if (typeof e.path === 'string') details.path = e.path;
    if (typeof e.tensor === 'string') details.tensor = e.tensor;
    if (typeof e.offset === 'number' || typeof e.offset === 'bigint') details.offset = e.offset;
    if (code in ERROR_CODES) return new SparkError(code as ErrorCode, e.message, details);
    if (code === 'ENOENT') return new SparkError('E_FILE_NOT_FOUND', e.message, details);
    if (code === 'ENOSPC' || code === 'EDQUOT') return new SparkError('E_NO_SPACE', e.message, details);
    if (code.startsWith('E') && typeof e.syscall === 'string') return new SparkError('E_IO', e.message, details);
    if (e instanceof RangeError) return new SparkError('E_USAGE', e.message, details);
    return new SparkError('E_INTERNAL', e.stack ?? e.message, details);
  }
  return new SparkError('E_INTERNAL', String(err));
}

export { exitCodeOf };
