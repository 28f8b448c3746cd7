// Typed wrapper over the addon's packer and verifier (native/binding/pack_binding.cc).
// Each job returns a promise and a progress() reader that callers may poll; nothing calls
// back into JavaScript from the native worker threads. Every file a pack writes goes through
// the locked output directory's descriptor (PackDirectory), never through a path.
import { SparkError, toSparkError } from '../errors/errors.js';
import { addon } from './index.js';
import type { PackLayout } from '../domain/pack-layout.js';

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

/** What every pack job shares: where it writes, its identity, its workers and commit policy. */
export interface PackFileJob {
  /** The locked output directory (lockDirectory). */
  dir: PackDirectory;
  /** The final data file's name in it; `.partial` and `.journal` are written beside it. */
  name: string;
  /** Identity of the job: an interrupted run is resumed only under the same key. */
  key: string;
  threads: number;
  /** Bytes per second copied, at most (0 or absent: unlimited). */
  rateLimit?: number;
  commitBytes?: number;
  commitMs?: number;
  /** Drop written pages once durable (default true). */
  dropCache?: boolean;
  /** Drop the source's pages once read (default true: the node may be serving). */
  dropSourceCache?: boolean;
  /** Tests only: writes after this many chunks fail with EIO. */
  faultAfterChunks?: number;
  /** O_DIRECT reads and writes where the filesystems allow it (default true). */
  directIo?: boolean;
  /** Tests only: behave as a filesystem refusing O_DIRECT at open, or at the first write. */
  testDirectRefusal?: 'open' | 'transfer';
  /**
   * A complete copy is being replaced and stays usable until the new one is whole: an existing
   * `name` is left alone and the job stops at a synced, fully journaled `name.partial`, which
   * the caller renames once every file is done.
   */
  finishAsPartial?: boolean;
}

/** How a copy or a check moved its bytes: O_DIRECT, through the page cache, or not at all. */
export type IoMode = 'direct' | 'buffered' | 'none';

export interface PackLayerJob extends LayerGeometry, PackFileJob {
  weight: SourceTensor;
  scale: SourceTensor;
  /** Global id of the file's first row. */
  start: number;
  /** The data file's header block, exactly 4096 bytes, written as given at offset 0. */
  header: Uint8Array;
}

/** One Engram table of a shard, for the sparse copy: its rows [start, end) at their offsets. */
export interface SparseTableJob {
  weightOffset: number;
  scaleOffset: number;
  dim: number;
  start: number;
  end: number;
  chunkRows: number;
}

export interface SparseShardJob extends PackFileJob {
  sourcePath: string;
  /** The shard's size: the copy's apparent size. */
  sourceBytes: number;
  /** 8 + N: the safetensors header bytes copied verbatim, and their CRC-32 when planned. */
  headerBytes: number;
  headerCrc: number;
  tables: SparseTableJob[];
}

export interface PackLayerResult {
  checksums: number[];
  chunksKept: number;
  chunksRejected: number;
  chunksWritten: number;
  bytesWritten: number;
  journalDiscarded: boolean;
  wasComplete: boolean;
  /** How this run read the sources and wrote the data file. */
  readIo: IoMode;
  writeIo: IoMode;
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
  /** The header block the file must start with, exactly 4096 bytes. */
  header: Uint8Array;
  /** One per chunk; ignored (may be empty) when checkChunks is false. */
  checksums: number[];
  threads: number;
  checkChunks?: boolean;
  dropCache?: boolean;
  /** O_DIRECT chunk reads where the filesystem allows it (default true). */
  directIo?: boolean;
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
  /** How the chunk pass read ('none': no chunk pass). */
  readIo: IoMode;
}

/** The data pass over one table of a sparse copy: its rows [start, end) read from its two columns. */
export interface SparseVerifyJob {
  weight: SourceTensor;
  scale: SourceTensor;
  dim: number;
  start: number;
  end: number;
  chunkRows: number;
  /** Expected CRC-32 per chunk (weight bytes then scale bytes of its rows); absent: no checksums. */
  checksums?: number[];
  /** Compare every row with these tensors (the snapshot the copy was made from). */
  source?: { weight: SourceTensor; scale: SourceTensor };
  threads: number;
  dropCache?: boolean;
  /** O_DIRECT reads where the filesystem allows it (default true). */
  directIo?: boolean;
}

/** What the sparse pass found: badChunks are chunk indices, badRows global ids (lowest 16 of each). */
export type SparseVerifyResult = Omit<VerifyLayerResult, 'fileBytes' | 'sizeOk' | 'headerOk'>;

export interface VerifyLayerProgress {
  bytesTotal: number;
  bytesDone: number;
}

export interface NativeJob<R, P> {
  promise: Promise<R>;
  progress(): P;
}

type NativeFileJob = Omit<PackFileJob, 'dir'> & { dirFd: number; dirPath: string };

