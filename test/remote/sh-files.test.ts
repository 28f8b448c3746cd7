// Every sh program spark runs is a .sh file under src/ (src/remote/sh-template.ts fills in the
// values): each file passes shellcheck and dash -n, and so does every script spark makes of
// them, for the inputs below. The placeholder mechanism itself fails loudly on a missing,
// unused, commented or half-word placeholder.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { packageRoot } from '../../src/addon/index.js';
import { quoted, ShTemplate, sourceDir } from '../../src/remote/sh-template.js';
import { emitWrapperSh } from '../../src/wrapper/emit-sh.js';
import { tileLayers } from '../../src/engram/ranges.js';
import { helloScript, probeScript } from '../../src/preflight/facts/probe-sh.js';
import { probeScript as fabricProbe } from '../../src/recipes/sparkrun/fabric.js';
import { tempDir } from '../helpers/tmp.js';
import { factsRequest } from '../helpers/facts-request.js';
import { needs } from '../helpers/external-tool.js';
import { checkMade, dashN, LAYERS, shellcheck } from '../helpers/sh-files.js';

const root = packageRoot();
const ENTRY = '#!/bin/sh\n';
const FRAGMENT = '# shellcheck shell=sh\n';
const INCLUDE = /^\. \.\/([a-z0-9-]+\.sh)$/gm;

function shFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? shFiles(join(dir, e.name)) : e.name.endsWith('.sh') ? [join(dir, e.name)] : [],
  );
}

const FILES = shFiles(join(root, 'src'));
const includes = (f: string) => [...readFileSync(f, 'utf8').matchAll(INCLUDE)].map((m) => join(dirname(f), m[1]!));

