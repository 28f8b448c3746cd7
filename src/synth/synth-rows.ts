// The row bytes of a synthetic snapshot: a documented function of (layer, row, column), so any
// reader (the row store, pack, verify, the Python reader, a test) can check what it read.
//
//   h = lowbias32(row_lo32 ^ imul(layer, 0x9E3779B1) ^ imul(row_hi32, 0x85EBCA77) ^ imul(seed, 0xC2B2AE35))
//     where lowbias32(x): x ^= x >>> 16; x = imul(x, 0x7FEB352D); x ^= x >>> 15;
//                         x = imul(x, 0x846CA68B); x ^= x >>> 16   (all uint32)
//   weight: little-endian uint32 word j (bytes 4j..4j+3) = (h ^ imul(j + 1, 0x9E3779B1)) & 0xFEFEFEFE
//           (every byte even, so never the F8_E4M3 NaN patterns 0x7F / 0xFF)
//   scale:  byte k = 120 + ((h >>> (4 * (k mod 8))) & 15)   (E8M0 exponents 2^-7 .. 2^8)
// A row is weight[dim] ‖ scale[dim / 32]; dim must be a multiple of 32. `seed` is the
// `spark synth --seed` value (default 0), recorded in config.json as `spark_synth.seed`.

export function rowHash(layer: number, row: number, seed = 0): number {
  const lo = row >>> 0;
  const hi = Math.floor(row / 0x1_0000_0000) >>> 0;
  let x = (lo ^ Math.imul(layer, 0x9e3779b1) ^ Math.imul(hi, 0x85ebca77) ^ Math.imul(seed, 0xc2b2ae35)) >>> 0;
  x ^= x >>> 16;
  x = Math.imul(x, 0x7feb352d);
  x ^= x >>> 15;
  x = Math.imul(x, 0x846ca68b);
  x ^= x >>> 16;
  return x >>> 0;
}

/**
 * Writes rows [start, start + count) of one layer: weights into `weight` (count x dim bytes;
 * none when undefined) and scales into `scale` (count x dim/32 bytes). Both buffers must be
 * 4-byte aligned views.
 */
export function fillRows(
  layer: number,
  start: number,
  count: number,
  dim: number,
  weight: Buffer | undefined,
  scale: Buffer,
  seed = 0,
): void {
  const words = weight ? dim / 4 : 0;
  const scaleBytes = dim / 32;
  const w32 = new Uint32Array(weight?.buffer ?? new ArrayBuffer(0), weight?.byteOffset ?? 0, count * words);
  const mixes = new Uint32Array(words);
  for (let j = 0; j < words; j++) mixes[j] = Math.imul(j + 1, 0x9e3779b1) >>> 0;
  const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
  for (let i = 0; i < count; i++) {
    const h = rowHash(layer, start + i, seed);
    const base = i * words;
    for (let j = 0; j < words; j++) w32[base + j] = (h ^ mixes[j]) & 0xfefefefe;
    const sBase = i * scaleBytes;
    for (let k = 0; k < scaleBytes; k++) scale[sBase + k] = 120 + ((h >>> (4 * (k & 7))) & 15);
  }
  if (!littleEndian) {
    for (let i = 0; i < count * words; i++) {
      const v = w32[i];
      w32[i] = ((v & 0xff) << 24) | ((v & 0xff00) << 8) | ((v >>> 8) & 0xff00) | (v >>> 24);
    }
  }
}

/**
 * The bytes of one layer's weight and scale tensors as they lie in a shard (weight first, at
 * file offset `weightAt`, the scale directly after it): a function that fills `into` with the
 * bytes at file offset `at`, for writers that produce a file in aligned chunks.
 */
export function tableBytes(
  layer: number,
  rows: number,
  dim: number,
  weightAt: number,
  seed = 0,
): (at: number, into: Buffer) => void {
  const sb = dim / 32;
  const weightEnd = weightAt + rows * dim;
  const scaleEnd = weightEnd + rows * sb;
  let weight = Buffer.alloc(0);
  let scale = Buffer.alloc(0);
  const room = (w: number, s: number) => {
    if (weight.length < w) weight = Buffer.allocUnsafeSlow(w);
    if (scale.length < s) scale = Buffer.allocUnsafeSlow(s);
  };
  return (at, into) => {
    if (at < weightAt || at + into.length > scaleEnd)
      throw new RangeError(
        `bytes [${at}, ${at + into.length}) are outside layer ${layer}'s tensors [${weightAt}, ${scaleEnd})`,
      );
    for (let done = 0; done < into.length;) {
      const pos = at + done;
      const inWeight = pos < weightEnd;
      const width = inWeight ? dim : sb;
      const rel = inWeight ? pos - weightAt : pos - weightEnd;
      const n = Math.min(into.length - done, (inWeight ? weightEnd : scaleEnd) - pos);
      const first = Math.floor(rel / width);
      const skip = rel % width;
      const count = Math.ceil((skip + n) / width);
      room(inWeight ? count * dim : 0, count * sb);
      fillRows(layer, first, count, dim, inWeight ? weight : undefined, scale, seed);
      (inWeight ? weight : scale).copy(into, done, skip, skip + n);
      done += n;
    }
  };
}

/** One row as it appears in a packed file or a `spark rows` reply: weight ‖ scale. */
export function synthRow(layer: number, row: number, dim: number, seed = 0): Buffer {
  const weight = Buffer.alloc(dim);
  const scale = Buffer.alloc(dim / 32);
  fillRows(layer, row, 1, dim, weight, scale, seed);
  return Buffer.concat([weight, scale]);
}
