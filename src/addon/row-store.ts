// Typed wrapper over the addon's RowStore: the Engram row store's whole TypeScript surface.
// Tables are described explicitly (src/domain/table-spec.ts: file paths and absolute byte
// offsets); src/stacks/row-source.ts builds those descriptions from a snapshot or a pack.
import { addon } from './index.js';
import { usageError } from '../errors/errors.js';
import type { TableSpec, U64 } from '../domain/table-spec.js';

/** Deterministic faults for tests: every Nth read call (counted across threads) misbehaves. */
export interface FaultOptions {
  /** Cut short (keeping O_DIRECT alignment). */
  shortEvery?: number;
  /** O_DIRECT: returns half a block less than it read, as an NFS server may. */
  shortUnalignedEvery?: number;
  eintrEvery?: number;
  eioEvery?: number;
  etimedoutEvery?: number;
  /** The descriptor used by the Nth read goes stale: ESTALE on it from then on. */
  estaleAt?: number;
  /** The Nth read throws a C++ exception (a bug where none is expected). */
  throwAt?: number;
  /** Starting the Nth reader thread fails as under a pid limit. */
  threadStartFailAt?: number;
  /** Sleep this long before every read (models NFS latency; the pread pool only). */
  delayUs?: number;
  /** io_uring_setup fails with this errno (tests of the fallback to the pread pool). */
  uringSetupErrno?: number;
}

/**
 * Transient read errors (ETIMEDOUT, ESTALE, EIO: what NFS reports when its server is slow or
 * failed over) are retried `retries` times (default 4), waiting `delayMs` (default 50) before
 * the first retry and twice as long before each next one, at most 1 s; ESTALE reopens the file.
 */
export interface RetryOptions {
  retries?: number;
  delayMs?: number;
}

export interface RowStoreOptions {
  /** Reader threads; default SPARK_ENGRAM_THREADS, else 64. */
  threads?: number;
  /** Sort ids and read each distinct row once (default true). */
  dedup?: boolean;
  /** One read for rows sharing or neighbouring a page (default true). */
  merge?: boolean;
  maxMergeBytes?: number;
  /** POSIX_FADV_RANDOM on buffered files (default true). */
  fadviseRandom?: boolean;
  /**
   * Copy rows that a read has already brought into the page cache out of a read-only mapping
   * of their file, with no read call (default true). Applies to buffered files on local
   * filesystems; O_DIRECT files and network filesystems are always read with read calls.
   */
  mapCached?: boolean;
  retry?: RetryOptions;
  faults?: FaultOptions;
  /**
   * How reads are issued. 'pread': blocking reads on the store's threads. 'uring': one io_uring
   * per store, many reads in flight from one submitting thread (an error where the kernel
   * refuses io_uring). 'auto' (default): io_uring when every file is on a local filesystem
   * and io_uring can be set up, else the pread pool; stats().ioEngine says which runs and
   * stats().ioEngineNote why auto kept the pread pool.
   */
  ioEngine?: 'auto' | 'pread' | 'uring';
  /** io_uring: reads in flight per store (default 128). */
  ioDepth?: number;
  /** Environment consulted for SPARK_ENGRAM_THREADS (default process.env). */
  env?: NodeJS.ProcessEnv;
}

export interface RowStoreStats {
  batches: number;
  rows: number;
  reads: number;
  /** Of those, reads the page cache served on the calling thread without waiting (RWF_NOWAIT). */
  inlineReads: number;
  bytesRead: number;
  duplicates: number;
  merged: number;
  /** EINTR and short-read continuations. */
  retries: number;
  /** Reads retried after a transient error. */
  errorRetries: number;
  /** Files opened again after ESTALE. */
  reopens: number;
  residentBytes: number;
  /** Rows copied out of a file mapping (their pages known cached), with no read call. */
  mappedRows: number;
  /** Runs of those copies slow enough to show evicted pages: their pages are read by calls again. */
  mappedStale: number;
  /** Files this store maps (0: mapCached is off, or every file is O_DIRECT or on a network filesystem). */
  mappedFiles: number;
  /** The engine running this store's reads. */
  ioEngine: 'pread' | 'uring';
  /** Why 'auto' kept the pread pool (a network filesystem, io_uring refused, faults injected). */
  ioEngineNote?: string;
  threads: number;
  inflight: number;
}

