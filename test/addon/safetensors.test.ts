import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SparkError } from '../../src/errors/errors.js';
import type { ErrorCode } from '../../src/errors/error-codes.js';
import {
  SAFETENSORS_DTYPE_BITS,
  parseHeaderBytes,
  readHeaders,
  readHeadersSettled,
  type SafetensorsDtype,
} from '../../src/addon/safetensors.js';
import { bytesReadByProcess, entry, header, writeSafetensors, type Int } from '../helpers/safetensors.js';

const dir = mkdtempSync(join(tmpdir(), 'spark-safetensors-'));
after(() => rmSync(dir, { recursive: true, force: true }));

let fileCounter = 0;
function file(
  name: string,
  headerText: string | Buffer,
  dataLength: Int,
  options?: Parameters<typeof writeSafetensors>[3],
): string {
  const path = join(dir, `${++fileCounter}-${name}.safetensors`);
  writeSafetensors(path, headerText, dataLength, options);
  return path;
}

/**
 * Reads one file expecting failure: the code, a message naming the file (and the tensor when
 * there is one), and a fast failure that read nothing past the header.
 */
async function expectFailure(
  path: string,
  code: ErrorCode,
  tensor?: string,
  headerBytes = 1 << 16,
): Promise<SparkError> {
  const readBefore = bytesReadByProcess();
  const started = performance.now();
  const err = await readHeaders([path]).then(
    () => assert.fail(`expected ${code} for ${path}`),
    (e: unknown) => e,
  );
  const ms = performance.now() - started;
  const read = bytesReadByProcess() - readBefore;
  assert.ok(err instanceof SparkError, String(err));
  assert.equal(err.code, code, err.message);
  assert.equal(err.exitCode, 2);
  assert.ok(err.message.includes(path), `message names the file: ${err.message}`);
  assert.equal(err.details.path, path);
  assert.ok(!err.message.includes('\n'), 'one line');
  if (tensor !== undefined) {
    assert.ok(err.message.includes(`'${tensor}'`), `message names tensor '${tensor}': ${err.message}`);
    assert.equal(err.details.tensor, tensor);
  }
  assert.ok(ms < 2000, `failed fast (${ms.toFixed(0)} ms)`);
  assert.ok(read < headerBytes + 16384, `read ${read} bytes, expected no more than the header`);
  return err;
}

const u8 = (name: string, n: number, begin = 0): Record<string, string> => ({
  [name]: entry('U8', [n], begin, begin + n),
});

test('a file shorter than 8 bytes is truncated', async () => {
  const path = join(dir, 'tiny.safetensors');
  writeFileSync(path, Buffer.from([1, 2, 3]));
  const err = await expectFailure(path, 'E_SAFETENSORS_TRUNCATED');
  assert.match(err.message, /3 bytes, shorter than the 8-byte header length/);
});

test('a header length past the 100,000,000 cap is refused before any allocation', async () => {
  await expectFailure(file('cap', '{}', 0, { lengthField: 100_000_001n }), 'E_SAFETENSORS_HEADER_SIZE');
  const err = await expectFailure(file('cap-huge', '{}', 0, { lengthField: 2n ** 63n }), 'E_SAFETENSORS_HEADER_SIZE');
  assert.match(err.message, /9223372036854775808 bytes, more than the 100000000/);
});

test('a header longer than the file is truncated', async () => {
  const err = await expectFailure(
    file('header-past-end', '{}', 0, { lengthField: 99_999_999n }),
    'E_SAFETENSORS_TRUNCATED',
  );
  assert.match(err.message, /says 99999999 bytes but only 2 follow it/);
});

test('bad UTF-8 in the header', async () => {
  const bytes = Buffer.concat([Buffer.from('{"a'), Buffer.from([0xc0, 0xaf]), Buffer.from('":{}}')]);
  const err = await expectFailure(file('utf8', bytes, 0), 'E_SAFETENSORS_UTF8');
  assert.equal(err.details.offset, 8 + 3);
});

test('deep nesting is refused without exhausting the stack', async () => {
  const err = await expectFailure(file('nesting', '['.repeat(100_000), 0), 'E_SAFETENSORS_NESTING', undefined, 100_000);
  assert.match(err.message, /deeper than 64 levels/);
});

test('a header that is not an object', async () => {
  await expectFailure(file('array', '[1, 2]', 0), 'E_SAFETENSORS_JSON');
  await expectFailure(file('string', '"model"', 0), 'E_SAFETENSORS_JSON');
});

