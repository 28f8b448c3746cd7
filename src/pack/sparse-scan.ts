// The data pass of `spark verify` over a sparse copy's table: rows [start, end) in chunks,
// weight rows then scale rows of each chunk, read once from the copy; per chunk its CRC-32
// (the manifest's checksum: the weight bytes followed by the scale bytes) and, given the
// source tensors, the rows compared with the source's. Chunks run on `threads` concurrent
// readers; pages are dropped from the cache behind them (page cache is GPU memory there).
import { open, type FileHandle } from 'node:fs/promises';
import { crc32, type VerifyLayerResult } from '../native/pack.js';
import { dropCache } from '../native/sparse.js';

export interface Column {
  weightPath: string;
  /** Absolute offset of row 0's weight bytes in weightPath. */
  weightOffset: number;
  scalePath: string;
  scaleOffset: number;
}

export interface ScanJob {
  copy: Column;
  dim: number;
  start: number;
  end: number;
  chunkRows: number;
  /** Expected CRC-32 per chunk (8 hex digits), when the copy has checksums. */
  checksums?: string[];
  /** Compare every row with these tensors (the snapshot the copy was made from). */
  source?: Column;
  /** Compare only these rows (global ids) with the source, one read each. */
  sample?: number[];
  threads: number;
  onBytes?: (n: number) => void;
}

/** What the native verifier reports of a pack's data file, less the file checks; badRows are global ids here. */
export type ScanResult = Omit<VerifyLayerResult, 'fileBytes' | 'sizeOk' | 'headerOk' | 'readIo'>;

/** Reads a table's rows from its two columns (often one file, opened twice: no shared position). */
class Reader {
  private constructor(
    private readonly weight: FileHandle,
    private readonly scale: FileHandle,
    private readonly col: Column,
    private readonly dim: number,
  ) {}

  static async open(col: Column, dim: number): Promise<Reader> {
    const weight = await open(col.weightPath, 'r');
    const scale = await open(col.scalePath, 'r').catch(async (err: unknown) => {
      await weight.close();
      throw err;
    });
    return new Reader(weight, scale, col, dim);
  }

  /** Weight rows [a, a + n) into w and their scale rows into s (zeros past the end of a file). */
  async rows(a: number, n: number, w: Buffer, s: Buffer): Promise<number> {
    const sb = this.dim / 32;
    const got = await readAt(this.weight, w, n * this.dim, this.col.weightOffset + a * this.dim);
    return got + (await readAt(this.scale, s, n * sb, this.col.scaleOffset + a * sb));
  }

  async close(): Promise<void> {
    await this.weight.close();
    await this.scale.close();
  }
}

async function readAt(fh: FileHandle, buf: Buffer, length: number, position: number): Promise<number> {
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  buf.fill(0, done, length);
  dropCache(fh.fd, position, length);
  return done;
}

const MAX_REPORTED = 16;

/** Adds v to a list that keeps (after the final sort and trim) its lowest MAX_REPORTED values. */
function keepLowest(list: number[], v: number): void {
  list.push(v);
  if (list.length > 64 * MAX_REPORTED) {
    list.sort((a, b) => a - b);
    list.length = MAX_REPORTED;
  }
}

export async function scanTable(job: ScanJob): Promise<ScanResult> {
  const result: ScanResult = { chunksChecked: 0, badChunkCount: 0, badChunks: [], rowsCompared: 0, badRowCount: 0, badRows: [], bytesRead: 0 };
  const rb = job.dim + job.dim / 32;
  const copy = await Reader.open(job.copy, job.dim);
  const source = job.source ? await Reader.open(job.source, job.dim) : undefined;
  const differing = (a: number, n: number, cw: Buffer, cs: Buffer, sw: Buffer, ss: Buffer): void => {
    const sb = job.dim / 32;
    for (let i = 0; i < n; i++) {
      const same =
        cw.compare(sw, i * job.dim, (i + 1) * job.dim, i * job.dim, (i + 1) * job.dim) === 0 &&
        cs.compare(ss, i * sb, (i + 1) * sb, i * sb, (i + 1) * sb) === 0;
      if (same) continue;
      result.badRowCount++;
      keepLowest(result.badRows, a + i);
    }
    result.rowsCompared += n;
  };
  try {
    const passes = job.checksums !== undefined || (source !== undefined && job.sample === undefined);
    if (passes) {
      const chunks = Math.ceil((job.end - job.start) / job.chunkRows);
      let next = 0;
      const worker = async (): Promise<void> => {
        const cw = Buffer.alloc(job.chunkRows * job.dim);
        const cs = Buffer.alloc((job.chunkRows * job.dim) / 32);
        const sw = source ? Buffer.alloc(cw.length) : undefined;
        const ss = source ? Buffer.alloc(cs.length) : undefined;
        for (let k = next++; k < chunks; k = next++) {
          const a = job.start + k * job.chunkRows;
          const n = Math.min(job.chunkRows, job.end - a);
          result.bytesRead += await copy.rows(a, n, cw, cs);
          if (job.checksums) {
            const crc = crc32(cs.subarray(0, (n * job.dim) / 32), crc32(cw.subarray(0, n * job.dim)));
            if (crc.toString(16).padStart(8, '0') !== job.checksums[k]) {
              result.badChunkCount++;
              keepLowest(result.badChunks, k);
            }
            result.chunksChecked++;
          }
          if (source && sw && ss && job.sample === undefined) {
            result.bytesRead += await source.rows(a, n, sw, ss);
            differing(a, n, cw, cs, sw, ss);
          }
          job.onBytes?.(n * rb * (source && job.sample === undefined ? 2 : 1));
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(job.threads, chunks)) }, worker));
    }
    if (source && job.sample !== undefined) {
      const ids = job.sample;
      let next = 0;
      const worker = async (): Promise<void> => {
        const bufs = [Buffer.alloc(job.dim), Buffer.alloc(job.dim / 32), Buffer.alloc(job.dim), Buffer.alloc(job.dim / 32)] as const;
        for (let j = next++; j < ids.length; j = next++) {
          result.bytesRead += (await copy.rows(ids[j], 1, bufs[0], bufs[1])) + (await source.rows(ids[j], 1, bufs[2], bufs[3]));
          differing(ids[j], 1, ...bufs);
        }
      };
      await Promise.all(Array.from({ length: Math.max(1, Math.min(job.threads, ids.length)) }, worker));
    }
  } finally {
    await copy.close();
    await source?.close();
  }
  for (const list of [result.badChunks, result.badRows]) {
    list.sort((a, b) => a - b);
    list.length = Math.min(list.length, MAX_REPORTED);
  }
  return result;
}
