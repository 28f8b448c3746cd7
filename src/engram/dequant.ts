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

/** The D values of a row laid out as weight[D] ‖ scale[D/32]. */
export function dequantRow(row: Uint8Array, dim: number): number[] {
  const out = new Array<number>(dim);
  for (let c = 0; c < dim; c++) out[c] = decodeE4M3(row[c]) * decodeE8M0(row[dim + (c >>> 5)]);
  return out;
}
