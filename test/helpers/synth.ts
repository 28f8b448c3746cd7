// Synthetic snapshots for tests, written by the same code as `spark synth`.
import { join } from 'node:path';
import { synthesize, SYNTH_DEFAULTS, type SynthOptions, type SynthResult } from '../../src/synth/synth.js';
import { tempDir } from './tmp.js';

export function makeSnapshot(options: Partial<SynthOptions> = {}): SynthResult & { dir: string } {
  const dir = options.dir ?? join(tempDir(), 'snap');
  return synthesize({ ...SYNTH_DEFAULTS, ...options, dir });
}

/** A full-size DSV4.1-shaped snapshot: real row counts, 48 shards, sparse files. */
export function makeFullSizeSnapshot(): SynthResult & { dir: string } {
  return makeSnapshot({ vocab: 16_000_000, shards: 48, sparse: true });
}
