// Each serving stack's and layout's knowledge lives in its room (src/stacks/<room>/), reached
// through src/stacks/registry.ts: no module elsewhere compares a stack's or layout's name, a
// room compares only its own names, and the folders of src/ import one another in one
// direction only (no folder is in an import cycle with another).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { LAYOUTS, ROOMS, STACKS } from '../../src/stacks/registry.js';

const src = join(packageRoot(), 'src');

function tsFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? tsFiles(p) : n.endsWith('.ts') ? [p] : [];
  });
}

const NAMES = new Set([...STACKS.map((s) => s.name), ...LAYOUTS.map((l) => l.name)]);

/** Every name of NAMES a line compares: `=== 'x'`, `'x' !==`, `case 'x':`, `.includes('x')`. */
function comparedNames(text: string): { name: string; line: number }[] {
  const out: { name: string; line: number }[] = [];
  const q = `['"]([a-z][a-z0-9-]*)['"]`;
  const forms = [
    new RegExp(`[!=]==\\s*${q}`, 'g'),
    new RegExp(`${q}\\s*[!=]==`, 'g'),
    new RegExp(`\\bcase\\s+${q}\\s*:`, 'g'),
    new RegExp(`\\.includes\\(\\s*${q}\\s*\\)`, 'g'),
  ];
  text.split('\n').forEach((lineText, i) => {
    if (/^\s*(\/\/|\*)/.test(lineText)) return;
    for (const re of forms)
      for (const m of lineText.matchAll(re)) if (NAMES.has(m[1]!)) out.push({ name: m[1]!, line: i + 1 });
  });
  return out;
}

/** The names a file may compare: its room's own, or all of them in the registry. */
function allowed(rel: string): Set<string> {
  if (rel === 'src/stacks/registry.ts') return NAMES;
  const room = ROOMS.find((r) => rel.startsWith(`src/stacks/${r.name}/`));
  if (!room) return new Set();
  return new Set([
    ...room.stacks.map((s) => s.name),
    ...room.layouts.map((l) => l.name),
    ...room.formats.map((f) => f.kind),
  ]);
}

test("no stack's or layout's name is compared outside its room and the registry", () => {
  const found: string[] = [];
  for (const file of tsFiles(src)) {
    const rel = relative(packageRoot(), file).split(sep).join('/');
    const ok = allowed(rel);
    for (const c of comparedNames(readFileSync(file, 'utf8'))) {
      if (!ok.has(c.name)) found.push(`${rel}:${c.line} compares '${c.name}'`);
    }
  }
  assert.deepEqual(found, [], 'ask src/stacks/registry.ts, or move the knowledge into its room');
});

test('the checker sees each form of comparison, and only outside comments', () => {
  const seen = comparedNames(
    ["if (a === 'mia') x;", "if ('sparse' !== b) y;", "case 'page':", "v.includes('overlay')", "// a === 'dense'"].join(
      '\n',
    ),
  );
  assert.deepEqual(
    seen.map((s) => s.name),
    ['mia', 'sparse', 'page', 'overlay'],
  );
});

test('every room is a folder of src/stacks/ and every stack reads a registered layout', () => {
  for (const r of ROOMS) assert.ok(statSync(join(src, 'stacks', r.name)).isDirectory(), r.name);
  for (const s of STACKS)
    assert.ok(
      LAYOUTS.some((l) => l.name === s.layout),
      `${s.name} reads ${s.layout}`,
    );
  for (const l of LAYOUTS)
    if (l.stack !== undefined)
      assert.ok(
        STACKS.some((s) => s.name === l.stack),
        `${l.name} is read by ${l.stack}`,
      );
});

/** src/'s folders (a subfolder counts as its top folder) and the arrows between them. */
function folderArrows(): Map<string, Set<string>> {
  const area = (p: string) => relative(src, p).split(sep)[0]!;
  const arrows = new Map<string, Set<string>>();
  for (const file of tsFiles(src)) {
    const from = area(file);
    if (!relative(src, file).includes(sep)) continue; // the entry points sit above every folder
    for (const m of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'/g)) {
      const to = area(normalize(join(dirname(file), m[1]!)));
      if (to !== from && !to.endsWith('.js')) (arrows.get(from) ?? arrows.set(from, new Set()).get(from)!).add(to);
    }
  }
  return arrows;
}

test("src/'s folders import one another in one direction only", () => {
  const arrows = folderArrows();
  const cycles: string[] = [];
  const reach = (from: string, to: string, seen = new Set<string>()): boolean =>
    [...(arrows.get(from) ?? [])].some((n) => n === to || (!seen.has(n) && (seen.add(n), reach(n, to, seen))));
  for (const [from, tos] of arrows) for (const to of tos) if (reach(to, from)) cycles.push(`${from} -> ${to}`);
  assert.deepEqual(cycles, [], 'an arrow back up a floor: move the shared piece down, or pass it in');
  assert.ok(arrows.get('stacks')?.has('pack'), 'the rooms build on pack/');
});
