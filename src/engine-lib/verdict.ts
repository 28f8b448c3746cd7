// What a serving stack's image needs of a row library file, judged from the ELF reader's
// summary (elf.ts): the one definition `spark preflight` applies on every node and that
// native/engine-libs/check-lib.sh applies to a build (docs/engine-libs.md).
import { compareGlibc, type ElfSummary } from '../files/elf.js';
import { ET_DYN } from './engine-lib.js';
import type { ServingStack } from '../stacks/registry.js';

/** The newest glibc symbol version the oldest base image of the stacks (Ubuntu 22.04) has. */
export const GLIBC_FLOOR = 'GLIBC_2.35';

/** The C library's own objects: every image has them, whatever C++ runtime it carries. */
export const C_LIBRARY_OBJECTS: readonly string[] = [
  'libc.so.6',
  'libm.so.6',
  'libpthread.so.0',
  'libdl.so.2',
  'ld-linux-x86-64.so.2',
  'ld-linux-aarch64.so.1',
];

/** Why the file is not a shared object for `machine`, or undefined when it is one. */
export function machineProblem(elf: ElfSummary, machine: string): string | undefined {
  if (elf.type !== ET_DYN) return `is an ELF file of type ${elf.type}, not a shared object`;
  if (elf.machine !== machine)
    return `is built for ${elf.machine}, this node is ${machine || 'of unknown machine'}: the stack's dlopen fails`;
  return undefined;
}

export interface AbiVerdict {
  /** Problems that make the stack fail at import (or use a library of another ABI). */
  errors: string[];
  /** What cannot be told from the file: a library of the ABI without spark's version note. */
  warnings: string[];
}

/** Another stack's ABI, to name a library that is that stack's. */
export interface OtherAbi {
  stack: ServingStack;
  symbols: readonly string[];
}

/** How the file's exports and version note stand against the stack's ABI (`symbols`: abiSymbols(stack)). */
export function abiVerdict(
  elf: ElfSummary,
  stack: ServingStack,
  symbols: readonly string[],
  others: readonly OtherAbi[],
): AbiVerdict {
  const errors: string[] = [];
  const warnings: string[] = [];
  const has = new Set(elf.exports);
  const missing = symbols.filter((s) => !has.has(s));
  const extra = elf.exports.filter((s) => !symbols.includes(s));
  const other = others.find((o) => o.symbols.length > 0 && o.symbols.every((s) => has.has(s)));
  if (other && missing.length > 0) {
    errors.push(
      `is ${other.stack.libraryFile}, the other stack's library (it exports ${other.symbols[0]} and the rest of that ABI), not ${stack.libraryFile}`,
    );
    return { errors, warnings };
  }
  if (missing.length > 0)
    errors.push(`does not export ${missing.join(', ')}: the stack looks every ABI symbol up at import and fails`);
  if (extra.length > 0)
    errors.push(
      `exports symbols beyond the ABI (${extra.slice(0, 5).join(', ')}${extra.length > 5 ? ', …' : ''}): not a build of native/engine-libs/${stack.name}`,
    );
  const want = stack.abiVersion;
  if (want !== undefined && missing.length === 0) {
    if (elf.abiNote === undefined)
      warnings.push(
        `carries no ABI version note (.note.spark.abi): not spark's build, so its version (the stack wants ${want}) is not known without running it`,
      );
    else if (elf.abiNote !== want) errors.push(`reports ABI version ${elf.abiNote}, the stack wants ${want}`);
  }
  return { errors, warnings };
}

/** Why the file would not load in the stacks' images: a library beyond the C library's, or a glibc symbol too new. */
export function loadProblems(elf: ElfSummary): string[] {
  const out: string[] = [];
  const beyond = elf.needed.filter((n) => !C_LIBRARY_OBJECTS.includes(n));
  if (beyond.length > 0) out.push(`needs ${beyond.join(', ')} (only the C library's objects are in every image)`);
  if (elf.glibcMax !== undefined && compareGlibc(elf.glibcMax, GLIBC_FLOOR) > 0) {
    out.push(`imports ${elf.glibcMax} symbols, newer than Ubuntu 22.04's ${GLIBC_FLOOR.replace('_', ' ')}`);
  }
  return out;
}
