// Row count of a synth snapshot's layer, from its config (the prime rule), without a parser.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseModelConfig } from '../../src/engram/config.js';
import { engramSubTableSizes } from '../../src/engram/primes.js';

export function synthSnapshotRows(dir: string, layer: number): number {
  const path = join(dir, 'config.json');
  const cfg = parseModelConfig(JSON.parse(readFileSync(path, 'utf8')), path);
  if (!cfg.engram) throw new Error(`${path} has no engram config`);
  const sizes = engramSubTableSizes(cfg.engram).get(layer);
  if (!sizes) throw new Error(`${path}: no layer ${layer}`);
  return sizes.reduce((a, b) => a + b, 0);
}
