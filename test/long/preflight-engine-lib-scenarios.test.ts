// The other scenarios of the engine libraries' preflight on a fake cluster of 4 nodes, beside
// the representatives npm test runs (test/preflight/preflight-engine-lib.test.ts): each broken
// file alone, with its exact finding on the node it concerns (text, a truncated ELF, a FIFO, a
// directory, a dangling link, no file, the other stack's library, one of the other machine, no
// ABI note, another build), aarch64 nodes, spark on the nodes and its fallback to the sh
// command, 30,000 note sections, and a file too large or an answer cut short.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import type { PreflightReport } from '../../src/preflight/index.js';
import { ELF_MAX_SECTIONS } from '../../src/files/elf.js';
import {
  collectEngineLibs,
  ENGINE_LIB_MAX_BYTES,
  engineLibScript,
  parseEngineLibs,
} from '../../src/preflight/facts/engine-lib.js';
import { packageRoot } from '../../src/addon/index.js';
import { cli } from '../helpers/cli.js';
import { LIBRARIES } from '../helpers/engine-lib.js';
import { noteFlood } from '../helpers/crafted-elf.js';
import { defaultHosts, REMOTE_BIN } from '../helpers/fake-cluster.js';
import { needs } from '../helpers/external-tool.js';
import {
  ARM64,
  check,
  defaultLibs,
  dump,
  kinds,
  libs,
  on,
  place,
  RULES,
  THIS_MACHINE,
} from '../helpers/preflight-engine-lib.js';

