// Small pieces shared by pack and verify: what they need of a snapshot's Engram tables, the
// source files' identity, directory fsync and progress polling.
import { constants } from 'node:fs';
import { lstat, open, type FileHandle } from 'node:fs/promises';
import { SparkError } from '../errors/errors.js';
import { crc32 } from '../addon/pack.js';
import type { RecordedSourceFile } from '../engram/manifest-fields.js';

/** The checksum every pack and sparse copy records per chunk of rows. */
export const CHECKSUM_ALGORITHM = 'crc32';

/** A CRC-32 as a manifest writes it: 8 lowercase hex digits. */
export function checksumHex(crc: number): string {
  return (crc >>> 0).toString(16).padStart(8, '0');
}

/** What pack and verify need of one tensor (a subset of the snapshot model's TensorRef). */
export interface PackTensor {
  /** Absolute path. */
  file: string;
  /** Relative to the snapshot directory (recorded in the manifest). */
  fileName: string;
  /** Absolute byte offset of the tensor's first byte in its file. */
  fileOffset: number;
  dtype: string;
}

/** One Engram table (a subset of the snapshot model's EngramTable). */
export interface PackTable {
  layer: number;
  rows: number;
  dim: number;
  weight: PackTensor;
  scale: PackTensor;
}

/**
 * Who a source file is. Size and mtime alone do not tell (`rsync -t --inplace` keeps both
 * while changing bytes), so the inode, the ctime (which every write moves) and a checksum of
 * the safetensors header come too; together they key a pack's resume and its final re-check.
 */
export interface SourceIdentity {
  /** Relative to the snapshot directory. */
  name: string;
  /** Absolute path. */
  file: string;
  bytes: number;
  mtimeMs: number;
  ino: number;
  ctimeMs: number;
  /** 8 + N for a .safetensors shard (0 for other files, such as the index). */
  headerBytes: number;
  /** CRC-32 of those header bytes, or of the whole file when it is not a shard. */
  crc: number;
}

/** O_NONBLOCK: a FIFO at a source's name is refused as not a regular file, never waited on. */
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK;

/** The most a safetensors header may be: 8 + 100,000,000 bytes. */
const MAX_HEADER_BYTES = 8 + 100_000_000;
/** Non-shard sources (the index) are read whole: a real index is a few MB. */
const MAX_WHOLE_BYTES = 256 << 20;

async function readAt(path: string, fh: FileHandle, bytes: number, at: number): Promise<Buffer> {
  const buf = Buffer.alloc(bytes);
  let got = 0;
  while (got < bytes) {
    const { bytesRead } = await fh.read(buf, got, bytes - got, at + got);
    if (bytesRead === 0)
      throw new SparkError('E_SOURCE_CHANGED', `${path} ends early: it changed since it was opened; re-run`, { path });
    got += bytesRead;
  }
  return buf;
}

/** The identity of each distinct file, in first-seen order (shards: name ends in .safetensors). */
export async function identifySources(files: { name: string; file: string }[]): Promise<SourceIdentity[]> {
  const seen = new Map<string, string>();
  for (const f of files) if (!seen.has(f.name)) seen.set(f.name, f.file);
  const out: SourceIdentity[] = [];
  for (const [name, file] of seen) {
    const fh = await open(file, READ_FLAGS);
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new SparkError('E_SNAPSHOT', `${file} is not a regular file`, { path: file });
      let headerBytes = 0;
      let crc: number;
      if (name.endsWith('.safetensors')) {
        const n = (await readAt(file, fh, 8, 0)).readBigUInt64LE(0);
        headerBytes = 8 + Number(n);
        if (n > BigInt(MAX_HEADER_BYTES) || headerBytes > st.size) {
          throw new SparkError(
            'E_SOURCE_CHANGED',
            `${file}: its header length ${n} no longer fits the file; re-run spark inspect on the snapshot`,
            { path: file },
          );
        }
        crc = crc32(await readAt(file, fh, headerBytes, 0));
      } else {
        if (st.size > MAX_WHOLE_BYTES)
          throw new SparkError('E_SNAPSHOT', `${file} is larger than ${MAX_WHOLE_BYTES} bytes`, { path: file });
        crc = crc32(await readAt(file, fh, st.size, 0));
      }
      out.push({ name, file, bytes: st.size, mtimeMs: st.mtimeMs, ino: st.ino, ctimeMs: st.ctimeMs, headerBytes, crc });
    } finally {
      await fh.close();
    }
  }
  return out;
}

