// Typed wrapper over the addon's packer and verifier (native/binding/pack_binding.cc).
// Each job returns a promise and a progress() reader that callers may poll; nothing calls
// back into JavaScript from the native worker threads.
import { toSparkError } from '../errors.js';
import { addon } from './index.js';

export type PackLayout = 'dense' | 'page';

export interface SourceTensor {
  path: string;
  /** Absolute file offset of the tensor's row 0. */
  offset: number;
}

export interface LayerGeometry {
  /** Rows in this file (end - start). */
  rows: number;
  dim: number;
  layout: PackLayout;
  chunkRows: number;
}

export interface PackLayerJob extends LayerGeometry {
  weight: SourceTensor;
  scale: SourceTensor;
  /** Global id of the file's first row. */
  start: number;
  /** The final data file; `.partial` and `.journal` are written beside it. */
  outPath: string;
  /** Header block JSON (at most 4096 bytes; padded with spaces). */
  header: string;
  /** Identity of the job: an interrupted run is resumed only under the same key. */
  key: string;
  threads: number;
  commitBytes?: number;
  commitMs?: number;
  dropCache?: boolean;
  /** Tests only: writes after this many chunks fail with EIO. */
  faultAfterChunks?: number;
}

export interface PackLayerResult {
  checksums: number[];
  chunksKept: number;
  chunksRejected: number;
  chunksWritten: number;
  bytesWritten: number;
  journalDiscarded: boolean;
  wasComplete: boolean;
}

export type PackPhase = 'preparing' | 'checking' | 'copying' | 'finishing' | 'done';
const PHASES: PackPhase[] = ['preparing', 'checking', 'copying', 'finishing', 'done'];

export interface PackLayerProgress {
  phase: PackPhase;
  chunksTotal: number;
  chunksDone: number;
  bytesTotal: number;
  bytesDone: number;
}

export interface VerifyLayerJob extends LayerGeometry {
  path: string;
  header: string;
  checksums: number[];
  threads: number;
  checkChunks?: boolean;
  dropCache?: boolean;
  source?: {
    weight: SourceTensor;
    scale: SourceTensor;
    start: number;
    /** Compare every row; otherwise the rows in sampleRows (local indices). */
    allRows?: boolean;
    sampleRows?: number[];
  };
}

export interface VerifyLayerResult {
  fileBytes: number;
  sizeOk: boolean;
  headerOk: boolean;
  chunksChecked: number;
  badChunkCount: number;
  /** Lowest bad chunk indices (at most 16). */
  badChunks: number[];
  rowsCompared: number;
  badRowCount: number;
  /** Lowest bad local row indices (at most 16). */
  badRows: number[];
  bytesRead: number;
}

export interface VerifyLayerProgress {
  bytesTotal: number;
  bytesDone: number;
}

export interface NativeJob<R, P> {
  promise: Promise<R>;
  progress(): P;
}

interface PackAddon {
  packLayer(job: PackLayerJob): { promise: Promise<PackLayerResult>; progress(): number[] };
  verifyLayer(job: VerifyLayerJob): { promise: Promise<VerifyLayerResult>; progress(): number[] };
  lockDirectory(path: string): number;
  unlockDirectory(fd: number): void;
  crc32(data: Uint8Array, crc?: number): number;
  crc32Implementation: string;
}

function native(): PackAddon {
  return addon() as unknown as PackAddon;
}

export function packLayer(job: PackLayerJob): NativeJob<PackLayerResult, PackLayerProgress> {
  const h = native().packLayer(job);
  return {
    promise: h.promise.catch((err: unknown) => {
      throw toSparkError(err);
    }),
    progress() {
      const [phase, chunksTotal, chunksDone, bytesTotal, bytesDone] = h.progress();
      return { phase: PHASES[phase] ?? 'preparing', chunksTotal, chunksDone, bytesTotal, bytesDone };
    },
  };
}

export function verifyLayer(job: VerifyLayerJob): NativeJob<VerifyLayerResult, VerifyLayerProgress> {
  const h = native().verifyLayer(job);
  return {
    promise: h.promise.catch((err: unknown) => {
      throw toSparkError(err);
    }),
    progress() {
      const [bytesTotal, bytesDone] = h.progress();
      return { bytesTotal, bytesDone };
    },
  };
}

/** An exclusive lock on a directory (flock), released by the returned function or at exit. */
export function lockDirectory(path: string): () => void {
  let fd: number;
  try {
    fd = native().lockDirectory(path);
  } catch (err) {
    throw toSparkError(err);
  }
  let held = true;
  return () => {
    if (held) native().unlockDirectory(fd);
    held = false;
  };
}

/** CRC-32 as zlib computes it: the packed format's chunk checksum. */
export function crc32(data: Uint8Array, crc = 0): number {
  return native().crc32(data, crc);
}

/** Which CRC-32 path this machine uses: 'pclmulqdq', 'armv8-crc32' or 'slice-by-8'. */
export function crc32Implementation(): string {
  return native().crc32Implementation;
}
