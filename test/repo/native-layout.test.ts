// native/core's rooms as native/core/README.md and the README's Layout describe them: every
// folder is in both, each room includes only from the rooms its row names, and every core path
// a file mentions (an include, a comment, a doc) is a file that exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';

const root = packageRoot();
const core = join(root, 'native', 'core');
const rooms = readdirSync(core)
  .filter((n) => statSync(join(core, n)).isDirectory())
  .sort();

/** The rows of native/core/README.md's room table: room -> the rooms it may include from. */
function roomTable(): Map<string, string[]> {
  const table = new Map<string, string[]>();
  for (const line of readFileSync(join(core, 'README.md'), 'utf8').split('\n')) {
    const m = /^\| `([a-z_]+)\/` \|.*\| ([a-z_, ]+) \|$/.exec(line);
    if (m) table.set(m[1], m[2] === 'nothing' ? [] : m[2].split(', '));
  }
  return table;
}

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (n === 'build' || n === 'node_modules' || n === 'dist' || n.startsWith('.')) return [];
    return statSync(p).isDirectory() ? files(p) : /\.(ts|cc|h|py|sh|md|gyp)$/.test(n) ? [p] : [];
  });
}

test('native/core holds only rooms, each in native/core/README.md and in the README Layout', () => {
  const loose = readdirSync(core).filter((n) => !statSync(join(core, n)).isDirectory() && n !== 'README.md');
  assert.deepEqual(loose, [], 'a core file outside a room');
  assert.deepEqual([...roomTable().keys()].sort(), rooms);
  const layout = readFileSync(join(root, 'README.md'), 'utf8').split('## Layout')[1]?.split('\n## ')[0] ?? '';
  for (const room of rooms) assert.match(layout, new RegExp(`\\b${room}/`), `README Layout names ${room}/`);
});

test('each room includes only from the rooms native/core/README.md allows it', () => {
  const allowed = roomTable();
  const wrong: string[] = [];
  for (const room of rooms) {
    for (const f of files(join(core, room))) {
      for (const m of readFileSync(f, 'utf8').matchAll(/#include "core\/([a-z_]+)\//g)) {
        if (m[1] !== room && !allowed.get(room)?.includes(m[1])) wrong.push(`${relative(root, f)} includes ${m[1]}/`);
      }
    }
  }
  assert.deepEqual(wrong, []);
});

test('every core/<room>/<file> path named anywhere exists', () => {
  const missing: string[] = [];
  for (const f of ['src', 'native', 'bench', 'docs', 'test', 'README.md', 'binding.gyp'].flatMap((p) => {
    const at = join(root, p);
    return !existsSync(at) ? [] : statSync(at).isDirectory() ? files(at) : [at];
  })) {
    for (const m of readFileSync(f, 'utf8').matchAll(/\bcore\/([a-z_]+\/[a-z_0-9]+\.(?:h|cc))\b/g)) {
      if (!existsSync(join(core, m[1]))) missing.push(`${relative(root, f)}: core/${m[1]}`);
    }
  }
  assert.deepEqual(missing, []);
});
