// What a path is on this machine, following links as a reader's open does: the one stat both
// the node's facts (collect.ts) and a reader directory's (reader-dir.ts) are built from.
import { statSync } from 'node:fs';
import type { PathFact } from '../../preflight-api/node-facts.js';

export function pathFact(p: string): PathFact {
  try {
    const s = statSync(p);
    if (s.isFile()) return { kind: 'file', size: s.size };
    return { kind: s.isDirectory() ? 'dir' : 'other' };
  } catch {
    return { kind: 'missing' };
  }
}
