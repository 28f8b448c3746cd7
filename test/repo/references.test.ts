// Every document the code, docs and tests point a reader at is in the repository: a reference to
// a file nobody can open is a dead end for the next engineer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';

const root = packageRoot();
const SCANNED = ['src', 'native', 'python', 'docs', 'test', 'bench', 'scripts', 'recipes', 'README.md'];
const TEXT = /\.(ts|cc|h|py|sh|md|toml|gyp)$/;

function files(path: string): string[] {
  const st = statSync(path);
  if (st.isFile()) return TEXT.test(path) ? [path] : [];
  return readdirSync(path)
    .filter((n) => n !== 'build' && n !== 'node_modules' && n !== '__pycache__' && n !== 'fixtures')
    .flatMap((n) => files(join(path, n)));
}

const all = SCANNED.filter((p) => existsSync(join(root, p))).flatMap((p) => files(join(root, p)));

test('no reference to a document outside the repository', () => {
  const outside = /\b(domain|contract|consumers)\.md\b|\.\.\/shared\b|\bseeds?: (dsv41|eugr|mia)/;
  const hits = all.flatMap((f) =>
    readFileSync(f, 'utf8')
      .split('\n')
      .flatMap((line, i) =>
        outside.test(line) && !f.endsWith('references.test.ts') ? [`${relative(root, f)}:${i + 1}`] : [],
      ),
  );
  assert.deepEqual(hits, []);
});

test('every docs/… path and every Markdown link names a file that exists', () => {
  const missing: string[] = [];
  for (const f of all) {
    const text = readFileSync(f, 'utf8');
    for (const m of text.matchAll(/\bdocs\/[a-z0-9-]+\.md\b/g)) {
      if (!existsSync(join(root, m[0]))) missing.push(`${relative(root, f)}: ${m[0]}`);
    }
    if (!f.endsWith('.md')) continue;
    for (const m of text.matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g)) {
      if (/^[a-z]+:/.test(m[1])) continue; // a URL
      if (!existsSync(join(dirname(f), m[1]))) missing.push(`${relative(root, f)}: ${m[1]}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('every test/….test.ts path names a test file that exists', () => {
  const missing: string[] = [];
  for (const f of all) {
    for (const m of readFileSync(f, 'utf8').matchAll(/\btest\/[a-z0-9/-]+\.test\.ts\b/g)) {
      if (!existsSync(join(root, m[0]))) missing.push(`${relative(root, f)}: ${m[0]}`);
    }
  }
  assert.deepEqual(missing, []);
});
