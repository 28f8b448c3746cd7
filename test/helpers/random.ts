// Seeded generators for property tests: the same cases on every run, so a failure replays.
export { rng } from '../../src/gather-bench/bench-ids.js';

/** An integer in [0, 2^bits) for bits <= 52, log-uniform over the bit length so small values occur. */
export function randomBelowPow2(next: () => number, maxBits: number): number {
  const bits = Math.floor(next() * (maxBits + 1));
  return Math.floor(next() * 2 ** bits);
}

export function randomInt(next: () => number, lo: number, hi: number): number {
  return lo + Math.floor(next() * (hi - lo + 1));
}
