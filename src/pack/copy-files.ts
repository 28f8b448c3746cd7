// What verify asks of a node-local copy's files before reading them: each is inside the copy's
// directory. A data file that is a link to somewhere else is not part of the copy (and a
// planted link would make verify read, and report on, any file of the machine): it fails the
// check, naming the link and its target, and is not read.
import { lstat, realpath } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';

/** What is wrong when `dir/name` is a link whose target lies outside `dir` (or nowhere); undefined otherwise. */
export async function linkOutside(dir: string, name: string): Promise<string | undefined> {
  const path = join(dir, name);
  const st = await lstat(path).catch(() => undefined);
  if (!st?.isSymbolicLink()) return undefined;
  const [realDir, target] = await Promise.all([realpath(dir), realpath(path).catch(() => undefined)]);
  if (target === undefined) return "is a dangling link; the copy's files must be its own";
  const rel = relative(realDir, target);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    return `links outside the copy (to ${target}); refusing to read it: make the copy again with real files`;
  }
  return undefined;
}
