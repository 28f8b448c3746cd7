// Large ranges written with O_DIRECT through the writer ring: the bytes on disk are exactly
// what the producer made, edges included, and a writer's failure reaches the caller.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, constants, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeRange, type Producer } from '../../src/synth/aligned-write.js';
import { RingWriter } from '../../src/synth/aligned-write-ring.js';
import { tempDir } from '../helpers/tmp.js';
import { synthRow, tableBytes } from '../../src/synth/synth-rows.js';

/** Byte i of the file is a hash of i, so a misplaced chunk cannot match. */
const byteAt = (i: number): number => (Math.imul(i ^ (i >>> 13), 0x9e3779b1) >>> 24) & 0xff;
const producer: Producer = (at, into) => {
  for (let i = 0; i < into.length; i++) into[i] = byteAt(at + i);
};

function directWorksIn(dir: string): boolean {
  try {
    closeSync(
      openSync(
        join(dir, 'probe'),
        constants.O_WRONLY | constants.O_CREAT | (constants as Record<string, number>).O_DIRECT,
      ),
    );
    return true;
  } catch {
    return false;
  }
}

for (const [name, opts] of [
  ['inline', { ringMin: Infinity }],
  ['through the ring (3 writers, 64 KiB slots)', { ringMin: 0, workers: 3, slotBytes: 64 << 10 }],
] as const) {
  test(`writeRange ${name}: an unaligned range lands byte for byte, around bytes written before it`, () => {
    const dir = tempDir();
    const path = join(dir, 'f.bin');
    const start = 664;
    const length = 3 * (1 << 20) + 4096 * 7 + 123;
    writeFileSync(path, Buffer.alloc(start, 0xaa));
    const fd = openSync(path, 'r+');
    let written;
    try {
      written = writeRange(fd, start, length, producer, opts);
    } finally {
      closeSync(fd);
    }
    const got = readFileSync(path);
    assert.equal(got.length, start + length);
    assert.ok(got.subarray(0, start).equals(Buffer.alloc(start, 0xaa)), 'bytes before the range untouched');
    const want = Buffer.alloc(length);
    producer(start, want);
    const bad = got.subarray(start).findIndex((b, i) => b !== want[i]);
    assert.equal(bad, -1, `first wrong byte at file offset ${start + bad}`);
    const interior = Math.floor((start + length) / 4096) * 4096 - 4096;
    assert.equal(written.directBytes, directWorksIn(dir) ? interior : 0);
  });
}

test("a writer thread's failure is thrown by the ring, with its code", () => {
  const path = join(tempDir(), 'ro.bin');
  writeFileSync(path, Buffer.alloc(8192));
  const fd = openSync(path, 'r'); // writes fail with EBADF
  const ring = new RingWriter(fd, 2, 4096);
  try {
    assert.throws(
      () => {
        for (let i = 0; i < 8; i++) {
          ring.next().fill(1);
          ring.submit(i * 4096, 4096);
        }
        ring.finish();
      },
      { code: 'EBADF' },
    );
  } finally {
    ring.close();
    closeSync(fd);
  }
});

test('writer threads that fill their own slots (synth table bytes) write the same file as the main thread would', () => {
  const dir = tempDir();
  const path = join(dir, 'table.bin');
  const [layer, rows, dim, at, seed] = [14, 20000, 256, 664, 3];
  const length = rows * (dim + dim / 32);
  writeFileSync(path, Buffer.alloc(at, 0x20));
  const args = [layer, rows, dim, at, seed];
  const fill = { module: new URL('../../src/synth/synth-rows.js', import.meta.url).href, name: 'tableBytes', args };
  const fd = openSync(path, 'r+');
  try {
    writeRange(fd, at, length, tableBytes(layer, rows, dim, at, seed), {
      ringMin: 0,
      workers: 3,
      slotBytes: 128 << 10,
      fill,
    });
  } finally {
    closeSync(fd);
  }
  const got = readFileSync(path);
  assert.equal(got.length, at + length);
  for (const id of [0, 1, 777, rows - 1]) {
    const row = synthRow(layer, id, dim, seed);
    assert.ok(got.subarray(at + id * dim, at + (id + 1) * dim).equals(row.subarray(0, dim)), `weight row ${id}`);
    const s = at + rows * dim + id * (dim / 32);
    assert.ok(got.subarray(s, s + dim / 32).equals(row.subarray(dim)), `scale row ${id}`);
  }
  const want = Buffer.alloc(length);
  tableBytes(layer, rows, dim, at, seed)(at, want);
  assert.ok(got.subarray(at).equals(want));
});
