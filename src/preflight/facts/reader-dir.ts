// What a node holds in a serving stack's reader directory: the directory its native reader
// opens files from by name (the room asks for it: the Mia stack's DSV41_PACKED_DIR, say),
// gathered two ways that must agree: in-process (spark on the node, or this machine) and by
// the sh probe. For every file the room's glob names: what it is (following links, as the
// reader's open does), its size, its first `headBytes` bytes (the reader's header), and
// whether it opens with O_DIRECT; and the receipt the stack's tools write beside them. Nothing
// but a regular file is ever opened, and of its data only the header bytes are read (the
// probe's O_DIRECT try reads one aligned 4 KiB block; spark only opens the file).
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { join } from 'node:path';
import type { ShValue } from '../../remote/sh-template.js';
import { readSmallTextSync } from '../../files/small-file.js';
import { pathFact } from './path-fact.js';
import type { PathKind, ReaderDirFact, ReaderDirRequest, ReaderFileFact } from '../../preflight-api/node-facts.js';

/** Files the reader could be asked to open; more than any directory of real shards holds. */
export const READER_DIR_MAX_FILES = 64;
/** The probe reads one 4 KiB block: no header is longer. */
export const READER_HEAD_MAX_BYTES = 4096;
const RECEIPT_MAX_BYTES = 64 << 10;
/** What a glob (and a receipt's name) may hold: the probe expands the glob unquoted. */
const SAFE_GLOB = /^[A-Za-z0-9._*-]+$/;

/** The request's glob and receipt are names the probe can use as they are; throws on one it cannot. */
export function checkReaderDirRequest(r: ReaderDirRequest): ReaderDirRequest {
  if (!SAFE_GLOB.test(r.glob) || (r.receipt !== undefined && !/^[A-Za-z0-9._-]+$/.test(r.receipt)))
    throw new Error(
      `reader directory: glob ${JSON.stringify(r.glob)} or receipt ${String(r.receipt)} is no plain name`,
    );
  if (!Number.isInteger(r.headBytes) || r.headBytes < 1 || r.headBytes > READER_HEAD_MAX_BYTES)
    throw new Error(`reader directory: headBytes ${r.headBytes} is not 1..${READER_HEAD_MAX_BYTES}`);
  return r;
}

/** The names the shell glob matches (`*` any run of bytes, the rest literal). */
export function globPattern(glob: string): RegExp {
  const body = glob
    .split('*')
    .map((part) => part.replace(/[.\\^$+?()[\]{}|-]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`, 's');
}

/** The first `bytes` bytes of a regular file (O_NONBLOCK: a FIFO swapped in after the stat does not block). */
function head(path: string, bytes: number): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const b = Buffer.alloc(bytes);
    let got = 0;
    for (let n = -1; n !== 0 && got < b.length; got += n) n = readSync(fd, b, got, b.length - got, got);
    return b.subarray(0, got).toString('hex');
  } catch {
    return undefined;
  } finally {
    closeSync(fd);
  }
}

/** Whether the file opens with O_DIRECT, as the stack's reader opens it. */
function opensDirect(path: string): boolean {
  try {
    closeSync(openSync(path, constants.O_RDONLY | constants.O_DIRECT | constants.O_NONBLOCK | constants.O_NOCTTY));
    return true;
  } catch {
    return false;
  }
}

/** The reader directory's facts, read on this machine. */
export function collectReaderDir(request: ReaderDirRequest): ReaderDirFact {
  const { dir, glob, headBytes, receipt } = checkReaderDirRequest(request);
  const fact: ReaderDirFact = { dir, kind: pathFact(dir).kind, files: [] };
  if (fact.kind !== 'dir') return fact;
  const named = globPattern(glob);
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => named.test(n));
  } catch {
    return fact;
  }
  for (const name of names.sort(byteOrder).slice(0, READER_DIR_MAX_FILES)) {
    const path = join(dir, name);
    const k = pathFact(path);
    const f: ReaderFileFact = { name, ...k };
    if (k.kind === 'file') {
      const h = head(path, headBytes);
      if (h !== undefined) f.head = h;
      f.direct = opensDirect(path);
    }
    fact.files.push(f);
  }
  if (receipt === undefined) return fact;
  try {
    fact.receipt = readSmallTextSync(join(dir, receipt), { what: 'receipt', maxBytes: RECEIPT_MAX_BYTES });
  } catch {
    // absent, not a regular file, or too large: no receipt to compare
  }
  return fact;
}

/** Byte order of file names (the probe's `LC_ALL=C` glob order). */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The values of the probe's part for the reader directory (reader-dir.sh, inlined in probe.sh). */
export function readerDirValues(request: ReaderDirRequest | undefined): Record<string, ShValue> {
  const r = request && checkReaderDirRequest(request);
  return {
    READER_DIRS: r === undefined ? [] : [r.dir],
    READER_GLOB: r?.glob ?? '-',
    READER_MAX_FILES: READER_DIR_MAX_FILES,
    READER_HEAD_BYTES: r?.headBytes ?? 1,
    READER_RECEIPT: r?.receipt ?? '',
    READER_RECEIPT_MAX_BYTES: RECEIPT_MAX_BYTES,
  };
}

/** Reads one `rdir`/`rfile`/`rreceipt` line of the probe into `into` (created by `rdir`). */
export function parseReaderDirLine(
  f: string[],
  into: ReaderDirFact | undefined,
  unhex: (hex: string) => Buffer,
): ReaderDirFact | undefined {
  const [tag, a = '', b = '', c = '', d = '', e = ''] = f;
  if (tag === 'rdir') return { dir: unhex(b).toString('utf8'), kind: a as PathKind, files: [] };
  if (!into) return into;
  if (tag === 'rreceipt') into.receipt = unhex(a).toString('utf8');
  if (tag === 'rfile' && into.files.length < READER_DIR_MAX_FILES) {
    const file: ReaderFileFact = { name: unhex(a).toString('utf8'), kind: b as PathKind };
    if (file.kind === 'file') {
      if (/^\d+$/.test(c)) file.size = Number(c);
      if (e.startsWith('x')) file.head = unhex(e.slice(1)).toString('hex');
      file.direct = d === '1';
    }
    into.files.push(file);
  }
  return into;
}