export interface RowTableInfo {
  layer: number;
  lo: U64;
  hi: U64;
  rowBytes: number;
  directRequested: boolean;
  directActive: boolean;
  residentScales: boolean;
}

export type RowIds = Uint32Array | BigUint64Array | readonly number[];

interface NativeRowStore {
  /** Fills `out` at completion, or resolves with a new Buffer when it is omitted. */
  gather(layer: number, ids: Uint32Array | BigUint64Array, out?: Uint8Array): Promise<Buffer | undefined>;
  loadResident(): Promise<void>;
  learnCached(): Promise<number>;
  gatherCached(layer: number, ids: Uint32Array | BigUint64Array, out: Uint8Array): boolean;
  stats(): RowStoreStats;
  tables(): RowTableInfo[];
  close(): void;
  dispose(): void;
}

type NativeRowStoreClass = new (tables: TableSpec[], options: Record<string, unknown>) => NativeRowStore;

export const DEFAULT_THREADS = 64;

/**
 * Batches up to this many ids first try the mapping on the calling thread (gatherCached): a
 * warm 24-id batch then takes microseconds instead of a round trip through the reader pool.
 * Larger ones go to the pool, whose threads copy in parallel without holding up the event loop.
 */
export const CACHED_MAX_IDS = 4096;

/** SPARK_ENGRAM_THREADS when set (1..1024), else 64. */
export function threadsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.SPARK_ENGRAM_THREADS;
  if (raw === undefined || raw.trim() === '') return DEFAULT_THREADS;
  const n = Number(raw.trim());
  if (!/^\d+$/.test(raw.trim()) || n < 1 || n > 1024) {
    throw usageError(`SPARK_ENGRAM_THREADS must be a whole number from 1 to 1024, got '${raw}'`);
  }
  return n;
}

/** number[] ids as a typed array (Uint32Array when every id fits), checked to be whole and >= 0. */
export function toIdArray(ids: RowIds): Uint32Array | BigUint64Array {
  if (ids instanceof Uint32Array || ids instanceof BigUint64Array) return ids;
  if (!Array.isArray(ids)) throw new TypeError('ids must be a Uint32Array, a BigUint64Array or an array of numbers');
  let small = true;
  for (let i = 0; i < ids.length; i++) {
    const id: unknown = ids[i];
    if (typeof id !== 'number') throw new TypeError(`ids[${i}] is not a number`);
    if (!Number.isSafeInteger(id) || id < 0) {
      const err = new RangeError(`row id ${id} (batch index ${i}) is not a whole non-negative number`);
      (err as RangeError & { code: string }).code = 'E_ROW_RANGE';
      throw err;
    }
    if (id > 0xffffffff) small = false;
  }
  return small ? Uint32Array.from(ids) : BigUint64Array.from(ids, (x) => BigInt(x));
}

export class RowStore {
  readonly threads: number;
  private readonly native: NativeRowStore;
  private readonly rowBytesByLayer = new Map<number, number>();
  private readonly pending = new Set<Promise<unknown>>();
  private closing: Promise<void> | undefined;
  private readonly mapped: boolean;

  private constructor(native: NativeRowStore, threads: number) {
    this.native = native;
    this.threads = threads;
    this.mapped = native.stats().mappedFiles > 0;
    for (const t of native.tables()) this.rowBytesByLayer.set(t.layer, t.rowBytes);
  }

  /**
   * Opens the files of every table and loads resident scales (reported in stats().residentBytes).
   * Where rows are copied out of a mapping (stats().mappedFiles > 0) it also starts, without
   * waiting for it, learnCached(): rows the page cache already holds are copied from the first
   * batch on.
   */
  static async open(tables: TableSpec[], options: RowStoreOptions = {}): Promise<RowStore> {
    const threads = options.threads ?? threadsFromEnv(options.env);
    const Native = (addon() as unknown as { RowStore: NativeRowStoreClass }).RowStore;
    const native = new Native(tables, { ...options, env: undefined, threads });
    const store = new RowStore(native, threads);
    if (tables.some((t) => t.kind === 'snapshot' && t.residentScales)) {
      try {
        await store.track(native.loadResident());
      } catch (err) {
        await store.close();
        throw err;
      }
    }
    if (native.stats().mappedFiles > 0) store.learnCached().catch(() => undefined);
    return store;
  }

