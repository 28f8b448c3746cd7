// A seeded generator for property tests: the same cases on every run, so a failure replays.
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  // mulberry32: 32 bits per call, returned as a float in [0, 1).
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** An integer in [0, 2^bits) for bits <= 52, log-uniform over the bit length so small values occur. */
export function randomBelowPow2(next: () => number, maxBits: number): number {
  const bits = Math.floor(next() * (maxBits + 1));
  return Math.floor(next() * 2 ** bits);
}

export function randomInt(next: () => number, lo: number, hi: number): number {
  return lo + Math.floor(next() * (hi - lo + 1));
}
