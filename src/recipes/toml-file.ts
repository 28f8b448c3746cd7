// One TOML document: values from smol-toml, positions from one pass over the text it accepted
// (toml-positions.ts), and syntax errors as one-line SparkErrors naming file:line:column.
import { parse, TomlError, type TomlTable } from 'smol-toml';
import { SparkError, toSparkError } from '../errors.js';
import type { ErrorCode } from '../error-codes.js';
import { readSmallText } from '../small-file.js';
import { tomlPositions, type TomlPositions } from './toml-positions.js';

export interface TomlDocument {
  table: TomlTable;
  positions: TomlPositions;
}

export function parseTomlDocument(source: string, file: string, code: ErrorCode): TomlDocument {
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
  return { table, positions: tomlPositions(source) };
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