test('a trailing comma', async () => {
  const err = await expectFailure(file('trailing-comma', `{"a":${entry('U8', [1], 0, 1)},}`, 1), 'E_SAFETENSORS_JSON');
  assert.match(err.message, /trailing comma/);
});

test('duplicate tensor names', async () => {
  const text = `{"w":${entry('U8', [4], 0, 4)},"w":${entry('U8', [4], 4, 8)}}`;
  const err = await expectFailure(file('dup-name', text, 8), 'E_SAFETENSORS_DUPLICATE', 'w');
  assert.match(err.message, /appears twice/);
});

test('duplicate keys within an entry', async () => {
  const text = '{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"shape":[4]}}';
  const err = await expectFailure(file('dup-key', text, 4), 'E_SAFETENSORS_DUPLICATE', 'w');
  assert.match(err.message, /the key 'shape' appears twice/);
});

test('an unknown key in an entry', async () => {
  const text = '{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"offset":0}}';
  const err = await expectFailure(file('unknown-key', text, 4), 'E_SAFETENSORS_ENTRY', 'w');
  assert.match(err.message, /unknown key 'offset'/);
});

test('a missing key in an entry', async () => {
  const err = await expectFailure(
    file('missing-key', '{"w":{"dtype":"U8","shape":[4]}}', 4),
    'E_SAFETENSORS_ENTRY',
    'w',
  );
  assert.match(err.message, /no 'data_offsets'/);
});

