// Small pieces shared by pack and verify: what they need of a snapshot's Engram tables, the
// source files' identity (size and mtime), directory fsync and progress polling.
import { open, stat } from 'node:fs/promises';
import type { PackedSourceFile } from './pack-format.js';

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

/** Size and mtime of each distinct file, in first-seen order. */
export async function statSources(tensors: PackTensor[]): Promise<PackedSourceFile[]> {
  const seen = new Map<string, PackTensor>();
  for (const t of tensors) if (!seen.has(t.fileName)) seen.set(t.fileName, t);
  const out: PackedSourceFile[] = [];
  for (const [name, t] of seen) {
    const st = await stat(t.file);
    out.push({ name, bytes: st.size, mtimeMs: st.mtimeMs });
  }
  return out;
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
