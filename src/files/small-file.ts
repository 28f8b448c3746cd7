// The one reader of the small files spark is handed: config.json, an index, recipes, cluster
// and env files, manifests, sysfs attributes. A path can name anything: a FIFO blocks a plain
// open() forever, /dev/zero never ends, a directory fails with a bare EISDIR. So: open without
// blocking, require a regular file, and stop at a size cap, each refusal one line naming the file.
import { closeSync, constants, fstatSync, openSync, readSync, type Stats } from 'node:fs';
import { open } from 'node:fs/promises';
import { SparkError } from '../errors/errors.js';
import { formatBytes } from '../terminal/format.js';

/** Caps by kind of file: far above any real one, far below what would hurt. */
export const SIZE_CAPS = {
  /** A recipe, cluster file, env file, config.json, a manifest. */
  text: 16 << 20,
  /** A model.safetensors.index.json: a few MB for ~100k tensors. */
  index: 256 << 20,
  /** One sysfs attribute (the kernel serves at most a page). */
  sysfs: 64 << 10,
} as const;

export interface SmallFileOptions {
  /** What the file is, for messages: "recipe", "env file", "index". */
  what: string;
  /** Bytes; larger is refused. Default SIZE_CAPS.text. */
  maxBytes?: number;
}

// O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one.
// O_NOCTTY: a terminal named by mistake must not become our controlling terminal.
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY; // libuv adds O_CLOEXEC itself
const CHUNK = 64 << 10;

function kindOf(st: Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

function notAFile(path: string, what: string, st: Stats): SparkError {
  return new SparkError(
    'E_NOT_A_FILE',
    `the ${what} ${path} is ${kindOf(st)}, not a regular file; point at the file itself`,
    { path },
  );
}

function tooLarge(path: string, what: string, maxBytes: number): SparkError {
  return new SparkError(
    'E_FILE_TOO_LARGE',
    `the ${what} ${path} is larger than ${formatBytes(maxBytes)}, far more than such a file holds; point at the right file`,
    { path },
  );
}

/** Refuses what is not a regular file of at most maxBytes (by its stat). */
function checkStat(st: Stats, path: string, what: string, maxBytes: number): void {
  if (!st.isFile()) throw notAFile(path, what, st);
  if (st.size > maxBytes) throw tooLarge(path, what, maxBytes);
}

/**
 * Collects chunks to EOF, not to st.size: sysfs reports 4096 for everything, /proc reports 0,
 * and a file may grow while we read it. One byte past the cap is enough to refuse it.
 */
class Collector {
  private chunks: Buffer[] = [];
  private total = 0;
  constructor(
    private readonly path: string,
    private readonly what: string,
    private readonly maxBytes: number,
  ) {}

  nextBuffer(): Buffer {
    return Buffer.allocUnsafe(Math.min(CHUNK, this.maxBytes + 1 - this.total));
  }

  /** Adds a read's bytes; false at EOF. */
  add(buf: Buffer, n: number): boolean {
    if (n === 0) return false;
    this.chunks.push(buf.subarray(0, n));
    this.total += n;
    if (this.total > this.maxBytes) throw tooLarge(this.path, this.what, this.maxBytes);
    return true;
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks, this.total);
  }
}

/** The whole file. Open errors (ENOENT, EACCES) are thrown as Node raised them. */
export async function readSmallBytes(path: string, options: SmallFileOptions): Promise<Buffer> {
  const maxBytes = options.maxBytes ?? SIZE_CAPS.text;
  const fh = await open(path, READ_FLAGS);
  try {
    checkStat(await fh.stat(), path, options.what, maxBytes);
    const out = new Collector(path, options.what, maxBytes);
    for (;;) {
      const buf = out.nextBuffer();
      if (!out.add(buf, (await fh.read(buf, 0, buf.length, null)).bytesRead)) return out.bytes();
    }
  } finally {
    await fh.close();
  }
}

/** The whole file as UTF-8 text. */
export async function readSmallText(path: string, options: SmallFileOptions): Promise<string> {
  return (await readSmallBytes(path, options)).toString('utf8');
}

/** The first `bytes` bytes (fewer at EOF) of a regular file of any size: a shard's header. */
export async function readFilePrefix(path: string, bytes: number, what: string): Promise<Buffer> {
  const fh = await open(path, READ_FLAGS);
  try {
    checkStat(await fh.stat(), path, what, Number.MAX_SAFE_INTEGER);
    const b = Buffer.alloc(bytes);
    let got = 0;
    while (got < bytes) {
      const { bytesRead } = await fh.read(b, got, bytes - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return b.subarray(0, got);
  } finally {
    await fh.close();
  }
}

/** readSmallText for the synchronous readers (sysfs scans, preflight's file probes). */
export function readSmallTextSync(path: string, options: SmallFileOptions): string {
  const maxBytes = options.maxBytes ?? SIZE_CAPS.text;
  const fd = openSync(path, READ_FLAGS);
  try {
    checkStat(fstatSync(fd), path, options.what, maxBytes);
    const out = new Collector(path, options.what, maxBytes);
    for (;;) {
      const buf = out.nextBuffer();
      if (!out.add(buf, readSync(fd, buf, 0, buf.length, null))) return out.bytes().toString('utf8');
    }
  } finally {
    closeSync(fd);
  }
}