test('a bad dtype', async () => {
  const err = await expectFailure(
    file('dtype', header({ w: entry('F128', [1], 0, 16) }), 16),
    'E_SAFETENSORS_DTYPE',
    'w',
  );
  assert.match(err.message, /unknown dtype "F128" \(expected one of BOOL, F4, /);
});

test('a negative dimension', async () => {
  await expectFailure(file('negative', header({ w: entry('U8', '[-4]', 0, 4) }), 4), 'E_SAFETENSORS_SHAPE', 'w');
});

test('non-integer dimensions: 1.5, "3", 1e3', async () => {
  for (const dim of ['1.5', '"3"', '1e3']) {
    const err = await expectFailure(
      file('non-integer', header({ w: entry('U8', `[2,${dim}]`, 0, 6) }), 6),
      'E_SAFETENSORS_SHAPE',
      'w',
    );
    assert.ok(err.message.includes(`shape[1] is ${dim}`), err.message);
  }
});

test('an element count past 2^64-1', async () => {
  const text = header({ w: entry('U8', [2n ** 32n, 2n ** 32n], 0, 0) });
  await expectFailure(file('elements-overflow', text, 0), 'E_SAFETENSORS_OVERFLOW', 'w');
});

test('an offset past 2^64-1 is an overflow, not rounded', async () => {
  const text = header({ w: entry('U8', [4], 0, '18446744073709551620') });
  const err = await expectFailure(file('offset-overflow', text, 4), 'E_SAFETENSORS_OVERFLOW', 'w');
  assert.match(err.message, /data_offsets\[1\] 18446744073709551620 does not fit in 64 bits/);
});

test('three data offsets', async () => {
  const text = '{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4,8]}}';
  const err = await expectFailure(file('three-offsets', text, 4), 'E_SAFETENSORS_OFFSETS', 'w');
  assert.match(err.message, /3 values, expected exactly two/);
});

test('begin after end', async () => {
  await expectFailure(file('begin-after-end', header({ w: entry('U8', [0], 4, 0) }), 4), 'E_SAFETENSORS_OFFSETS', 'w');
});

test('overlapping tensors', async () => {
  const text = header({ a: entry('U8', [128], 0, 128), b: entry('U8', [128], 64, 192) });
  const err = await expectFailure(file('overlap', text, 192), 'E_SAFETENSORS_LAYOUT', 'b');
  assert.match(err.message, /overlaps tensor 'a' at data offset 64/);
});

test('a gap between tensors', async () => {
  const text = header({ a: entry('U8', [128], 0, 128), b: entry('U8', [64], 192, 256) });
  const err = await expectFailure(file('gap', text, 256), 'E_SAFETENSORS_LAYOUT', 'b');
  assert.match(err.message, /64 bytes belong to no tensor/);
});

test("a tensor's bytes differ from shape x dtype", async () => {
  const err = await expectFailure(
    file('size-mismatch', header({ w: entry('F32', [2, 3], 0, 20) }), 20),
    'E_SAFETENSORS_OFFSETS',
    'w',
  );
  assert.match(err.message, /hold 20 bytes but shape \[2, 3\] of F32 needs 24/);
});

test('a sub-byte dtype with a fractional byte count (F4, odd elements)', async () => {
  const err = await expectFailure(file('f4-odd', header({ w: entry('F4', [3], 0, 2) }), 2), 'E_SAFETENSORS_SHAPE', 'w');
  assert.match(err.message, /not a whole number of bytes/);
});

test('trailing bytes after the last tensor', async () => {
  const err = await expectFailure(file('trailing-bytes', header(u8('w', 16)), 20), 'E_SAFETENSORS_DATA_LENGTH');
  assert.match(err.message, /4 trailing bytes/);
});

test('a data section shorter than the header implies', async () => {
  const text = header({ a: entry('U8', [4096], 0, 4096), b: entry('F8_E4M3', [384000, 256], 4096, 4096 + 98_304_000) });
  const err = await expectFailure(file('truncated-data', text, 4096), 'E_SHARD_TRUNCATED', 'b');
  assert.match(err.message, /the header implies 98308096 bytes of data, the file holds 4096; re-download/);
});

test('a header padded with NUL bytes', async () => {
  const text = Buffer.concat([Buffer.from(header(u8('w', 4))), Buffer.alloc(6)]);
  const err = await expectFailure(file('nul-padding', text, 4), 'E_SAFETENSORS_JSON');
  assert.match(err.message, /NUL bytes; safetensors headers may only be padded with spaces/);
});

test('__metadata__ with a non-string value', async () => {
  const err = await expectFailure(
    file('metadata', header(u8('w', 4), '{"format":"pt","step":3}'), 4),
    'E_SAFETENSORS_METADATA',
  );
  assert.match(err.message, /__metadata__ key 'step' has the value 3/);
});

test('missing files, directories and FIFOs (bad input, exit 2; a FIFO never blocks)', { timeout: 10_000 }, async () => {
  const missing = join(dir, 'nope.safetensors');
  const fifo = join(dir, 'fifo.safetensors');
  execFileSync('mkfifo', [fifo]);
  const [a, b, f] = await readHeadersSettled([missing, dir, fifo]);
  assert.ok(a instanceof SparkError && a.code === 'E_FILE_NOT_FOUND', String(a));
  assert.ok(a.message.includes(missing));
  assert.ok(b instanceof SparkError && b.code === 'E_NOT_A_FILE' && b.exitCode === 2, String(b));
  assert.match(b.message, /is a directory/);
  assert.ok(f instanceof SparkError && f.code === 'E_NOT_A_FILE' && f.message.includes(fifo), String(f));
  assert.match(f.message, /named pipe/);
  const [c] = await readHeadersSettled([`${missing}\0.safetensors`]);
  assert.ok(c instanceof SparkError && c.code === 'E_USAGE', String(c));
});

test('valid: spaces around the header, metadata, zero-size tensors', async () => {
  const text = `   ${header({ b: entry('F32', [2, 3], 8, 32), a: entry('BF16', [4], 0, 8), z: entry('U8', [0], 32, 32) }, '{"format":"pt","__proto__":"x"}')}  `;
  const path = file('valid', text, 32);
  const [h] = await readHeaders([path]);
  const n = Buffer.byteLength(text);
  assert.equal(h.path, path);
  assert.equal(h.headerLength, n);
  assert.equal(h.dataStart, 8 + n);
  assert.equal(h.dataLength, 32);
  assert.equal(h.fileSize, 8 + n + 32);
  assert.deepEqual(
    h.tensors.map((t) => [t.name, t.dtype, t.shape, t.dataOffsets, t.fileOffset, t.bytes]),
    [
      ['a', 'BF16', [4], [0, 8], 8 + n, 8],
      ['b', 'F32', [2, 3], [8, 32], 8 + n + 8, 24],
      ['z', 'U8', [0], [32, 32], 8 + n + 32, 0],
    ],
  );
  assert.equal(h.metadata.format, 'pt');
  assert.equal(Object.getPrototypeOf(h.metadata), null);
  assert.deepEqual(Object.keys(h.metadata), ['format', '__proto__']);
});

test('valid: an empty tensor list', async () => {
  const [a, b] = await readHeaders([file('empty', '{}', 0), file('empty-meta', '{"__metadata__":{}}', 0)]);
  assert.deepEqual(a.tensors, []);
  assert.equal(a.fileSize, 10);
  assert.deepEqual(b.tensors, []);
});

test('valid: every dtype with its bit size', async () => {
  const entries: Record<string, string> = {};
  let at = 0;
  const dtypes = Object.keys(SAFETENSORS_DTYPE_BITS) as SafetensorsDtype[];
  assert.equal(dtypes.length, 22);
  for (const dtype of dtypes) {
    const bytes = SAFETENSORS_DTYPE_BITS[dtype]; // shape [2, 4]: 8 elements, whole bytes for every dtype
    entries[`t.${dtype}`] = entry(dtype, [2, 4], at, at + bytes);
    at += bytes;
  }
  const [h] = await readHeaders([file('dtypes', header(entries), at)]);
  assert.deepEqual(
    h.tensors.map((t) => [t.dtype, t.bytes]),
    dtypes.map((d) => [d, SAFETENSORS_DTYPE_BITS[d]]),
  );
});

test('tensors past 2^32 and 2^36 bytes in a sparse file: exact file offsets, no data read', async () => {
  const a = 2 ** 32 + 7;
  const b = 2 ** 36; // BF16 [2^35]
  const text = header({
    a: entry('U8', [a], 0, a),
    b: entry('BF16', [2 ** 35], a, a + b),
    c: entry('F32', [3], a + b, a + b + 12),
  });
  const path = file('sparse', text, a + b + 12);
  const before = bytesReadByProcess();
  const [h] = await readHeaders([path]);
  assert.ok(bytesReadByProcess() - before < 16384, 'read the header only');
  const start = 8 + Buffer.byteLength(text);
  assert.deepEqual(
    h.tensors.map((t) => [t.name, t.fileOffset, t.bytes]),
    [
      ['a', start, a],
      ['b', start + a, b],
      ['c', start + a + b, 12],
    ],
  );
  assert.equal(h.fileSize, start + a + b + 12);
  assert.equal(h.fileSize, 73_014_444_059 + Buffer.byteLength(text));
});

test('sizes past 2^53 come back as exact bigints', () => {
  const n = 2n ** 60n + 3n;
  const text = Buffer.from(header({ a: entry('U8', [3], 0, 3), b: entry('U8', [n], 3, n + 3n) }));
  const h = parseHeaderBytes(text, n + 3n, 'big.safetensors');
  assert.equal(h.tensors[1].bytes, n);
  assert.equal(h.tensors[1].fileOffset, 8 + text.length + 3);
  assert.deepEqual(h.tensors[1].dataOffsets, [3, n + 3n]);
  assert.equal(h.fileSize, BigInt(8 + text.length) + n + 3n);
  assert.throws(
    () => parseHeaderBytes(text, 3, 'big.safetensors'),
    (e: unknown) => e instanceof SparkError && e.code === 'E_SHARD_TRUNCATED' && e.details.tensor === 'b',
  );
});

test('many files in parallel, results in path order; readHeaders rejects with the first failing path', async () => {
  const sub = join(dir, 'many');
  mkdirSync(sub);
  const paths: string[] = [];
  for (let i = 0; i < 64; i++) {
    const p = join(sub, `model-${String(i).padStart(5, '0')}.safetensors`);
    writeSafetensors(p, header(u8(`layers.${i}.w`, i + 1)), i + 1);
    paths.push(p);
  }
  const headers = await readHeaders(paths, { threads: 8 });
  assert.deepEqual(
    headers.map((h) => [h.path, h.tensors[0].name, h.tensors[0].bytes]),
    paths.map((p, i) => [p, `layers.${i}.w`, i + 1]),
  );
  const bad1 = file('bad-first', '{', 0);
  const bad2 = file('bad-second', '[]', 0);
  const settled = await readHeadersSettled([paths[0], bad1, paths[1], bad2]);
  assert.deepEqual(
    settled.map((r) => (r instanceof SparkError ? r.code : 'ok')),
    ['ok', 'E_SAFETENSORS_JSON', 'ok', 'E_SAFETENSORS_JSON'],
  );
  await assert.rejects(
    readHeaders([paths[0], bad2, bad1]),
    (e: unknown) => e instanceof SparkError && e.details.path === bad2,
  );
  assert.deepEqual(await readHeaders([]), []);
});

test('bad arguments are usage errors', async () => {
  await assert.rejects(
    readHeaders(['x'], { threads: 0 }),
    (e: unknown) => e instanceof SparkError && e.code === 'E_USAGE',
  );
  await assert.rejects(
    readHeaders([1 as unknown as string]),
    (e: unknown) => e instanceof SparkError && e.code === 'E_USAGE',
  );
});