  /** Bytes per row of a layer (D + D/32). */
  rowBytes(layer: number): number {
    const n = this.rowBytesByLayer.get(layer);
    if (n === undefined) throw rangeError(`layer ${layer} is not in this row store`);
    return n;
  }

  /**
   * Reads the rows at `ids` of `layer` in one batch: row i lands at out[i * rowBytes]. Resolves
   * with `out` as a Buffer (a new Buffer when omitted). `out` is written only on this thread:
   * within this call when every row is known cached (gatherCached; the promise is then already
   * settled), else when the batch completes; a buffer detached meanwhile (transferred with
   * postMessage or structuredClone) makes the batch reject with E_USAGE instead. Rejects with a RangeError for
   * an id outside the table (before any read), a TypeError for an output buffer that is too
   * small, and an error carrying code/path/offset for I/O failures.
   */
  gather(layer: number, ids: RowIds, out?: Uint8Array): Promise<Buffer> {
    try {
      const typed = toIdArray(ids);
      const rowBytes = this.rowBytes(layer); // an unknown layer is a RangeError here, before the addon is asked
      if (
        this.mapped &&
        typed.length <= CACHED_MAX_IDS &&
        (out === undefined || out.byteLength >= typed.length * rowBytes)
      ) {
        const target = out === undefined ? Buffer.allocUnsafe(typed.length * rowBytes) : out;
        const result = Buffer.isBuffer(target)
          ? target
          : Buffer.from(target.buffer, target.byteOffset, target.byteLength);
        if (this.native.gatherCached(layer, typed, target)) return Promise.resolve(result);
        return this.track(this.native.gather(layer, typed, target)).then(() => result);
      }
      if (out === undefined) {
        return this.track(this.native.gather(layer, typed)).then((rows) => rows as Buffer);
      }
      const result = Buffer.isBuffer(out) ? out : Buffer.from(out.buffer, out.byteOffset, out.byteLength);
      return this.track(this.native.gather(layer, typed, out)).then(() => result);
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * Asks the kernel which pages of the tables' rows the page cache holds now (one mincore call
   * per 65,536 pages) so their rows are copied out of the mapping rather than read; resolves
   * with the pages found. For a cache warmed behind the store's back (another process, a
   * restart); rows the store reads itself are known without it. 0 when nothing is mapped.
   */
  learnCached(): Promise<number> {
    try {
      return this.track(this.native.learnCached());
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * The batch on this thread, out of the mapping only, never waiting for a device: true when
   * every row's pages were known cached and all of them are in `out`; false when one was not
   * (then `out` is partly written: call gather()). gather() tries this itself for batches of
   * up to CACHED_MAX_IDS ids. Throws what gather() rejects with for bad arguments.
   */
  gatherCached(layer: number, ids: RowIds, out: Uint8Array): boolean {
    const typed = toIdArray(ids);
    this.rowBytes(layer);
    return this.mapped && this.native.gatherCached(layer, typed, out);
  }

  stats(): RowStoreStats {
    return this.native.stats();
  }

  tables(): RowTableInfo[] {
    return this.native.tables();
  }

  /** Rejects batches in flight and later ones; resolves once every batch has settled and the files are closed. */
  close(): Promise<void> {
    if (!this.closing) {
      this.native.close();
      this.closing = Promise.allSettled([...this.pending]).then(() => this.native.dispose());
    }
    return this.closing;
  }

  private track<T>(p: Promise<T>): Promise<T> {
    this.pending.add(p);
    const done = (): void => {
      this.pending.delete(p);
    };
    p.then(done, done);
    return p;
  }
}

function rangeError(message: string): RangeError {
  const err = new RangeError(message);
  (err as RangeError & { code: string }).code = 'E_ROW_RANGE';
  return err;
}
