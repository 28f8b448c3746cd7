// Whole-process `spark inspect --json` on a 48-shard full-size (sparse) DSV4.1-shaped snapshot,
// against `node -e 0` (the floor: Node's own start-up) and a naive TypeScript reader, measured
// in one run. Usage: node dist/bench/inspect.js [rounds]
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { synthesize, SYNTH_DEFAULTS } from '../src/synth/synth.js';
import { packageRoot } from '../src/addon/index.js';
import { compareProcesses, machineInfo, timingTable } from './lib/processes.js';

const rounds = Number(process.argv[2] ?? 15);
const root = packageRoot();
const out = join(root, 'bench', 'out');
const dir = join(out, 'inspect-snapshot');
rmSync(dir, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
synthesize({ ...SYNTH_DEFAULTS, dir, vocab: 16_000_000, shards: 48, sparse: true });

const node = process.execPath;
const results = compareProcesses(
  [
    { name: 'node -e 0', argv: [node, '-e', '0'] },
    { name: 'spark inspect --json', argv: [node, join(root, 'dist/src/bin.js'), 'inspect', dir, '--json'] },
    { name: 'naive TS reader', argv: [node, join(root, 'dist/bench/naive-inspect.js'), dir] },
  ],
  rounds,
);
const report = {
  benchmark: 'inspect',
  snapshot: '48 shards, sparse, real row counts',
  rounds,
  machine: machineInfo(),
  results,
};
writeFileSync(join(out, 'inspect.json'), JSON.stringify(report, null, 2) + '\n');
const [floor, spark, naive] = results;
process.stdout.write(
  `${timingTable(results)}\n\nspark inspect / node -e 0: ${spark.ratioToBaseline.toFixed(2)}x (goal <= 3x); ` +
    `spark / naive: ${(spark.ratioToBaseline / naive.ratioToBaseline).toFixed(2)}x (goal < 1); floor ${floor.medianMs.toFixed(1)} ms\n`,
);
rmSync(dir, { recursive: true, force: true });
