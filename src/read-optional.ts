// Optional files (config.json, an index, an earlier manifest): absent is an answer, not an error.
import { readFile } from 'node:fs/promises';

/** The file's text, or undefined when it does not exist; any other failure is thrown. */
export async function readTextIfExists(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}
