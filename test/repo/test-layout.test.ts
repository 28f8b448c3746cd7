// Where the tests are (README.md, "Where the tests are"): every test file sits in a folder of
// test/ named for the src/ area it tests (or cli/, repo/, python/), none flat in test/,
// and npm test runs every one of them but the suites run apart (long/, cluster/, arm64/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';

const root = packageRoot();
/** Run by their own scripts: npm run test:long, test:cluster, test:arm64. */
const APART = ['long', 'cluster', 'arm64'];
/** Folders of test/ for what is not a src/ area: whole-CLI runs, checks of the repository, python/. */
const NOT_AREAS = ['cli', 'repo', 'python'];

/** The *.test.ts files under test/, as paths relative to test/ with '/' between folders. */
function testFiles(dir = join(root, 'test'), prefix = ''): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      if (statSync(p).isDirectory()) return testFiles(p, `${prefix}${n}/`);
      return n.endsWith('.test.ts') ? [`${prefix}${n}`] : [];
    });
}

const all = testFiles();

test('each test file is in a folder that names the src/ area it tests, none flat in test/', () => {
  assert.ok(all.length > 90, `only ${all.length} test files under test/`);
  const misplaced = all.filter((f) => {
    const parts = f.split('/');
    if (parts.length < 2) return true;
    if (APART.includes(parts[0])) return false;
    if (NOT_AREAS.includes(parts[0])) return parts.length !== 2;
    // A folder of test/ below an area mirrors the same folder of src/ (recipes/sparkrun/).
    const area = join(root, 'src', ...parts.slice(0, -1));
    return !existsSync(area) || !statSync(area).isDirectory();
  });
  assert.deepEqual(misplaced, []);
});

test('npm test runs every test file outside test/long, test/cluster and test/arm64', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  assert.equal(pkg.scripts.test, 'bash scripts/test.sh');
  assert.match(readFileSync(join(root, 'scripts', 'test.sh'), 'utf8'), /^npm run test:node \|\| failed\+=/m);
  assert.equal(pkg.scripts['test:node'], 'sh scripts/node-tests.sh');
  const listed = execFileSync('sh', ['scripts/node-tests.sh', '--list'], { cwd: root, encoding: 'utf8' })
    .trim()
    .split('\n');
  const expected = all
    .filter((f) => !APART.includes(f.split('/')[0]))
    .map((f) => `dist/test/${f.replace(/\.ts$/, '.js')}`)
    .sort();
  assert.deepEqual([...listed].sort(), expected);
});

test('the suites run apart are flat folders their scripts glob', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  for (const dir of APART) {
    const nested = all.filter((f) => f.startsWith(`${dir}/`) && f.split('/').length !== 2);
    assert.deepEqual(nested, [], `test/${dir}/ has subfolders its glob misses`);
  }
  assert.match(pkg.scripts['test:long'], /dist\/test\/long\/\*\.test\.js$/);
  assert.match(pkg.scripts['test:cluster'], /dist\/test\/cluster\/\*\.test\.js$/);
});

test('the root of src/ holds only the entry points; every other module is in a named folder', () => {
  const loose = readdirSync(join(root, 'src')).filter((n) => !statSync(join(root, 'src', n)).isDirectory());
  assert.deepEqual(loose.sort(), ['bin.ts', 'cli.ts', 'main.ts']);
});
