// Whole-process cost of `spark engram-ranges` (and `spark wrapper --dry-run`, which does the
// same work) on a full-size 48-shard DSV4.1-shaped sparse snapshot, against `node -e 0` timed in
// the same run. Both run on every rank's boot, so the target is within 2.5x of bare Node.
//   node dist/bench/engram-ranges.js [--rounds N]
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthesize, SYNTH_DEFAULTS } from '../src/synth/synth.js';
import { packageRoot } from '../src/addon/index.js';
import { compareProcesses, machineInfo, timingTable } from './lib/processes.js';

const TARGET = 2.5;
const roundsArg = process.argv.indexOf('--rounds');
const rounds = roundsArg > 0 ? Number(process.argv[roundsArg + 1]) : 21;

const root = packageRoot();
const bin = join(root, 'dist', 'src', 'bin.js');
const work = mkdtempSync(join(tmpdir(), 'spark-bench-ranges-'));
try {
  const snap = synthesize({ ...SYNTH_DEFAULTS, dir: join(work, 'snap'), vocab: 16_000_000, shards: 48, sparse: true });
  const node = process.execPath;
  const timings = compareProcesses(
    [
      { name: 'node -e 0 (baseline)', argv: [node, '-e', '0'] },
      {
        name: 'spark engram-ranges DIR --rank 1 --world 4',
        argv: [node, bin, 'engram-ranges', snap.dir, '--rank', '1', '--world', '4'],
      },
      {
        name: 'spark engram-ranges DIR --world 4 --all --split heads',
        argv: [node, bin, 'engram-ranges', snap.dir, '--world', '4', '--all', '--split', 'heads'],
      },
      {
        name: 'spark wrapper --dry-run (SPARK_ENGRAM_DIR, NODE_RANK=1, --nnodes 4)',
        argv: [
          'env',
          `SPARK_ENGRAM_DIR=${snap.dir}`,
          'NODE_RANK=1',
          node,
          bin,
          'wrapper',
          '--dry-run',
          '--',
          'engine',
          '--nnodes',
          '4',
        ],
      },
    ],
    rounds,
  );
  const ranges = timings[1]!;
  const verdict = ranges.ratioToBaseline <= TARGET ? 'within' : 'OVER';
  const result = {
    bench: 'engram-ranges',
    machine: machineInfo(),
    pageCache: 'warm (the same headers are read every round)',
    snapshot: { shards: snap.files.length, layers: snap.layers },
    rounds,
    target: TARGET,
    timings,
  };
  mkdirSync(join(root, 'bench', 'out'), { recursive: true });
  writeFileSync(join(root, 'bench', 'out', 'engram-ranges.json'), JSON.stringify(result, null, 2) + '\n');
  process.stdout.write(
    `${timingTable(timings)}\n\nengram-ranges / node -e 0 = ${ranges.ratioToBaseline.toFixed(2)}x (${verdict} the ${TARGET}x target); JSON in bench/out/engram-ranges.json\n`,
  );
} finally {
  rmSync(work, { recursive: true, force: true });
}
