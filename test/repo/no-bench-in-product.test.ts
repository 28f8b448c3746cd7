// The product ships no benchmark code: no file in native/ includes from bench/, no module in
// src/ imports from bench/, and spark's addon target neither compiles nor links a bench source.
// The bench baselines are modules of their own that the benchmarks load by path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';

const root = packageRoot();

function files(dir: string, ext: RegExp): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p, ext) : ext.test(n) ? [p] : [];
  });
}

/** Whether `target` (a path inside the package) lies in bench/. */
function inBench(target: string): boolean {
  const rel = relative(root, target);
  return rel === 'bench' || rel.startsWith(`bench${sep}`);
}

/**
 * The arrows from one C/C++ file into bench/: each #include whose path, taken from the file's
 * own folder or from either include root binding.gyp gives (the package and native/), is in bench/.
 */
function cppIntoBench(file: string, text: string): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/^\s*#\s*include\s*[<"]([^>"]+)[>"]/gm)) {
    const targets = [dirname(file), root, join(root, 'native')].map((base) => resolve(base, m[1]));
    if (targets.some((t) => inBench(t) && existsSync(t)) || /^bench\//.test(m[1])) found.push(m[1]);
  }
  return found;
}

/** The arrows from one TypeScript file into bench/: static imports and re-exports, import(), require(). */
function tsIntoBench(file: string, text: string): string[] {
  const specs = [
    ...text.matchAll(/\b(?:import|export)\s[^'";]*?\bfrom\s*['"]([^'"]+)['"]/g),
    ...text.matchAll(/\bimport\s*['"]([^'"]+)['"]/g),
    ...text.matchAll(/\b(?:import|require)\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1]);
  return specs.filter((s) => s.startsWith('.') && inBench(resolve(dirname(file), s)));
}

test('the scans see an include or an import into bench/ (so the checks below can fail)', () => {
  const cc = join(root, 'native', 'binding', 'x.cc');
  assert.deepEqual(cppIntoBench(cc, '#include "bench/baselines/overlay-mmap/mmap_gather.h"\n'), [
    'bench/baselines/overlay-mmap/mmap_gather.h',
  ]);
  assert.deepEqual(cppIntoBench(cc, '#include "../../bench/baselines/overlay-mmap/mmap_gather.h"\n'), [
    '../../bench/baselines/overlay-mmap/mmap_gather.h',
  ]);
  assert.deepEqual(cppIntoBench(cc, '#include "binding/args.h"\n#include <napi.h>\n'), []);
  const ts = join(root, 'src', 'bench', 'x.ts');
  assert.deepEqual(
    tsIntoBench(
      ts,
      "import { a } from '../../bench/lib/mia-header.js';\nexport * from '../../bench/x.js';\nawait import('../../bench/y.js');\n",
    ),
    ['../../bench/lib/mia-header.js', '../../bench/x.js', '../../bench/y.js'],
  );
  // src/gather-bench/ is the product's bench command, not the bench/ folder.
  assert.deepEqual(tsIntoBench(ts, "import { b } from './gather-bench.js';\nimport '../bench/svg-chart.js';\n"), []);
});

test('no file in native/ includes from bench/', () => {
  const arrows = files(join(root, 'native'), /\.(cc|h|cpp|hpp|c)$/).flatMap((f) =>
    cppIntoBench(f, readFileSync(f, 'utf8')).map((inc) => `${relative(root, f)} includes ${inc}`),
  );
  assert.deepEqual(arrows, []);
});

test('no module in src/ imports from bench/', () => {
  const arrows = files(join(root, 'src'), /\.ts$/).flatMap((f) =>
    tsIntoBench(f, readFileSync(f, 'utf8')).map((spec) => `${relative(root, f)} imports ${spec}`),
  );
  assert.deepEqual(arrows, []);
});

test("spark's addon target compiles no bench source and links no bench target", () => {
  // binding.gyp is a Python literal with comments: drop them, then read it as JSON.
  const text = readFileSync(join(root, 'binding.gyp'), 'utf8')
    .split('\n')
    .map((l) => l.replace(/^\s*#.*$/, ''))
    .join('\n')
    .replace(/,(\s*[\]}])/g, '$1');
  const gyp = JSON.parse(text) as {
    targets: { target_name: string; sources?: string[]; dependencies?: string[] }[];
  };
  const byName = new Map(gyp.targets.map((t) => [t.target_name, t]));
  const product = ['spark_core', 'spark', 'engram_rows', 'row_store'];
  const reach = new Set<string>();
  const visit = (name: string): void => {
    if (reach.has(name)) return;
    reach.add(name);
    for (const d of byName.get(name)?.dependencies ?? []) visit(d);
  };
  for (const t of product) visit(t);
  const wrong = [...reach].flatMap((t) =>
    (byName.get(t)?.sources ?? []).filter((s) => s.startsWith('bench/')).map((s) => `${t}: ${s}`),
  );
  assert.deepEqual(wrong, []);
  assert.ok(byName.has('overlay_mmap_baseline'), 'the overlay baseline is still built, as its own target');
  assert.ok(!reach.has('overlay_mmap_baseline'), 'no product target depends on the overlay baseline');
});
