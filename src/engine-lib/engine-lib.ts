// The engine libraries (docs/engine-libs.md): where the build puts a stack's library (its file
// name and image path are its room's, stacks/registry.ts), its ABI's symbols, and a copy of the
// built file that a recipe can mount. The ELF facts a node can check without binutils (machine, size,
// sha256: the same build on every node) come from reading the file itself.
import { createHash } from 'node:crypto';
import { lstatSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { packageRoot } from '../addon/index.js';
import { SparkError } from '../errors/errors.js';
import type { ServingStack } from '../stacks/registry.js';
import { writeNewFile } from '../files/new-file.js';
import { readElf, type ElfSummary } from '../files/elf.js';

/** e_type of a shared object. */
export const ET_DYN = 3;

export interface EngineLibraryInfo {
  stack: string;
  /** The library's file name, the same in the build and in the image. */
  name: string;
  /** The built file. */
  library: string;
  /** Where the stack's image loads it from: the read-only bind mount's target. */
  imagePath: string;
  /** The ABI's exported symbols (the build's version script, exports.map), sorted. */
  symbols: string[];
}

/**
 * The ABI's symbols: the `global:` names of the stack's version script, the one list the
 * linker, check-lib.sh and preflight all read.
 */
export function abiSymbols(stack: string, root = packageRoot()): string[] {
  const map = readFileSync(join(root, 'native', 'engine-libs', stack, 'exports.map'), 'utf8');
  const global = /global:([^}]*?)local:/s.exec(map)?.[1] ?? '';
  return [...global.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\s*;/g)].map((m) => m[1]!).sort();
}

export function engineLibrary(stack: ServingStack, root = packageRoot()): EngineLibraryInfo {
  return {
    stack: stack.name,
    name: stack.libraryFile,
    imagePath: stack.imagePath,
    library: join(root, 'build', 'Release', stack.libraryFile),
    symbols: abiSymbols(stack.name, root),
  };
}

export interface LibraryFile {
  bytes: number;
  sha256: string;
  /** 'x86_64', 'aarch64', or `machine N` when it is neither. */
  machine: string;
  /** What the file itself exports, needs and imports (elf.ts). */
  elf: ElfSummary;
}

/** Reads the built file: an ELF64 little-endian shared object, its machine, size, digest and dynamic facts. */
export function describeLibrary(path: string): LibraryFile {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    throw new SparkError(
      'E_FILE_NOT_FOUND',
      `${path}: not built; run npm install (or npm run build:native) in the spark checkout`,
      { path },
    );
  }
  if (!st.isFile())
    throw new SparkError('E_NOT_A_FILE', `${path}: not a regular file; rebuild with npm run build:native`, { path });
  const data = readFileSync(path);
  let elf: ElfSummary;
  try {
    elf = readElf(data);
  } catch (err) {
    throw new SparkError('E_CHECK_FAILED', `${path}: ${(err as Error).message}; rebuild with npm run build:native`, {
      path,
    });
  }
  if (elf.type !== ET_DYN)
    throw new SparkError('E_CHECK_FAILED', `${path}: not an ELF shared object; rebuild with npm run build:native`, {
      path,
    });
  return { bytes: data.length, sha256: createHash('sha256').update(data).digest('hex'), machine: elf.machine, elf };
}

/**
 * Copies the built library into the existing directory `dir` as its own name (new-file.ts: a
 * link there is never written through, a reader never sees half a file, and a copy that fails
 * leaves nothing behind).
 */
export function copyEngineLibrary(info: EngineLibraryInfo, dir: string): string {
  const target = resolve(dir);
  let st;
  try {
    st = lstatSync(target);
  } catch {
    throw new SparkError(
      'E_FILE_NOT_FOUND',
      `${target}: no such directory; create it first (--copy takes an existing directory)`,
      { path: target },
    );
  }
  if (!st.isDirectory())
    throw new SparkError(
      'E_NOT_A_FILE',
      `${target}: not a directory (a symlink is not followed); give --copy a real directory`,
      { path: target },
    );
  const dest = join(target, info.name);
  writeNewFile(dest, readFileSync(info.library), 0o755);
  return dest;
}