test('the sh programs under src/ are files that shellcheck and dash -n pass', (t) => {
  if (!needs(t, 'shellcheck', 'dash')) return;
  assert.ok(FILES.length >= 8, FILES.join(' '));
  const included = new Set(FILES.flatMap(includes));
  for (const f of FILES) {
    const text = readFileSync(f, 'utf8');
    const name = relative(root, f);
    assert.equal(dashN(f), '', `${name}: dash -n`);
    assert.ok(text.split('\n').length <= 500, `${name}: over 500 lines`);
    if (text.startsWith(ENTRY)) {
      // -x follows each `. ./x.sh` line (source-path=SCRIPTDIR), so the variables a fragment
      // sets and reads are checked across the two files.
      assert.equal(shellcheck(['--external-sources', basename(f)], dirname(f)), '', `${name}: shellcheck`);
    } else {
      assert.ok(
        text.startsWith(FRAGMENT),
        `${name}: neither a program (#!/bin/sh) nor a fragment (# shellcheck shell=sh)`,
      );
      assert.ok(included.has(f), `${name}: a fragment no file includes`);
      // On its own a fragment reads variables its includer sets and sets what the includer
      // reads: those two checks (SC2034 unused, SC2154 unassigned) run on the includer above
      // and on the whole generated scripts below, every other check here.
      assert.equal(shellcheck(['--exclude=SC2034,SC2154', basename(f)], dirname(f)), '', `${name}: shellcheck`);
    }
    for (const line of text.split('\n')) {
      // Each disable says why on the line above it: no file-wide or bare disables.
      if (/shellcheck disable=/.test(line)) assert.match(line, /^\s*# shellcheck disable=SC\d{4}$/, `${name}: ${line}`);
    }
    const disables = text.split('\n').flatMap((l, i, all) => (/shellcheck disable=/.test(l) ? [all[i - 1] ?? ''] : []));
    for (const why of disables) assert.match(why, /^\s*# \S/, `${name}: a disable without a reason on the line above`);
  }
});

test('every script spark makes of them passes shellcheck and dash -n', (t) => {
  if (!needs(t, 'shellcheck', 'dash')) return;
  // One of each kind here; the other inputs of each: test/long/sh-files-variants.test.ts.
  checkMade({
    'entrypoint, 4 ranks floor': emitWrapperSh({
      world: 4,
      split: 'floor',
      source: '/models/dsv41',
      ranks: tileLayers(LAYERS, 4, 'floor'),
    }),
    hello: helloScript('spark'),
    'probe, every part': probeScript(
      factsRequest({
        paths: ['/a', '/b c'],
        texts: ['/t'],
        free: ['/f'],
        ports: [8000],
        images: ['img:1', 'b'],
        docker: '/usr/bin/docker',
        snapshot: [
          { dir: '/snap', notCopy: true },
          { hfCache: '/hf', model: 'x/y', modelDir: '/hf/models--x--y' },
        ],
        copyDir: '/copy',
        readerDir: { dir: '/mia dir', glob: 'engram-l*-r*of*.bin', headBytes: 48, receipt: 'identity.json' },
      }),
    ),
    'sparkrun fabric probe': fabricProbe('/sys'),
  });
});

test('the placeholder mechanism quotes every value and refuses a missing, unused, commented or half-word one', () => {
  const dir = tempDir('spark-sh-template-');
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return new ShTemplate(dir, name);
  };
  const t = file('t.sh', '#!/bin/sh\na=@A@\nset -- @LIST@\nb=@B@ n=@N@\nset -- @Q@\n. ./f.sh\necho done\n');
  file('f.sh', '# shellcheck shell=sh\nc=@A@\n');
  assert.equal(
    t.fill({ A: "it's $(x)", LIST: ['p q', 'r', 7], B: quoted('safe'), N: 12, Q: quoted(['1:0:5', '']) }),
    "#!/bin/sh\na='it'\\''s $(x)'\nset -- 'p q' r 7\nb='safe' n=12\nset -- '1:0:5' ''\n# shellcheck shell=sh\nc='it'\\''s $(x)'\necho done\n",
  );
  assert.equal(
    t
      .fill({ A: '', LIST: [], B: quoted(''), N: 0, Q: [] })
      .split('\n')
      .slice(1, 3)
      .join('|'),
    "a=''|set -- ",
  );
  assert.throws(() => t.fill({ A: 'x', LIST: [], N: 1, Q: [] }), /t\.sh:4: no value for @B@/);
  assert.throws(() => t.fill({ A: 'x', LIST: [], B: 'y', N: 1, Q: [], TYPO: 2 }), /no placeholder for @TYPO@/);
  assert.throws(() => t.fill({ A: 'x', LIST: [], B: 'y', N: 1.5, Q: [] }), /@N@: 1\.5 is not a whole number/);
  assert.throws(() => file('c.sh', '# for @A@ ranks\n').fill({ A: 'x' }), /c\.sh:1: @A@ is in a comment/);
  assert.throws(() => file('c2.sh', 'a=1 # for @A@\n').fill({ A: 'x' }), /c2\.sh:1: @A@ is in a comment/);
  assert.throws(() => file('w.sh', 'a="@A@"\n').fill({ A: 'x' }), /w\.sh:1: @A@ must be a word of its own/);
  assert.throws(() => file('w2.sh', 'a=x@A@\n').fill({ A: 'x' }), /must be a word of its own/);
  assert.throws(() => file('loop.sh', '. ./loop.sh\n').fill({}), /loop\.sh -> loop\.sh: a fragment includes itself/);
  assert.throws(() => file('gone.sh', '. ./nowhere.sh\n').fill({}), /ENOENT/);
});

test('a compiled module finds its .sh files in the source tree, which the package ships', () => {
  const url = pathToFileURL(join(root, 'dist', 'src', 'wrapper', 'emit-sh.js')).href;
  assert.equal(sourceDir(url), join(root, 'src', 'wrapper'));
  assert.equal(sourceDir(pathToFileURL(join(root, 'src', 'wrapper', 'emit-sh.ts')).href), join(root, 'src', 'wrapper'));
  // No "files" list in package.json, and src/ not ignored: every .sh is in the package.
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files?: string[] };
  assert.equal(pkg.files, undefined, 'a "files" list must name src/**/*.sh (sh-template.ts reads them from src/)');
  const ignored = spawnSync('git', ['check-ignore', ...FILES], { cwd: root, encoding: 'utf8' });
  if (ignored.error === undefined)
    assert.equal(ignored.stdout, '', 'a .sh file is git-ignored, so npm would leave it out');
});
