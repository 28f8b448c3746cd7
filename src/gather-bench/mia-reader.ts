// The Mia stack's read path as a bench variant: a child process running the baseline library
// (bench/baselines/mia-row-store, built by binding.gyp into build/Release) over one packed
// shard, fed batches of ids over a pipe. The child times each row_store_lookup call itself
// and reports its own CPU and storage bytes, so the pipe is never counted.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { SparkError } from '../errors/errors.js';
import { packageRoot } from '../addon/index.js';

export const MIA_DRIVER = 'build/Release/mia_row_store_bench';
export const MIA_LIBRARY = 'build/Release/libmia_row_store_baseline.so';

/** row_store_stats, by name. */
export interface MiaStats {
  hits: number;
  misses: number;
  reads: number;
  cacheBytes: number;
  cacheSlots: number;
  pinnedScaleBytes: number;
  ways: number;
  threads: number;
  packed: boolean;
}

export interface MiaLookup {
  ms: number;
  cpuSeconds: number;
  /** Bytes the child fetched from storage during the lookup; undefined without /proc/self/io. */
  deviceBytes?: number;
  /** With `echo`: the rows, weight (256 B) then scale (8 B) per id. */
  rows?: Buffer;
}

export interface MiaReaderOptions {
  pack: string;
  layer: number;
  /** Rows of the whole table (N), and the rank's [lo, hi). */
  rows: number;
  lo: number;
  hi: number;
  /** DSV41_IO_THREADS of the child. */
  threads: number;
  /** The row cache's byte budget (0: no cache). */
  budget: number;
  /** DSV41_CACHE_WAYS (the library clamps it to 1..16). */
  ways: number;
  echo?: boolean;
}

export function miaDriverPath(): string {
  return join(packageRoot(), MIA_DRIVER);
}

const STATS = [
  'hits',
  'misses',
  'reads',
  'cacheBytes',
  'cacheSlots',
  'pinnedScaleBytes',
  'ways',
  'threads',
  'packed',
] as const;
const ALL_ONES = 0xffffffffffffffffn;

function stats(b: Buffer, at: number): MiaStats {
  const v = STATS.map((_, i) => Number(b.readBigUInt64LE(at + i * 8)));
  const o = Object.fromEntries(STATS.map((k, i) => [k, v[i]])) as unknown as MiaStats;
  o.packed = v[8] === 1;
  return o;
}

export class MiaReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private waiting?: { bytes: number; resolve: (b: Buffer) => void; reject: (e: Error) => void };
  private stderr = '';
  private exited?: string;

  private constructor(
    private readonly child: ChildProcessByStdio<Writable, Readable, Readable>,
    private readonly echo: boolean,
  ) {
    child.stdout.on('data', (d: Buffer) => {
      this.chunks.push(d);
      this.have += d.length;
      this.deliver();
    });
    child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    child.on('close', (code, signal) => {
      this.exited = signal ? `killed by ${signal}` : `exit ${code}`;
      this.waiting?.reject(this.failure());
      this.waiting = undefined;
    });
    child.stdin.on('error', () => {}); // a child that died: reported by 'close'
  }

  /** Starts the child; resolves once the pack is attached (else rejects with its reason). */
  static async open(o: MiaReaderOptions): Promise<{ reader: MiaReader; stats: MiaStats }> {
    const driver = miaDriverPath();
    if (!existsSync(driver)) {
      throw new SparkError(
        'E_ADDON_LOAD',
        `the Mia baseline is not built (${driver} missing): run 'npm run build:native'`,
      );
    }
    const args = [
      '--pack',
      o.pack,
      '--layer',
      o.layer,
      '--rows',
      o.rows,
      '--lo',
      o.lo,
      '--hi',
      o.hi,
      '--threads',
      o.threads,
      '--budget',
      o.budget,
      '--ways',
      o.ways,
    ].map(String);
    if (o.echo) args.push('--echo');
    const child = spawn(driver, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const reader = new MiaReader(child, Boolean(o.echo));
    const ready = await reader.take(8 + 72);
    return { reader, stats: stats(ready, 8) };
  }

  async lookup(ids: number[]): Promise<MiaLookup> {
    const req = Buffer.alloc(8 + ids.length * 8);
    req.writeBigUInt64LE(BigInt(ids.length), 0);
    ids.forEach((id, i) => req.writeBigInt64LE(BigInt(id), 8 + i * 8));
    this.child.stdin.write(req);
    const head = await this.take(24);
    const io = head.readBigUInt64LE(16);
    const out: MiaLookup = {
      ms: Number(head.readBigUInt64LE(0)) / 1e6,
      cpuSeconds: Number(head.readBigUInt64LE(8)) / 1e9,
    };
    if (io !== ALL_ONES) out.deviceBytes = Number(io);
    if (this.echo) {
      const body = await this.take(ids.length * 264);
      out.rows = Buffer.alloc(ids.length * 264);
      for (let i = 0; i < ids.length; i++) {
        body.copy(out.rows, i * 264, i * 256, i * 256 + 256);
        body.copy(out.rows, i * 264 + 256, ids.length * 256 + i * 8, ids.length * 256 + i * 8 + 8);
      }
    }
    return out;
  }

  async stats(): Promise<MiaStats> {
    const req = Buffer.alloc(8);
    req.writeBigUInt64LE(ALL_ONES, 0);
    this.child.stdin.write(req);
    return stats(await this.take(72), 0);
  }

  /** Ends the child (EOF on its stdin); rejects when it did not exit 0. */
  async close(): Promise<void> {
    if (this.exited === undefined) {
      await new Promise<void>((resolve) => {
        this.child.once('close', () => resolve());
        this.child.stdin.end();
      });
    }
    if (this.exited !== 'exit 0') throw this.failure();
  }

  private failure(): Error {
    const why = this.stderr.trim().split('\n').pop() || 'no message';
    return new SparkError('E_IO', `the Mia baseline (${MIA_DRIVER}) ended: ${this.exited}: ${why}`);
  }

  private take(bytes: number): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      if (this.exited !== undefined && this.have < bytes) return reject(this.failure());
      this.waiting = { bytes, resolve, reject };
      this.deliver();
    });
  }

  private deliver(): void {
    const w = this.waiting;
    if (!w || this.have < w.bytes) return;
    const all = Buffer.concat(this.chunks);
    this.chunks = all.length > w.bytes ? [all.subarray(w.bytes)] : [];
    this.have = all.length - w.bytes;
    this.waiting = undefined;
    w.resolve(all.subarray(0, w.bytes));
  }
}
