// What each room gives the registry (registry.ts). A room is a folder of src/stacks/ that owns one
// serving stack's or one format's knowledge: the node-local directories it reads and writes
// (a DirFormat per kind of directory local-dir.ts tells apart), the layouts `spark pack` writes
// for it (PackLayout), and the stack whose engine library spark builds (ServingStack). Code
// outside the rooms asks the registry and never compares a stack's or layout's name.
import type { LocalCopy } from '../engram/copy-ranges.js';
import type { VerifyReport, VerifyRequest } from '../pack/verify-report.js';
import type { LocalDir } from './local-dir.js';
import type { Planner } from './pack-plan.js';
import type { RowSource, RowSourceOptions } from './row-source.js';
import type { StackPreflight } from '../preflight-api/types.js';

/** A directory that holds rows (local-dir.ts): every kind but 'none'. */
export type HeldDir = Exclude<LocalDir, { kind: 'none' }>;
export type HeldKind = HeldDir['kind'];
export type HeldOf<K extends HeldKind> = Extract<HeldDir, { kind: K }>;

/**
 * One kind of node-local directory, as every command reads it. The registry is loaded at every
 * boot (the wrapper, engram-ranges), so what reads rows, verifies or plans a pack is imported
 * when it is called.
 */
export interface DirFormat<K extends HeldKind = HeldKind> {
  kind: K;
  /** What it is called in messages: "sparse copy", "pack". */
  noun: string;
  /** Other tools make it too, so a message says who made it. */
  namesMaker: boolean;
  /** Its rank's ranges and identity (wrapper, engram-ranges, preflight). */
  copy(path: string, local: HeldOf<K>): Promise<LocalCopy>;
  /** Its rows through the row store (rows, bench gather, verify). */
  openRows(path: string, local: HeldOf<K>, options: RowSourceOptions): Promise<RowSource>;
  /** `spark verify`: every check the format allows, with the source's rows when given. */
  verify(req: VerifyRequest, dir: string, local: HeldOf<K>): Promise<VerifyReport>;
  /** The files its manifest names as spark's own: a pack may replace these without --force. */
  namedFiles(local: HeldOf<K>): string[];
}

/** A layout of `spark pack --layout NAME`. */
export interface PackLayout {
  name: string;
  /** One line for --help. */
  summary: string;
  /** The kind of directory it makes. */
  kind: HeldKind;
  /** It copies the snapshot's index too (the overlay opens a sparse copy as a snapshot). */
  copiesIndex: boolean;
  /** Its pack plan, loaded when a pack runs (the rooms' entries stay light to import). */
  planner(): Promise<Planner>;
  /** The stack whose reader opens it by its own names; spark's own layouts have none. */
  stack?: string;
  /** Rows never straddle a 4 KiB page, so a gather may read with O_DIRECT. */
  pageAligned: boolean;
}

/** A serving stack whose row library spark builds (native/engine-libs/NAME). */
export interface ServingStack {
  name: string;
  /** "Aiden's overlay": how messages name it. */
  title: string;
  /** The environment its library reads, for --help: "SPARK_ENGRAM_*". */
  envHint: string;
  /** The library's file name, the same in the build and in the image. */
  libraryFile: string;
  /** Where the stack's image loads it from: the read-only bind mount's target. */
  imagePath: string;
  /** The ABI version the library reports (engram_rows_abi_version), for a stack that has one. */
  abiVersion?: number;
  /** The layout its reader opens. */
  layout: string;
  /** The variable its reader takes the node-local directory from, and what it expects there. */
  dirEnv: string;
  reads: string;
  /**
   * The stack's own row reader, which `spark bench gather` runs as a baseline under the stack's
   * name: how it reads ('mmap': one mapping, WILLNEED, memcpy workers; 'mia-pool': the stack's
   * pread pool and cache), the sources it can read and the source it reports. A stack whose
   * reader the bench does not reproduce has none.
   */
  original?: { reader: 'mmap' | 'mia-pool'; reads: readonly ('snapshot' | 'sparse' | 'packed')[]; source: string };
  /** What preflight checks of this stack on each node, loaded when preflight runs. */
  preflight?: () => Promise<StackPreflight>;
}

export interface Room {
  /** The folder's name under src/stacks/. */
  name: string;
  formats: DirFormat[];
  layouts: PackLayout[];
  stacks: ServingStack[];
}

/** A room's format, its methods typed for its own kind of directory. */
export function dirFormat<K extends HeldKind>(format: DirFormat<K>): DirFormat {
  return format as unknown as DirFormat;
}
