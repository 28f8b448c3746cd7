// The prime rule behind Engram table sizes (docs/engram-tables.md). Each (n-gram order, head) pair of a
// layer hashes into its own sub-table whose size is a prime: starting from the vocab size,
// take the next prime not used before, the set of used primes shared across layers in layer
// order. A layer's table is its sub-tables concatenated in (order, head) order. With
// vocab 16,000,000 this gives exactly 384,006,168 rows (layer 1) and 384,016,682 (layer 14).
import type { EngramConfig } from './config.js';

function isPrime(n: number): boolean {
  if (n < 2) return false;
  if (n % 2 === 0) return n === 2;
  if (n % 3 === 0) return n === 3;
  for (let d = 5; d * d <= n; d += 6) {
    if (n % d === 0 || n % (d + 2) === 0) return false;
  }
  return true;
}

/** Sub-table sizes per layer: (maxNgram - 1) orders x heads primes, in (order, head) order. */
export function engramSubTableSizes(cfg: EngramConfig): Map<number, number[]> {
  const perLayer = Math.max(0, cfg.maxNgram - 1) * cfg.heads;
  const sizes = new Map<number, number[]>();
  let last = cfg.vocabSize;
  // Primes are strictly increasing, so "not used before" is "greater than the last one taken".
  for (const layer of [...cfg.layerIds].sort((a, b) => a - b)) {
    const primes: number[] = [];
    for (let i = 0; i < perLayer; i++) {
      let p = last + 1;
      while (!isPrime(p)) p++;
      primes.push(p);
      last = p;
    }
    sizes.set(layer, primes);
  }
  return sizes;
}

/** Offsets where each sub-table starts, plus the total: [0, s0, s0+s1, ..., N]. */
export function prefixOffsets(sizes: readonly number[]): number[] {
  const out = [0];
  for (const s of sizes) out.push(out[out.length - 1] + s);
  return out;
}
