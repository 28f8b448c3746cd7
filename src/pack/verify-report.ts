// What `spark verify` is asked and what it answers, for both kinds of copy: verify.ts checks a
// dense/page pack, verify-sparse.ts a sparse copy, and both fill these in.
import type { ModelConfig } from '../engram/config.js';
import type { IoMode } from '../addon/pack.js';
import type { PackTable } from './pack-io.js';

export type VerifyRowsMode = 'none' | 'full' | 'sample';

export interface VerifyRequest {
  dir: string;
  /** The snapshot the pack was made from, to compare rows with. */
  source?: { snapshotDir: string; tables: PackTable[]; config?: ModelConfig };
  rows: VerifyRowsMode;
  /** Rows per layer for 'sample' (plus the first and last row). */
  sample?: number;
  threads: number;
  onProgress?: (p: { bytesDone: number; bytesTotal: number; seconds: number }) => void;
}

export interface BadChunk {
  index: number;
  offset: number;
  bytes: number;
  firstRow: number;
  lastRow: number;
}

export interface VerifyLayerReport {
  layer: number;
  file: string;
  start: number;
  end: number;
  ok: boolean;
  bytes: { expected: number; actual: number };
  headerOk: boolean;
  chunks: { total: number; checked: number; bad: number; first?: BadChunk };
  rows?: { mode: 'full' | 'sample'; compared: number; bad: number; first?: number };
  /** Sparse copies: the first row of the range that lies in a hole. */
  hole?: { column: 'weight' | 'scale'; row: number; offset: number };
}

export interface VerifyReport {
  dir: string;
  /** A dense/page pack, or a sparse copy. */
  kind: 'packed' | 'sparse';
  ok: boolean;
  /** Absent for a sparse copy made by another tool (its manifest does not say). */
  rank?: number;
  world?: number;
  split?: string;
  /** Sparse copies: 'spark' (with checksums) or 'another tool' (the overlay's engram_local.py: none). */
  madeBy?: 'spark' | 'another tool';
  /** What was checked, in words. */
  checked: string[];
  layers: VerifyLayerReport[];
  /** One line per problem, naming the file, layer and first bad chunk or row. */
  problems: string[];
  bytesRead: number;
  /**
   * Whether the snapshot the copy was made from still holds the files the manifest recorded:
   * absent when not checked (`--source --full`, or no recorded identity).
   */
  sourceIdentity?: { snapshot: string; status: 'unchanged' | 'changed' | 'not found' | 'unreadable' };
  /** How the chunk pass read ('direct': O_DIRECT; 'buffered': the filesystem refused it); absent: no chunk pass. */
  io?: IoMode;
  seconds: number;
}
