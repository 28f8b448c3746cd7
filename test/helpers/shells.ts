// The shells a test runs an sh program under, each program once: /bin/sh is dash on Debian and
// Ubuntu (a second run of the same program checks nothing new) and another shell elsewhere,
// where it is run too. A name that resolves to a program named before it is left out; a name
// that does not resolve is kept (the test says it is missing).
import { realpathSync } from 'node:fs';

export function distinctShells(paths: readonly string[]): string[] {
  const seen = new Set<string>();
  return paths.filter((p) => {
    let real: string;
    try {
      real = realpathSync(p);
    } catch {
      return true;
    }
    if (seen.has(real)) return false;
    seen.add(real);
    return true;
  });
}