/** The identities of the tensors' files, in first-seen order. */
export async function identifyTensorSources(tensors: PackTensor[]): Promise<SourceIdentity[]> {
  return identifySources(tensors.map((t) => ({ name: t.fileName, file: t.file })));
}

/** What the manifests record of a source file: the whole identity, as the journal keys on it. */
export function sourceFileEntry(s: SourceIdentity): RecordedSourceFile {
  return {
    name: s.name,
    bytes: s.bytes,
    mtimeMs: s.mtimeMs,
    ino: s.ino,
    ctimeMs: s.ctimeMs,
    headerBytes: s.headerBytes,
    headerCrc32: checksumHex(s.crc),
  };
}

/** How a source file changed between two identities ('' when it did not). */
export function sourceChange(before: SourceIdentity, after: SourceIdentity): string {
  return recordedChange(sourceFileEntry(before), after);
}

/**
 * How a source file changed since a manifest recorded it ('' when it did not). Fields an older
 * manifest lacks are not compared: such a copy is held to its size and mtime only.
 */
export function recordedChange(before: RecordedSourceFile, after: SourceIdentity): string {
  if (after.bytes !== before.bytes) return `size ${before.bytes} -> ${after.bytes}`;
  if (after.mtimeMs !== before.mtimeMs) return `mtime ${before.mtimeMs} -> ${after.mtimeMs}`;
  if (before.ino !== undefined && after.ino !== before.ino)
    return `replaced by another file (inode ${before.ino} -> ${after.ino})`;
  if (before.ctimeMs !== undefined && after.ctimeMs !== before.ctimeMs)
    return `written in place (ctime ${before.ctimeMs} -> ${after.ctimeMs})`;
  const headerChanged = before.headerBytes !== undefined && after.headerBytes !== before.headerBytes;
  if (headerChanged || (before.headerCrc32 !== undefined && checksumHex(after.crc) !== before.headerCrc32))
    return 'its header bytes changed';
  return '';
}

/** Fails with E_SOURCE_CHANGED when any source file is not what it was when the pack began. */
export async function recheckSources(before: SourceIdentity[]): Promise<void> {
  const after = await identifySources(before);
  for (const [i, b] of before.entries()) {
    const why = sourceChange(b, after[i]);
    if (why !== '') {
      throw new SparkError(
        'E_SOURCE_CHANGED',
        `${b.name} changed while it was being packed (${why}); no manifest was written; re-run spark pack once the snapshot is stable`,
        { path: b.file },
      );
    }
  }
}

/** The part of a resume key that names the sources: everything that identifies them. */
export function sourceKey(s: SourceIdentity): object {
  return {
    name: s.name,
    bytes: s.bytes,
    mtimeMs: s.mtimeMs,
    ino: s.ino,
    ctimeMs: s.ctimeMs,
    headerBytes: s.headerBytes,
    crc: s.crc,
  };
}

/** fsync of a directory, so a rename or unlink in it is durable. */
export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch (err) {
    // Some filesystems refuse fsync on a directory; their metadata updates are synchronous.
    if ((err as NodeJS.ErrnoException).code !== 'EINVAL') throw err;
  } finally {
    await fh.close();
  }
}

/** Awaits `promise`, calling `tick` every `ms` (0: never) and once more when it settles. */
export async function pollWhile<T>(promise: Promise<T>, tick: () => void, ms: number): Promise<T> {
  if (ms <= 0) return promise;
  const timer = setInterval(tick, ms);
  try {
    return await promise;
  } finally {
    clearInterval(timer);
    tick();
  }
}

/** Size of a file in out (lstat: never through a link), or undefined when absent or not a file. */
export async function fileInfo(path: string): Promise<{ size: number; allocated: number } | undefined> {
  const st = await lstat(path).catch(() => undefined);
  if (!st || !st.isFile()) return undefined;
  return { size: st.size, allocated: st.blocks * 512 };
}
