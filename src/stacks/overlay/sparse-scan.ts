// The data pass of `spark verify` over a sparse copy's table: rows [start, end) in chunks,
// weight rows then scale rows of each chunk, read once from the copy; per chunk its CRC-32
// (the manifest's checksum: the weight bytes followed by the scale bytes) and, given the
// source tensors, the rows compared with the source's. The chunk pass is native
// (verifySparseTable: O_DIRECT where the filesystem allows it, the next chunk read while this
// one is checked, `threads` workers), so the page cache -- GPU memory there -- is left alone;
// a sample of rows is a few single-row reads here, their pages dropped behind.
import { open, type FileHandle } from 'node:fs/promises';
import { verifySparseTable, type SparseVerifyResult } from '../../addon/pack.js';
import { dropCache } from '../../addon/page-cache.js';
import { pollWhile } from '../../pack/pack-io.js';

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

/** What the native verifier reports of a sparse table (badRows are global ids), plus the sample's rows. */
export type ScanResult = SparseVerifyResult;

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

/** Progress polled from a native job, handed on as increments. */
function onProgressOf(job: ScanJob, progress: () => { bytesDone: number }): () => void {
  let reported = 0;
  return () => {
    const done = progress().bytesDone;
    if (done > reported) job.onBytes?.(done - reported);
    reported = Math.max(reported, done);
  };
}

export async function scanTable(job: ScanJob): Promise<ScanResult> {
  let result: ScanResult = {
    chunksChecked: 0,
    badChunkCount: 0,
    badChunks: [],
    rowsCompared: 0,
    badRowCount: 0,
    badRows: [],
    bytesRead: 0,
    readIo: 'none',
  };
  const full = job.source !== undefined && job.sample === undefined;
  if (job.checksums !== undefined || full) {
    const column = (c: Column) => ({
      weight: { path: c.weightPath, offset: c.weightOffset },
      scale: { path: c.scalePath, offset: c.scaleOffset },
    });
    const pass = verifySparseTable({
      ...column(job.copy),
      dim: job.dim,
      start: job.start,
      end: job.end,
      chunkRows: job.chunkRows,
      threads: job.threads,
      ...(job.checksums ? { checksums: job.checksums.map((h) => parseInt(h, 16)) } : {}),
      ...(full && job.source ? { source: column(job.source) } : {}),
    });
    result = await pollWhile(pass.promise, onProgressOf(job, pass.progress), job.onBytes ? 250 : 0);
  }
  if (job.source && job.sample !== undefined) await compareSample(job, job.source, job.sample, result);
  return result;
}

/** Each sampled row (global id) of the copy against the source's, one read of each column on each side. */
async function compareSample(job: ScanJob, sourceColumn: Column, ids: number[], result: ScanResult): Promise<void> {
  const copy = await Reader.open(job.copy, job.dim);
  const source = await Reader.open(sourceColumn, job.dim).catch(async (err: unknown) => {
    await copy.close();
    throw err;
  });
  const sb = job.dim / 32;
  try {
    let next = 0;
    const worker = async (): Promise<void> => {
      const [cw, cs, sw, ss] = [Buffer.alloc(job.dim), Buffer.alloc(sb), Buffer.alloc(job.dim), Buffer.alloc(sb)];
      for (let j = next++; j < ids.length; j = next++) {
        result.bytesRead += (await copy.rows(ids[j], 1, cw, cs)) + (await source.rows(ids[j], 1, sw, ss));
        result.rowsCompared++;
        if (cw.equals(sw) && cs.equals(ss)) continue;
        result.badRowCount++;
        keepLowest(result.badRows, ids[j]);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(job.threads, ids.length)) }, worker));
  } finally {
    await copy.close();
    await source.close();
  }
  result.badRows.sort((a, b) => a - b);
  result.badRows.length = Math.min(result.badRows.length, MAX_REPORTED);
}