test("a text file, a truncated ELF, a FIFO, the other stack's library: one error on that node each, with the fix", async () => {
  const l = await defaultLibs();
  place(l, LIBRARIES);
  const target = (host: string) => join(l.realDir(host), 'libengram_rows.so');
  writeFileSync(target('spark1'), 'not a library\n');
  writeFileSync(target('spark2'), readFileSync(LIBRARIES.overlay).subarray(0, 20_000));
  rmSync(target('spark3'));
  execFileSync('mkfifo', [target('spark3')]);
  copyFileSync(LIBRARIES.mia, target('spark4'));
  const r = await check(l);
  assert.deepEqual(
    kinds(r),
    [
      ['enginelib.file', 'error', 0],
      ['enginelib.file', 'error', 1],
      ['enginelib.file', 'error', 2],
      ['enginelib.abi', 'error', 3],
    ],
    dump(r),
  );
  const copy = new RegExp(`^spark engine-lib --stack overlay --copy ${l.dir} on that node$`);
  const path = `${l.dir}/libengram_rows.so`;
  on(
    r,
    'enginelib.file',
    0,
    new RegExp(
      `^${path} on node 0 \\(spark1\\) \\(mounted over /opt/dsv41-spark/overlay/libengram_rows.so\\) is not an ELF file`,
    ),
    copy,
  );
  on(
    r,
    'enginelib.file',
    1,
    /is no usable ELF file: truncated or corrupt: section header 0 at offset \d+ lies past the file's 20000 bytes$/,
    copy,
  );
  on(r, 'enginelib.file', 2, /is not a regular file \(a FIFO blocks the loader/, copy);
  on(r, 'enginelib.abi', 3, /is librow_store\.so, the other stack's library/, copy);
});

test('a directory, a dangling link, no file, a library with an extra symbol and one of another machine', async () => {
  const l = await defaultLibs();
  place(l, LIBRARIES);
  const target = (host: string) => join(l.realDir(host), 'libengram_rows.so');
  rmSync(target('spark1'));
  mkdirSync(target('spark1'));
  rmSync(target('spark2'));
  symlinkSync(join(l.realDir('spark2'), 'gone.so'), target('spark2'));
  rmSync(target('spark3'));
  // spark4: the Mia library with the overlay's version script would be too much to build here;
  // a library of the other machine is the aarch64 build when there is one, else spark.node
  // (which also exports far more than the ABI).
  const foreign = existsSync(ARM64.overlay) && THIS_MACHINE === 'x86_64';
  copyFileSync(foreign ? ARM64.overlay : join(packageRoot(), 'build', 'Release', 'spark.node'), target('spark4'));
  const r = await check(l);
  const copy = new RegExp(`^spark engine-lib --stack overlay --copy ${l.dir} on that node$`);
  on(r, 'enginelib.file', 0, /is a directory, not a library/, copy);
  on(r, 'enginelib.file', 1, /is a dangling symbolic link: docker refuses to mount it/, copy);
  // The mount is read-only: the launch mounts it with --mount, which refuses a missing source.
  on(
    r,
    'enginelib.file',
    2,
    /does not exist: docker refuses to start the container \(--mount needs its source to exist\)$/,
    copy,
  );
  if (foreign) {
    on(
      r,
      'enginelib.file',
      3,
      /is built for aarch64, this node is x86_64: the stack's dlopen fails$/,
      /^rebuild spark for x86_64 on that node \(npm install in its checkout\), then spark engine-lib/,
    );
  } else {
    on(
      r,
      'enginelib.abi',
      3,
      /does not export engram_rows_abi_version, .*: the stack looks every ABI symbol up at import and fails; exports symbols beyond the ABI \(_ZN5spark.*\): not a build of native\/engine-libs\/overlay$/,
      copy,
    );
    on(r, 'enginelib.loads', 3, /needs libstdc\+\+\.so\.6/, copy);
  }
});

test('one node with another build: enginelib.same-build names it and the build the others have', async () => {
  const l = await defaultLibs();
  place(l, LIBRARIES);
  // The same library with bytes appended past its sections: still a good ELF, another sha256.
  writeFileSync(
    join(l.realDir('spark3'), 'librow_store.so'),
    Buffer.concat([readFileSync(LIBRARIES.mia), Buffer.from('x')]),
  );
  const r = await check(l);
  assert.deepEqual(kinds(r), [['enginelib.same-build', 'error', 2]], dump(r));
  on(
    r,
    'enginelib.same-build',
    2,
    new RegExp(
      `^${l.dir}/librow_store\\.so on node 2 \\(spark3\\) \\(mounted over /opt/dsv41/adapter/librow_store\\.so\\) is another build \\(sha256 [0-9a-f]{12}…\\) than on node 0 \\(spark1\\), node 1 \\(spark2\\), node 3 \\(spark4\\) \\([0-9a-f]{12}…\\)$`,
    ),
    new RegExp(`^spark engine-lib --stack mia --copy ${l.dir} on that node, with the spark`),
  );
});

test('an overlay library without the ABI note: a warning that its version is not known', async (t) => {
  if (!needs(t, 'binutils')) return;
  const l = await defaultLibs();
  place(l, LIBRARIES);
  const stripped = join(l.realDir('spark1'), 'libengram_rows.so');
  execFileSync('objcopy', ['--remove-section', '.note.spark.abi', LIBRARIES.overlay, stripped]);
  const r = await check(l);
  assert.deepEqual(
    kinds(r).filter((k) => k[0] !== 'enginelib.same-build'),
    [['enginelib.abi', 'warn', 0]],
    dump(r),
  );
  on(
    r,
    'enginelib.abi',
    0,
    /carries no ABI version note \(\.note\.spark\.abi\): not spark's build/,
    /--stack overlay --copy/,
  );
});

test('aarch64 nodes: the aarch64 build passes, the x86-64 build is refused with "rebuild for aarch64"', async (t) => {
  if (!existsSync(ARM64.overlay) || !existsSync(ARM64.mia)) {
    t.skip('no aarch64 build in build/arm64: npm run test:arm64 leaves one there');
    return;
  }
  const l = await libs(defaultHosts().map((h) => ({ ...h, machine: 'aarch64' })));
  place(l, ARM64);
  const good = await check(l);
  assert.deepEqual(good.findings, [], dump(good));
  assert.deepEqual(good.ran, RULES);
  copyFileSync(LIBRARIES.overlay, join(l.realDir('spark2'), 'libengram_rows.so'));
  const r = await check(l);
  assert.deepEqual(kinds(r), [['enginelib.file', 'error', 1]], dump(r));
  on(
    r,
    'enginelib.file',
    1,
    /is built for x86_64, this node is aarch64: the stack's dlopen fails$/,
    new RegExp(
      `^rebuild spark for aarch64 on that node \\(npm install in its checkout\\), then spark engine-lib --stack overlay --copy ${l.dir} on that node$`,
    ),
  );
});

test('spark on the nodes reads the files itself: the same verdicts as the sh command', async () => {
  const l = await libs(defaultHosts().map((h) => ({ ...h, spark: 'real' as const })));
  place(l, LIBRARIES);
  writeFileSync(join(l.realDir('spark2'), 'libengram_rows.so'), readFileSync(LIBRARIES.overlay).subarray(0, 20_000));
  copyFileSync(LIBRARIES.overlay, join(l.realDir('spark4'), 'librow_store.so'));
  const r = await check(l);
  assert.deepEqual(
    kinds(r),
    [
      ['enginelib.file', 'error', 1],
      ['enginelib.abi', 'error', 3],
    ],
    dump(r),
  );
  on(r, 'enginelib.file', 1, /is no usable ELF file: truncated/, /--stack overlay --copy/);
  on(r, 'enginelib.abi', 3, /is libengram_rows\.so, the other stack's library/, /--stack mia --copy/);
});

test('spark on a node that leaves a library file out of its answer: the sh command reads the files instead', async () => {
  const l = await libs(defaultHosts().map((h, i) => (i === 3 ? { ...h, spark: 'real' as const } : h)));
  place(l, LIBRARIES);
  writeFileSync(join(l.realDir('spark4'), 'libengram_rows.so'), readFileSync(LIBRARIES.overlay).subarray(0, 20_000));
  // spark4's spark answers its facts without the library files.
  const spark = join(dirname(l.c.hostRoot('spark4')), 'bin', REMOTE_BIN);
  const drop =
    'let s="";process.stdin.on("data",(d)=>(s+=d)).on("end",()=>{const j=JSON.parse(s);j.engineLibs.files=[];process.stdout.write(JSON.stringify(j))})';
  writeFileSync(
    spark,
    readFileSync(spark, 'utf8').replace(
      /^exec (.*)$/m,
      (_, real: string) => `[ "$1" = preflight ] || exec ${real}\n${real} | "${process.execPath}" -e '${drop}'`,
    ),
  );
  assert.match(readFileSync(spark, 'utf8'), /^\[ "\$1" = preflight \] \|\| exec "/m);
  // Two answers from spark4 (spark's, then the sh command's) on a loaded machine: time for both.
  const r = await check(l, 90_000);
  assert.deepEqual(kinds(r), [['enginelib.file', 'error', 3]], dump(r));
  on(r, 'enginelib.file', 3, /is no usable ELF file: truncated/, /--stack overlay --copy/);
});

/** Milliseconds `f` takes, with its result. */
function timed<T>(f: () => T): { ms: number; value: T } {
  const start = performance.now();
  const value = f();
  return { ms: performance.now() - start, value };
}

test('30,000 note sections over the same bytes: refused in milliseconds, by the sh command and by spark on the node, naming the file and the bound', async () => {
  const l = await libs(defaultHosts().map((h, i) => (i === 1 ? { ...h, spark: 'real' as const } : h)));
  place(l, LIBRARIES);
  const flood = noteFlood(30_000, 900_000);
  for (const host of ['spark1', 'spark2']) writeFileSync(join(l.realDir(host), 'libengram_rows.so'), flood);
  const file = join(l.realDir('spark1'), 'libengram_rows.so');
  // What each side does with the file: spark on a node reads it in-process; for a node without
  // spark, this machine reads the bytes the sh command sends.
  const inProcess = timed(() => collectEngineLibs([file]));
  const answer = execFileSync('sh', ['-c', engineLibScript([file])], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const fromSh = timed(() => parseEngineLibs(answer, [file]));
  const refused = `refused: 30000 section headers, more than the ${ELF_MAX_SECTIONS} this reader reads (a shared object has a few dozen)`;
  for (const side of [inProcess, fromSh]) {
    assert.ok(side.ms < 2000, `${side.ms} ms`);
    assert.equal(side.value.files[0]!.elfError, refused);
  }
  const r = await check(l);
  assert.deepEqual(
    kinds(r),
    [
      ['enginelib.file', 'error', 0],
      ['enginelib.file', 'error', 1],
    ],
    dump(r),
  );
  for (const rank of [0, 1])
    on(
      r,
      'enginelib.file',
      rank,
      new RegExp(
        `^${l.dir}/libengram_rows\\.so on node ${rank} \\(spark${rank + 1}\\) \\(mounted over /opt/dsv41-spark/overlay/libengram_rows\\.so\\) is no usable ELF file: ${refused.replace(/[()]/g, '\\$&')}$`,
      ),
      /--stack overlay --copy/,
    );
});

test('a 256 KiB file over the library, read by the sh command: an error on that node, exit 1; one too large, or an answer cut short: "could not be read"', async () => {
  const l = await libs();
  place(l, LIBRARIES);
  const target = (host: string) => join(l.realDir(host), 'libengram_rows.so');
  // Random bytes that cannot start like an ELF file. (5 MiB, a library's size, and 64 MiB, the
  // most sent: test/long/engine-lib-limit.test.ts.)
  writeFileSync(target('spark1'), Buffer.concat([Buffer.from([0]), randomBytes((256 << 10) - 1)]));
  truncateSync(target('spark3'), ENGINE_LIB_MAX_BYTES + 1);
  // spark4's shell dies as the library command starts (its uname -m kills it).
  const uname = join(dirname(l.c.hostRoot('spark4')), 'bin', 'uname');
  writeFileSync(
    uname,
    readFileSync(uname, 'utf8').replace(
      '#!/bin/sh\n',
      '#!/bin/sh\nif [ "$1" = -m ]; then kill -TERM "$PPID"; exit 1; fi\n',
    ),
  );
  const run = await cli(
    [
      'preflight',
      l.c.recipe(l.recipeText),
      '--cluster',
      l.c.clusterFile(),
      '--sysfs',
      join(l.c.root, 'sys'),
      '--only',
      'enginelib',
      '--node-timeout',
      '60',
      '--json',
    ],
    l.c.env(),
  );
  const r = JSON.parse(run.stdout) as PreflightReport;
  assert.equal(run.code, 1, run.stderr);
  assert.deepEqual(
    kinds(r),
    [0, 2, 3, 3].map((rank) => ['enginelib.file', 'error', rank]),
    dump(r),
  );
  assert.deepEqual(r.skipped, []);
  assert.equal(r.counts.error, 4);
  const copy = /--stack overlay --copy/;
  on(
    r,
    'enginelib.file',
    0,
    /libengram_rows\.so\) is not an ELF file \(a text file or a copy that went wrong\)$/,
    copy,
  );
  on(r, 'enginelib.file', 2, /libengram_rows\.so\) could not be read \(larger than 67108864 bytes\)$/, copy);
  // Both of spark4's libraries: nobody read them.
  const cut = r.findings.filter((f) => f.node?.rank === 3).map((f) => f.message);
  assert.equal(cut.length, 2, dump(r));
  for (const [i, name] of ['libengram_rows.so', 'librow_store.so'].entries())
    assert.match(
      cut[i]!,
      new RegExp(
        `/${name.replace('.', '\\.')} on node 3 \\(spark4\\) .* could not be read \\(the library check did not finish \\((exit 143|killed by SIGTERM)\\b[^)]*\\)\\)$`,
      ),
    );
});
