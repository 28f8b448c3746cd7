// The options and report of `spark bench gather`, and what its steps hand each other (gather-bench.ts).
import { type ColdVerdict } from './cold.js';
import { type Ceiling } from './fio.js';
import { type BenchEngine, type BenchVariant, type GatherBenchResult } from './gather-result.js';
import { miaTarget, type MiaCacheOptions } from './mia-case.js';
import { type RowSource, type RowSourceKind, type SnapshotOpener } from '../stacks/row-source.js';

export interface GatherBenchOptions {
  source: string;
  layer?: number;
  threads: number[];
  batches: number[];
  seconds: number;
  cold: boolean;
  /** Variants to run; default: snapshot and snapshot+scales for a snapshot, packed for a pack. */
  variants?: BenchVariant[];
  direct?: boolean;
  delayUs?: number;
  /** fio runs: the device ceiling and the psync baseline (default true where fio is installed). */
  fio?: boolean;
  naive?: boolean;
  seed?: number;
  openSnapshot?: SnapshotOpener;
  /** Row store engines to run the row store variants on (default pread). */
  engines?: BenchEngine[];
  /** Row store I/O choices, to measure what each one pays. */
  store?: { dedup?: boolean; merge?: boolean; fadviseRandom?: boolean; mapCached?: boolean };
  /** Pread pool: run every case again with merging off and report rows/s merged over unmerged. */
  mergeGain?: boolean;
  /** Cold: evict the source before every batch (untimed), not only before every case. */
  evictEveryBatch?: boolean;
  /** Root for /proc and /sys when sizing the page cache (tests). */
  sysRoot?: string;
  /** Overlay variant: the WILLNEED pass before the copies (default true, as the overlay does). */
  willneed?: boolean;
  /** Mia variant: its row cache's budget and ways (default MIA_CACHE_DEFAULT). */
  mia?: MiaCacheOptions;
  progress?: (line: string) => void;
}

export interface GatherBenchReport {
  results: GatherBenchResult[];
  recommendedThreads: number;
  /** The variant the recommendation was measured on. */
  recommendedFor: BenchVariant;
  /** What the source is: a snapshot, a sparse copy or a pack. */
  sourceKind: RowSourceKind;
  machine: {
    cpus: number;
    cpuModel: string;
    memGiB: number;
    node: string;
    arch: string;
    loadAvgBefore: number[];
    loadAvgAfter: number[];
  };
  cache: string;
  /** Bytes the cases can read (readRegions) and the page cache they are compared with. */
  readRangeBytes: number;
  pageCache?: { limitBytes: number; from: string };
  /** Cold runs: the verdict for buffered reads (O_DIRECT cases are always cold). */
  cold?: ColdVerdict;
  /** The device ceiling measured in this run, or why there is none. */
  ceiling?: Ceiling;
  ceilingNote?: string;
  /** Set when a case took more from the device than the ceiling (largest reads/ceil): the ceiling was measured low. */
  ceilingExceeded?: number;
  fio?: string;
  layer: number;
  rows: number;
  seconds: number;
  delayUs?: number;
}

export interface ProbedSource {
  table: RowSource['tables'][number];
  spec: RowSource['specs'][number];
  /** The files of the measured layer: what a cold case evicts. */
  files: string[];
  kind: RowSourceKind;
}

export type MiaChoice = ReturnType<typeof miaTarget>;

export type BatchDrawer = (batch: number) => () => number[];
