// Fixtures for the engine library tests: the built libraries, a snapshot and a sparse copy of
// it, described to the Python ctypes checks (test/engine-libs/*.py) as JSON, and running them.
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../../src/addon/index.js';
import { openSnapshot } from '../../src/engram/snapshot.js';
import { makeSnapshot } from './synth.js';
import { floorRange, writeSparseCopy } from './sparse-copy.js';
import { tempDir } from './tmp.js';
import { python3 } from './python3.js';

export const LIBRARIES = {
  overlay: join(packageRoot(), 'build', 'Release', 'libengram_rows.so'),
  mia: join(packageRoot(), 'build', 'Release', 'librow_store.so'),
};

/** One layer's table in one file: the path and the absolute offsets of row 0 of each column. */
export interface TableFile {
  path: string;
  rows: number;
  woff: number;
  soff: number;
  lo: number;
  hi: number;
}

export interface EngineFixtures {
  dir: string;
  snapshot: TableFile;
  sparse: TableFile;
}

/** A synthetic snapshot's layer-1 table, and rank 1 of 3's sparse copy of it. */
export async function engineFixtures(): Promise<EngineFixtures> {
  const snap = makeSnapshot({ seed: 22, vocab: 600 });
  const t = (await openSnapshot(snap.dir)).engram.find((e) => e.layer === 1);
  if (!t || t.weight.file !== t.scale.file) throw new Error('layer 1 weight and scale must share a shard');
  const snapshot = {
    path: t.weight.file,
    rows: t.rows,
    woff: t.weight.fileOffset,
    soff: t.scale.fileOffset,
    lo: 0,
    hi: t.rows,
  };
  const range = floorRange(1, t.rows, 1, 3);
  const copyDir = join(tempDir(), 'copy');
  mkdirSync(copyDir);
  const copy = writeSparseCopy(snap.dir, copyDir, { flavour: 'spark', ranges: [range], rank: 1, world: 3 });
  const ct = copy.tables[0];
  const sparse = {
    path: join(copyDir, ct.shard),
    rows: ct.rows,
    woff: ct.weightOffset,
    soff: ct.scaleOffset,
    lo: range.start,
    hi: range.end,
  };
  return { dir: tempDir(), snapshot, sparse };
}

/** Runs test/engine-libs/SCRIPT with the library and the fixtures; returns its output. */
export function runCheck(script: string, lib: string, fixtures: EngineFixtures, args: string[] = []) {
  const r = spawnSync(
    python3(),
    [join(packageRoot(), 'test', 'engine-libs', script), lib, JSON.stringify(fixtures), ...args],
    {
      encoding: 'utf8',
      timeout: 240_000,
    },
  );
  if (r.error) throw r.error;
  return { code: r.status ?? 128, stdout: r.stdout, stderr: r.stderr };
}

/** What librow_store.so does when the Mia stack attaches `pack` as `layer` for `table`'s rows [lo, hi). */
export type MiaAttach = { outcome: 'attached' | 'absent' } | { outcome: 'aborted'; why: string };

export function miaAttach(table: TableFile, layer: number, pack: string): MiaAttach {
  const r = spawnSync(
    python3(),
    [
      join(packageRoot(), 'test', 'engine-libs', 'mia_attach.py'),
      LIBRARIES.mia,
      JSON.stringify({ table, pack, layer }),
    ],
    { encoding: 'utf8', timeout: 60_000, env: { ...process.env, DSV41_RESIDENT_SCALES: '0' } },
  );
  if (r.error) throw r.error;
  if (r.signal === 'SIGABRT') return { outcome: 'aborted', why: r.stderr.trim() };
  if (r.status !== 0) throw new Error(`mia_attach.py exited ${r.status}: ${r.stderr}`);
  const got = r.stdout.trim();
  if (got !== '1' && got !== '0') throw new Error(`mia_attach.py printed ${JSON.stringify(got)}`);
  return { outcome: got === '1' ? 'attached' : 'absent' };
}
