// One TOML document: values from smol-toml, positions from one pass over the text it accepted
// (toml-positions.ts), and syntax errors as one-line SparkErrors naming file:line:column.
import { parse, TomlError, type TomlTable } from 'smol-toml';
import { SparkError, toSparkError } from '../errors/errors.js';
import type { ErrorCode } from '../errors/error-codes.js';
import { readSmallText } from '../files/small-file.js';
import { tomlPositions, type TomlPositions } from './toml-positions.js';

export interface TomlDocument {
  table: TomlTable;
  positions: TomlPositions;
}

/**
 * What a recipe or cluster file may hold: far above any real one (the users' largest is ~10 KB
 * with ~200 values), far below what costs seconds and gigabytes (16 MiB of `[[a]]` took 69 s
 * and 2.5 GB to parse; 150,000 tables overflowed the stack further on). `values` counts every
 * key's value and every array element, at every depth (a table is one value, and so are its
 * keys' values).
 */
export const TOML_LIMITS = { bytes: 256 << 10, values: 8192 } as const;

export function parseTomlDocument(source: string, file: string, code: ErrorCode): TomlDocument {
  const bytes = Buffer.byteLength(source);
  if (bytes > TOML_LIMITS.bytes) {
    throw new SparkError(
      code,
      `${file}: ${bytes} bytes, more than the ${TOML_LIMITS.bytes} a recipe or cluster file may be; is it the right file?`,
      { path: file },
    );
  }
  let table: TomlTable;
  try {
    table = parse(source);
  } catch (err) {
    if (err instanceof TomlError) {
      const what = err.message.split('\n')[0].replace(/^Invalid TOML document: /, '');
      throw new SparkError(code, `${file}:${err.line}:${err.column}: invalid TOML: ${what}`, {
        path: file,
        line: err.line,
      });
    }
    throw err;
  }
  const values = countValues(table);
  if (values > TOML_LIMITS.values) {
    throw new SparkError(
      code,
      `${file}: more than ${TOML_LIMITS.values} values (keys and array elements), far more than a recipe or cluster file holds; is it the right file?`,
      {
        path: file,
      },
    );
  }
  return { table, positions: tomlPositions(source) };
}

/** Every key's value and array element under `root`, counted without recursion; stops past the limit. */
function countValues(root: TomlTable): number {
  let n = 0;
  const todo: unknown[] = [root];
  while (todo.length > 0 && n <= TOML_LIMITS.values) {
    const v = todo.pop();
    const children = Array.isArray(v)
      ? v
      : v !== null && typeof v === 'object' && !(v instanceof Date)
        ? Object.values(v)
        : [];
    n += children.length;
    for (const c of children) if (c !== null && typeof c === 'object') todo.push(c);
  }
  return n;
}

/** Reads a text file; a missing or unreadable file names the path and what it should be. */
export async function readTextFile(path: string, what: string): Promise<string> {
  try {
    return await readSmallText(path, { what });
  } catch (err) {
    if (err instanceof SparkError) throw err; // a FIFO, a device, too large: already one line
    const e = toSparkError(err);
    const reason = (err as NodeJS.ErrnoException).code ?? 'read failed';
    throw new SparkError(e.code, `cannot read the ${what} ${path} (${reason})`, { path });
  }
}
