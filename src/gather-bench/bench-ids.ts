// Row ids drawn like a serving rank's: per token, one id inside each (order, head) sub-table
// (24 for DSV4.1), uniform inside the sub-table, with the repeats real text has. A batch of
// B ids is B/24 tokens. Repeats: a token repeats an earlier token of the batch with
// probability `tokenRepeat` (a repeated n-gram), and each order-2 id repeats an earlier
// token's order-2 id of the same head with probability `bigramRepeat` (common bigrams).

export interface IdModel {
  /** [lo, hi) of each (order, head) sub-table, intersected with the readable range. */
  heads: [number, number][];
  tokenRepeat: number;
  bigramRepeat: number;
  /** How many leading heads are order-2 (bigram) heads. */
  bigramHeads: number;
}

/** Sub-tables from their sizes (prime rule), or 24 equal parts when unknown; clipped to [start, end). */
export function idModel(
  rows: number,
  start: number,
  end: number,
  subTableSizes?: number[],
  headsPerOrder = 8,
): IdModel {
  const sizes =
    subTableSizes ??
    Array.from({ length: 24 }, (_, i) => Math.floor((rows * (i + 1)) / 24) - Math.floor((rows * i) / 24));
  const heads: [number, number][] = [];
  let at = 0;
  for (const s of sizes) {
    const lo = Math.max(at, start);
    const hi = Math.min(at + s, end);
    if (hi > lo) heads.push([lo, hi]);
    at += s;
  }
  if (heads.length === 0) heads.push([start, end]);
  return { heads, tokenRepeat: 0.2, bigramRepeat: 0.3, bigramHeads: Math.min(headsPerOrder, heads.length) };
}

/** A small fast PRNG (mulberry32), so runs are reproducible from a seed. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `count` ids as a Float64-safe Uint32Array or BigUint64Array-free number list (ids < 2^53). */
export function drawBatch(model: IdModel, count: number, random: () => number): number[] {
  const per = 24;
  const ids: number[] = new Array(count);
  const tokens = Math.ceil(count / per);
  for (let t = 0; t < tokens; t++) {
    const base = t * per;
    const repeatOf = t > 0 && random() < model.tokenRepeat ? Math.floor(random() * t) : -1;
    for (let k = 0; k < per && base + k < count; k++) {
      if (repeatOf >= 0) {
        ids[base + k] = ids[repeatOf * per + k];
        continue;
      }
      const h = k % model.heads.length;
      if (t > 0 && h < model.bigramHeads && random() < model.bigramRepeat) {
        ids[base + k] = ids[Math.floor(random() * t) * per + k];
        continue;
      }
      const [lo, hi] = model.heads[h];
      ids[base + k] = lo + Math.floor(random() * (hi - lo));
    }
  }
  return ids;
}
