// Optional files (config.json, an index, an earlier manifest): absent is an answer, not an error.
import { SparkError } from '../errors/errors.js';
import type { ErrorCode } from '../errors/error-codes.js';
import { readSmallText, type SmallFileOptions } from './small-file.js';

/** The file's text, or undefined when it does not exist; any other failure is thrown. */
export async function readTextIfExists(
  path: string,
  options: SmallFileOptions = { what: 'file' },
): Promise<string | undefined> {
  try {
    return await readSmallText(path, options);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** The file parsed as JSON, or undefined when it does not exist; bad JSON is `code` naming the file. */
export async function readJsonIfExists(
  path: string,
  code: ErrorCode,
  options: SmallFileOptions = { what: 'file' },
): Promise<unknown> {
  const text = await readTextIfExists(path, options);
  if (text === undefined) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new SparkError(code, `${path}: not valid JSON (${(err as Error).message})`, { path });
  }
}
