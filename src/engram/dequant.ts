// Decoding an Engram row: F8_E4M3 weights times an E8M0 power of two per 32-column block,
// value = fp8 x 2^(e - 127).

/** F8_E4M3 (the "FN" variant: no infinities, S.1111.111 is NaN) as a number. */
export function decodeE4M3(byte: number): number {
  const sign = byte & 0x80 ? -1 : 1;
  const exp = (byte >>> 3) & 0xf;
  const man = byte & 7;
  if (exp === 0xf && man === 7) return NaN;
  if (exp === 0) return sign * (man / 8) * 2 ** -6;
  return sign * (1 + man / 8) * 2 ** (exp - 7);
}

/** E8M0 scale byte as a number: 2^(e - 127); 0xFF is NaN. */
export function decodeE8M0(byte: number): number {
  return byte === 0xff ? NaN : 2 ** (byte - 127);
}

// Every byte's value, decoded once: a row is then D table lookups and multiplications.
const E4M3 = Float64Array.from({ length: 256 }, (_, b) => decodeE4M3(b));
const E8M0 = Float64Array.from({ length: 256 }, (_, b) => decodeE8M0(b));

/** The D values of a row laid out as weight[D] ‖ scale[D/32]. */
export function dequantRow(row: Uint8Array, dim: number): number[] {
  const out = new Array<number>(dim);
  for (let c = 0; c < dim; c++) out[c] = E4M3[row[c]] * E8M0[row[dim + (c >>> 5)]];
  return out;
}

/**
 * The D values of a row as text, each to 6 significant digits, space-separated. A value is one
 * of 65,536 (weight byte, scale byte) pairs, so each pair is formatted once into `cache`.
 */
export function dequantRowText(row: Uint8Array, dim: number, cache: string[]): string {
  const parts = new Array<string>(dim);
  for (let c = 0; c < dim; c++) {
    const w = row[c];
    const s = row[dim + (c >>> 5)];
    const key = (w << 8) | s;
    parts[c] = cache[key] ??= String(Number((E4M3[w] * E8M0[s]).toPrecision(6)));
  }
  return parts.join(' ');
}
