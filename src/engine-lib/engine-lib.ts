// The engine libraries (docs/engine-libs.md): where the build puts each stack's library, the
// path the stack's image loads it from (the bind mount's target), and a copy of the built file
// that a recipe can mount. The ELF facts a node can check without binutils (machine, size,
// sha256: the same build on every node) come from reading the file itself.
import { createHash } from 'node:crypto';
import { closeSync, constants, fsyncSync, lstatSync, openSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../native/index.js';
import { SparkError, usageError } from '../errors.js';

export type EngineStack = 'overlay' | 'mia';

export interface EngineLibraryInfo {
  stack: EngineStack;
  /** The library's file name, the same in the build and in the image. */
  name: string;
  /** The built file. */
  library: string;
  /** Where the stack's image loads it from: the read-only bind mount's target. */
  imagePath: string;
  /** The ABI's exported symbols, all looked up by the stack at import. */
  symbols: string[];
}

const STACKS: Record<EngineStack, Omit<EngineLibraryInfo, 'library'>> = {
  overlay: {
    stack: 'overlay',
    name: 'libengram_rows.so',
    imagePath: '/opt/dsv41-spark/overlay/libengram_rows.so',
    symbols: [
      'engram_rows_abi_version', 'engram_rows_open', 'engram_rows_gather', 'engram_rows_prefetch',
      'engram_rows_stats', 'engram_rows_resident', 'engram_rows_release', 'engram_rows_close',
    ],
  },
  mia: {
    stack: 'mia',
    name: 'librow_store.so',
    imagePath: '/opt/dsv41/adapter/librow_store.so',
    symbols: ['row_store_open', 'row_store_range', 'row_store_attach_packed', 'row_store_lookup', 'row_store_stats', 'row_store_close'],
  },
};

export function parseStack(value: string | undefined): EngineStack {
  if (value === 'overlay' || value === 'mia') return value;
  throw usageError(`--stack must be overlay (Aiden's overlay, SPARK_ENGRAM_*) or mia (the Mia stack, DSV41_*), not '${value ?? ''}'`, {
    key: '--stack',
  });
}

export function engineLibrary(stack: EngineStack, root = packageRoot()): EngineLibraryInfo {
  const s = STACKS[stack];
  return { ...s, library: join(root, 'build', 'Release', s.name) };
}

/** ELF e_machine values of the two machines spark builds for. */
const MACHINES: Record<number, string> = { 62: 'x86_64', 183: 'aarch64' };

export interface LibraryFile {
  bytes: number;
  sha256: string;
  /** 'x86_64', 'aarch64', or the ELF machine number when it is neither. */
  machine: string;
}

/** Reads the built file: an ELF64 little-endian shared object, its machine, size and digest. */
export function describeLibrary(path: string): LibraryFile {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    throw new SparkError('E_FILE_NOT_FOUND', `${path}: not built; run npm install (or npm run build:native) in the spark checkout`, { path });
  }
  if (!st.isFile()) throw new SparkError('E_NOT_A_FILE', `${path}: not a regular file; rebuild with npm run build:native`, { path });
  const data = readFileSync(path);
  const elf = data.length >= 64 && data.readUInt32BE(0) === 0x7f454c46 && data[4] === 2 && data[5] === 1;
  if (!elf || data.readUInt16LE(16) !== 3) {
    throw new SparkError('E_CHECK_FAILED', `${path}: not a 64-bit little-endian ELF shared object; rebuild with npm run build:native`, { path });
  }
  const m = data.readUInt16LE(18);
  return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex'), machine: MACHINES[m] ?? String(m) };
}

/**
 * Copies the built library into the existing directory `dir` as its own name: written under a
 * fresh name (O_CREAT|O_EXCL|O_NOFOLLOW), synced, then renamed over the target, so a link in
 * the directory is never written through and a reader never sees half a file.
 */
export function copyEngineLibrary(info: EngineLibraryInfo, dir: string): string {
  const target = resolve(dir);
  let st;
  try {
    st = lstatSync(target);
  } catch {
    throw new SparkError('E_FILE_NOT_FOUND', `${target}: no such directory; create it first (--copy takes an existing directory)`, { path: target });
  }
  if (!st.isDirectory()) throw new SparkError('E_NOT_A_FILE', `${target}: not a directory (a symlink is not followed); give --copy a real directory`, { path: target });
  const data = readFileSync(info.library);
  const dest = join(target, info.name);
  const partial = `${dest}.${process.pid}.partial`;
  const fd = openSync(partial, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o755);
  try {
    for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(partial, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(partial, dest);
  return dest;
}
