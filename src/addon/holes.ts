// Typed wrapper over the addon's hole finder (native/binding/holes_binding.cc): where a
// sparse copy's holes are.
import { toSparkError } from '../errors/errors.js';
import { addon } from './index.js';

interface HolesAddon {
  findHole(path: string, start: number, end: number): number | bigint | null;
}

function native(): HolesAddon {
  return addon() as unknown as HolesAddon;
}

/** The first byte of [start, end) of `path` that lies in a hole, or undefined when all is data. */
export function findHole(path: string, start: number, end: number): number | undefined {
  try {
    const at = native().findHole(path, start, end);
    return at === null ? undefined : Number(at);
  } catch (err) {
    throw toSparkError(err);
  }
}
