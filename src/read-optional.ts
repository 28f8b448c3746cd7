// Optional files (config.json, an index, an earlier manifest): absent is an answer, not an error.
import { readFile } from 'node:fs/promises';
import { SparkError } from './errors.js';
import type { ErrorCode } from './native/codes.js';

/** The file's text, or undefined when it does not exist; any other failure is thrown. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The file parsed as JSON, or undefined when it does not exist; bad JSON is `code` naming the file. */
export async function readJsonIfExists(path: string, code: ErrorCode): Promise<unknown> {
  const text = await readTextIfExists(path);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SparkError(code, `${path}: not valid JSON (${(err as Error).message})`, { path });
  }
}
