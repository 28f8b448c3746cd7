// The tables the row store reads, described by file paths and absolute byte offsets:
// src/stacks/row-source.ts builds them from a snapshot or a pack, src/addon/row-store.ts hands
// them to the addon.
import type { PackLayout } from './pack-layout.js';

export type U64 = number | bigint;

export interface FileSlice {
  path: string;
  /** Absolute byte offset of the tensor's first byte in the file. */
  offset: U64;
}

/** Rows from a checkpoint: D weight bytes from `weight`, D/32 scale bytes from `scale`. */
export interface SnapshotTableSpec {
  kind: 'snapshot';
  layer: number;
  rows: U64;
  dim: number;
  weight: FileSlice;
  scale: FileSlice;
  /** Hold the scale rows of ids [start, end) in memory: one read per row there. */
  residentScales?: [U64, U64];
  /** Only ids [lo, hi) are readable (a sparse copy's manifest range); default the whole table. */
  range?: [U64, U64];
  /**
   * What a hole among the readable rows means, checked at open (default 'allow'): 'refuse' for
   * a snapshot without a manifest, 'corrupt' inside a sparse copy's range.
   */
  holes?: 'allow' | 'refuse' | 'corrupt';
}

/** Rows from a packed data file (docs/packed-format.md); ids are global, in [start, end). */
export interface PackedTableSpec {
  kind: 'packed';
  layer: number;
  path: string;
  start: U64;
  end: U64;
  dataOffset: U64;
  stride: number;
  rowBytes: number;
  layout: PackLayout;
  /** O_DIRECT (aligned 4 KiB reads); falls back to buffered reads when the filesystem refuses. */
  direct?: boolean;
}

export type TableSpec = SnapshotTableSpec | PackedTableSpec;
