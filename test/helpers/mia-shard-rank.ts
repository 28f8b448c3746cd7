// Shared by test/stacks/mia/mia-shard-rank.test.ts and test/long/mia-shard-rank-cases.test.ts:
// a world whose Mia env points ENGRAM_DIR at one directory, and the three verdicts on it
// (spark verify, preflight's mia.packs, librow_store.so's attach) plus spark's Python reader,
// checked for another rank's shards under a rank's names and for the rank's own shards.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, constants, mkdirSync, openSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { bin } from './cli.js';
import { miaAttach, type MiaAttach } from './engine-lib.js';
import { writeMiaPack } from './mia-pack.js';
import { edit, MIA_ENV, preflight, world, write } from './preflight.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { miaShardName } from '../../src/stacks/mia/mia-shard.js';
import { packageRoot } from '../../src/addon/index.js';
import { python3 } from './python3.js';

export const WORLD = 4;

/** A rank's names over another rank's rows, and what every reader must say of them. */
export interface WrongRankCase {
  name: string;
  rank: number;
  rows: number;
  says: RegExp;
}

export const WRONG_RANK_CASES: WrongRankCase[] = [
  { name: 'rank 0', rank: 0, rows: 1, says: /header rows \[\d+, \d+\) start at \d+, but rank 0's rows start at 0/ },
  {
    name: 'a middle rank',
    rank: 2,
    rows: 1,
    says: /header rows \[\d+, \d+\) are rank 1 of 4's floor share, not rank 2 of 4's/,
  },
  {
    name: 'the last rank',
    rank: 3,
    rows: 2,
    says: /header rows \[\d+, \d+\) end at \d+, but the last rank's rows end at the table's \d+/,
  },
];

/** Whether the filesystem under `dir` opens files with O_DIRECT (the reader needs it). */
function opensDirect(dir: string): boolean {
  mkdirSync(dir, { recursive: true });
  const probe = join(dir, 'probe');
  write(probe, 'x'.repeat(4096));
  try {
    closeSync(openSync(probe, constants.O_RDONLY | constants.O_DIRECT));
    return true;
  } catch {
    return false;
  } finally {
    rmSync(probe);
  }
}

/** The world, its ENGRAM_DIR and the checks of a wrong-rank case and of a rank's own shards. */
export async function shardRankWorld(): Promise<{
  refusedByAll(c: WrongRankCase): Promise<void>;
  passesAll(rank: number): Promise<void>;
}> {
  const w = await world();
  const engram = join(w.root, 'rank-names');
  const env = write(
    join(w.root, 'rank-names.env'),
    edit(readFileSync(MIA_ENV, 'utf8'), 'ENGRAM_DIR=$HOME/dsv41-engram', `ENGRAM_DIR=${engram}`),
  );
  const recipe = w.recipe(w.dsv41Text, 'rank-names');
  const tables = (await openSnapshot(w.snapshotDir, { engramOnly: true })).engram;
  const t = tables.find((x) => x.layer === 1)!;
  const floor = (rank: number) => [Math.floor((t.rows * rank) / WORLD), Math.floor((t.rows * (rank + 1)) / WORLD)];

  /** The three verdicts on `engram` for node `rank`: verify's exit and lines, mia.packs' findings, the attach. */
  const judge = async (rank: number) => {
    const v = bin(['verify', engram]);
    const report = await preflight(w.options(recipe, { env, only: ['mia'], nodeRank: rank }));
    const packs = report.findings.filter((f) => f.rule === 'mia.packs');
    const [lo, hi] = floor(rank);
    const table = { path: t.weight.file, rows: t.rows, woff: t.weight.fileOffset, soff: t.scale.fileOffset, lo, hi };
    const attach: MiaAttach = miaAttach(table, 1, join(engram, miaShardName(1, rank, WORLD)));
    // spark's Python reader reads the same shards and must refuse what the others refuse.
    const py = spawnSync(
      python3(),
      [join(packageRoot(), 'python', 'spark_engram_reader.py'), engram, '--layer', '1', '--ids', String(lo)],
      {
        encoding: 'utf8',
      },
    );
    return { v, packs, attach, py };
  };
  const direct = opensDirect(engram);
  // Where the filesystem refuses O_DIRECT the reader never opens a pack: it serves the checkpoint.
  const refused = (a: MiaAttach, what: string) =>
    direct
      ? assert.ok(
          a.outcome === 'aborted' && /^librow_store: .*packed shard has (lo|hi) \d+, expected \d+/.test(a.why),
          `${what}: ${JSON.stringify(a)}`,
        )
      : assert.equal(a.outcome, 'absent', what);

  return {
    async refusedByAll(c) {
      rmSync(engram, { recursive: true, force: true });
      await writeMiaPack(engram, w.snapshotDir, { rank: c.rows, world: WORLD, nameRank: c.rank });
      const { v, packs, attach, py } = await judge(c.rank);
      assert.equal(py.status, 2, `${c.name}: the Python reader: ${py.stdout}${py.stderr}`);
      assert.match(py.stderr, c.says, c.name);
      assert.equal(v.code, 1, `${c.name}: verify must fail: ${v.stdout}`);
      assert.match(v.stdout, new RegExp(`engram-l1-r${c.rank}of4\\.bin: layer 1: ${c.says.source}`), c.name);
      assert.match(v.stderr, c.says, c.name);
      assert.deepEqual(
        packs.map((f) => [f.severity, f.where]),
        [1, 14].map((l) => [direct ? 'error' : 'warn', join(engram, miaShardName(l, c.rank, WORLD))]),
        `${c.name}: ${JSON.stringify(packs)}`,
      );
      assert.match(packs[0]!.message, new RegExp(`\\(rank ${c.rows} of 4's rows; this is rank ${c.rank} of 4\\)`));
      refused(attach, c.name);
    },
    async passesAll(rank) {
      rmSync(engram, { recursive: true, force: true });
      await writeMiaPack(engram, w.snapshotDir, { rank, world: WORLD });
      const { v, packs, attach, py } = await judge(rank);
      assert.equal(py.status, 0, `rank ${rank}: the Python reader: ${py.stderr}`);
      assert.equal(v.code, 0, `rank ${rank}: ${v.stdout}${v.stderr}`);
      assert.deepEqual(packs, [], `rank ${rank}`);
      assert.equal(attach.outcome, direct ? 'attached' : 'absent', `rank ${rank}`);
    },
  };
}