interface PackAddon {
  packLayer(job: Omit<PackLayerJob, 'dir'> & NativeFileJob): {
    promise: Promise<PackLayerResult>;
    progress(): number[];
  };
  packSparseShard(job: Omit<SparseShardJob, 'dir'> & NativeFileJob): {
    promise: Promise<PackLayerResult>;
    progress(): number[];
  };
  verifyLayer(job: VerifyLayerJob): { promise: Promise<VerifyLayerResult>; progress(): number[] };
  verifySparseTable(job: SparseVerifyJob): { promise: Promise<SparseVerifyResult>; progress(): number[] };
  lockDirectory(path: string): number;
  unlockDirectory(fd: number): void;
  dirWriteFile(fd: number, dir: string, name: string, data: Uint8Array): void;
  dirReadFile(fd: number, dir: string, name: string, maxBytes: number): Buffer | undefined;
  dirRemove(fd: number, dir: string, name: string): void;
  dirRename(fd: number, dir: string, from: string, to: string): void;
  dirJournalClaim(fd: number, dir: string, journal: string, file: string): JournalClaim;
  probeHoles(fd: number, dir: string, fill: boolean): { apparent: number; allocated: number };
  crc32(data: Uint8Array, crc?: number): number;
  crc32Implementation: string;
}

function native(): PackAddon {
  return addon() as unknown as PackAddon;
}

function packJob<J extends PackFileJob>(
  start: (job: Omit<J, 'dir'> & NativeFileJob) => { promise: Promise<PackLayerResult>; progress(): number[] },
  job: J,
): NativeJob<PackLayerResult, PackLayerProgress> {
  const { dir, ...rest } = job;
  let h: ReturnType<typeof start>;
  try {
    h = start({ ...rest, dirFd: dir.fd, dirPath: dir.path });
  } catch (err) {
    throw toSparkError(err);
  }
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

export function packLayer(job: PackLayerJob): NativeJob<PackLayerResult, PackLayerProgress> {
  return packJob((j) => native().packLayer(j), job);
}

/** The overlay's sparse copy of one shard; checksums hold every table's chunks, table after table. */
export function packSparseShard(job: SparseShardJob): NativeJob<PackLayerResult, PackLayerProgress> {
  return packJob((j) => native().packSparseShard(j), job);
}

export function verifyLayer(job: VerifyLayerJob): NativeJob<VerifyLayerResult, VerifyLayerProgress> {
  return verifyJob(() => native().verifyLayer(job));
}

export function verifySparseTable(job: SparseVerifyJob): NativeJob<SparseVerifyResult, VerifyLayerProgress> {
  return verifyJob(() => native().verifySparseTable(job));
}

function verifyJob<R>(start: () => { promise: Promise<R>; progress(): number[] }): NativeJob<R, VerifyLayerProgress> {
  const h = start();
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

/** What a pack journal proves of the file beside it (native/core/pack/pack_journal.h). */
export interface JournalClaim {
  /** The journal is one spark wrote (its magic and its key's checksum hold), for whatever job. */
  journal: boolean;
  /** It names the file's device and inode: the file is the one spark created for it. */
  namesFile: boolean;
}

/**
 * A pack's output directory, opened and locked (flock: one pack at a time; released by
 * unlock() or at exit). Every file the pack writes goes through its descriptor: created with
 * O_EXCL|O_NOFOLLOW, never through a link (E_UNSAFE_PATH names the link instead).
 */
export interface PackDirectory {
  readonly path: string;
  readonly fd: number;
  /** Writes `name` atomically: name.tmp, fsync, rename, fsync of the directory. */
  writeFile(name: string, data: string | Uint8Array): void;
  /** The file's bytes (a regular file of at most maxBytes), or undefined when absent. */
  readFile(name: string, maxBytes: number): Buffer | undefined;
  /** Removes `name` if present (then fsyncs the directory). */
  remove(name: string): void;
  /** Renames the regular file `from` over `to` (a link at either is refused), then fsyncs the directory. */
  rename(from: string, to: string): void;
  /**
   * What the journal `journal` proves of `file` beside it: that it is a journal spark wrote, and
   * that it names `file` (its device and inode): the file is then spark's own. A link, or a file
   * that is not a singly linked regular file, at either name is refused (E_UNSAFE_PATH).
   */
  journalClaim(journal: string, file: string): JournalClaim;
  /** Whether the filesystem keeps holes; `fill` makes the probe allocate like one that does not (tests). */
  probeHoles(fill?: boolean): { apparent: number; allocated: number };
  unlock(): void;
}

function call<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw toSparkError(err);
  }
}

export function lockDirectory(path: string): PackDirectory {
  const fd = call(() => native().lockDirectory(path));
  let held = true;
  const open = (): number => {
    if (!held) throw new SparkError('E_INTERNAL', `${path}: the pack directory was already unlocked`);
    return fd;
  };
  return {
    path,
    fd,
    writeFile: (name, data) =>
      call(() => native().dirWriteFile(open(), path, name, typeof data === 'string' ? Buffer.from(data) : data)),
    readFile: (name, maxBytes) => call(() => native().dirReadFile(open(), path, name, maxBytes)),
    remove: (name) => call(() => native().dirRemove(open(), path, name)),
    rename: (from, to) => call(() => native().dirRename(open(), path, from, to)),
    journalClaim: (journal, file) => call(() => native().dirJournalClaim(open(), path, journal, file)),
    probeHoles: (fill = false) => call(() => native().probeHoles(open(), path, fill)),
    unlock() {
      if (held) native().unlockDirectory(fd);
      held = false;
    },
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
