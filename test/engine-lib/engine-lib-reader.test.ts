// The one ELF reader of the engine libraries (src/files/elf.ts) on the real builds: what it
// finds is what readelf finds (check-lib.sh passes on the same files), the overlay's ABI note
// says what engram_rows_abi_version() returns when Python ctypes calls it, a cut or scribbled
// copy only ever gives an ElfError, and a file whose sections ask for far more work than a
// library's is refused at once, naming the bound it passed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ELF_MAX_SECTIONS, ELF_MAX_WALK_BYTES, ElfError, readElf } from '../../src/files/elf.js';
import { abiSymbols } from '../../src/engine-lib/engine-lib.js';
import { packageRoot } from '../../src/addon/index.js';
import { LIBRARIES } from '../helpers/engine-lib.js';
import { noteFlood, oneLongName } from '../helpers/crafted-elf.js';
import { python3 } from '../helpers/python3.js';

const THIS_MACHINE = process.arch === 'arm64' ? 'aarch64' : 'x86_64';

test("the overlay library's ABI note is what engram_rows_abi_version() returns through ctypes", () => {
  const r = spawnSync(
    python3(),
    ['-c', 'import ctypes, sys; print(ctypes.CDLL(sys.argv[1]).engram_rows_abi_version())', LIBRARIES.overlay],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  const returned = Number(r.stdout.trim());
  assert.equal(returned, 3);
  assert.equal(readElf(readFileSync(LIBRARIES.overlay)).abiNote, returned);
  assert.equal(readElf(readFileSync(LIBRARIES.mia)).abiNote, undefined);
});

test('the reader finds the exports, NEEDED and glibc versions of both builds', () => {
  for (const [stack, file] of Object.entries(LIBRARIES) as ['overlay' | 'mia', string][]) {
    const elf = readElf(readFileSync(file));
    assert.deepEqual(elf.exports, abiSymbols(stack));
    assert.equal(elf.machine, THIS_MACHINE);
    assert.equal(elf.type, 3);
    assert.ok(elf.needed.includes('libc.so.6'), elf.needed.join(' '));
    assert.match(elf.glibcMax ?? '', /^GLIBC_2\.\d+$/);
  }
  const addon = readElf(readFileSync(join(packageRoot(), 'build', 'Release', 'spark.node')));
  assert.ok(addon.needed.includes('libstdc++.so.6'), addon.needed.join(' '));
});

test('the aarch64 builds (npm run test:arm64) read the same, the note included', (t) => {
  const dir = join(packageRoot(), 'build', 'arm64');
  if (!existsSync(join(dir, 'libengram_rows.so'))) {
    t.skip('no aarch64 build in build/arm64: npm run test:arm64 leaves one there');
    return;
  }
  const overlay = readElf(readFileSync(join(dir, 'libengram_rows.so')));
  assert.deepEqual([overlay.machine, overlay.abiNote, overlay.exports], ['aarch64', 3, abiSymbols('overlay')]);
  assert.deepEqual(readElf(readFileSync(join(dir, 'librow_store.so'))).exports, abiSymbols('mia'));
});

test('every cut of the file and scribbled bytes give an ElfError or a summary, never another failure', () => {
  const good = readFileSync(LIBRARIES.mia);
  const cuts = [0, 3, 4, 16, 63, 64, 65, 1000, 4096, good.length >> 1, good.length - 64, good.length - 1];
  for (let n = 0; n < 200; n++) cuts.push(Math.floor((((n * 7919) % 1000) / 1000) * good.length));
  for (const n of cuts) {
    try {
      readElf(good.subarray(0, n));
    } catch (err) {
      assert.ok(err instanceof ElfError, `cut at ${n}: ${String(err)}`);
    }
  }
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
  for (let k = 0; k < 300; k++) {
    const b = Buffer.from(good);
    for (let j = 0; j < 8; j++) b[rand() % Math.min(b.length, k % 2 === 0 ? 4096 : b.length)] = rand() & 0xff;
    // The section headers sit at the end: scribble them too.
    for (let j = 0; j < 8; j++) b[b.length - 1 - (rand() % 2048)] = rand() & 0xff;
    try {
      readElf(b);
    } catch (err) {
      assert.ok(err instanceof ElfError, `scribble ${k}: ${String(err)}`);
    }
  }
});

/** readElf's ElfError message on `b`, and how long it took to give it. */
function refusal(b: Buffer): { message: string; ms: number } {
  const start = performance.now();
  try {
    readElf(b);
  } catch (err) {
    assert.ok(err instanceof ElfError, String(err));
    return { message: err.message, ms: performance.now() - start };
  }
  assert.fail('the file was read, not refused');
}

test('30,000 note sections over the same bytes (2.8 MB): refused at once by the section bound', () => {
  const file = noteFlood(30_000, 900_000);
  assert.equal(file.length, 2_820_064);
  const r = refusal(file);
  assert.equal(
    r.message,
    `refused: 30000 section headers, more than the ${ELF_MAX_SECTIONS} this reader reads (a shared object has a few dozen)`,
  );
  assert.ok(r.ms < 2000, `${r.ms} ms`);
});

test('1,000 note sections over the same 900 kB: refused by the walk bound, not walked 1,000 times', () => {
  const r = refusal(noteFlood(1000, 900_000));
  assert.equal(
    r.message,
    `refused: the note sections would walk more than the ${ELF_MAX_WALK_BYTES} bytes this reader walks in a file (a row library needs a few KiB)`,
  );
  assert.ok(r.ms < 2000, `${r.ms} ms`);
});

test('100,000 symbols all naming one 1 MiB string: refused by the walk bound, the name not scanned per symbol', () => {
  const r = refusal(oneLongName(100_000, 1 << 20));
  assert.ok(
    r.message.startsWith(
      `refused: the names in its string tables would walk more than the ${ELF_MAX_WALK_BYTES} bytes`,
    ),
    r.message,
  );
  assert.ok(r.ms < 2000, `${r.ms} ms`);
});
