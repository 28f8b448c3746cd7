// The one registry of serving stacks, pack layouts and node-local directory formats. Each room
// (a folder beside this file, room.ts) owns its entries; a new stack or format is one more
// folder and one more line in ROOMS. Everything else asks here, by name or by directory.
import { posix } from 'node:path';
import { usageError } from '../errors/errors.js';
import { miaRoom } from './mia/room.js';
import { overlayRoom } from './overlay/room.js';
import { packedRoom } from './packed/room.js';
import type { DirFormat, HeldDir, PackLayout, Room, ServingStack } from './room.js';
import type { StackPreflight } from '../preflight-api/types.js';

export type { DirFormat, PackLayout, ServingStack } from './room.js';

export const ROOMS: readonly Room[] = [overlayRoom, packedRoom, miaRoom];

export const STACKS: readonly ServingStack[] = ROOMS.flatMap((r) => r.stacks);
export const LAYOUTS: readonly PackLayout[] = ROOMS.flatMap((r) => r.layouts);
const FORMATS: readonly DirFormat[] = ROOMS.flatMap((r) => r.formats);

/** What `spark pack` writes when --layout is not given. */
export const DEFAULT_LAYOUT = 'sparse';

/** "a, b or c" */
function either(names: readonly string[]): string {
  return names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} or ${names[names.length - 1]}`;
}

export function stackNamed(name: string): ServingStack {
  const s = STACKS.find((x) => x.name === name);
  if (!s) throw new Error(`no serving stack is named '${name}'`);
  return s;
}

export function layoutNamed(name: string): PackLayout {
  const l = LAYOUTS.find((x) => x.name === name);
  if (!l) throw new Error(`no pack layout is named '${name}'`);
  return l;
}

/** `--stack NAME`, checked: a usage error lists the stacks. */
export function parseStack(value: string | undefined): ServingStack {
  const s = STACKS.find((x) => x.name === value);
  if (s) return s;
  const choices = either(STACKS.map((x) => `${x.name} (${x.title}, ${x.envHint})`));
  throw usageError(`--stack must be ${choices}, not '${value ?? ''}'`, { key: '--stack' });
}

/** `--layout NAME`, checked: a usage error lists the layouts. */
export function parseLayout(value: string): PackLayout {
  const l = LAYOUTS.find((x) => x.name === value);
  if (l) return l;
  throw usageError(`--layout must be ${either(LAYOUTS.map((x) => x.name))}, got '${value}'`);
}

/** The stack whose image loads its row library from `containerPath`, if any. */
export function stackOfImagePath(containerPath: string): ServingStack | undefined {
  const p = posix.normalize(containerPath);
  return STACKS.find((s) => s.imagePath === p);
}

/** The room that reads a directory of this kind. */
export function formatOf<D extends HeldDir>(local: D): DirFormat<D['kind']> {
  const f = FORMATS.find((x) => x.kind === local.kind);
  if (!f) throw new Error(`no room reads a directory of kind '${local.kind}'`);
  return f as unknown as DirFormat<D['kind']>;
}

/** What messages call a node-local copy of this kind ("sparse copy", "pack"), and who made it where that is worth saying. */
export function copyNoun(kind: string, madeBy?: string): string {
  const f = FORMATS.find((x) => x.kind === kind);
  const noun = f?.noun ?? 'pack';
  return f?.namesMaker && madeBy !== undefined ? `${noun} made by ${madeBy}` : noun;
}

/** What every stack adds to preflight (its rules, its reader directory), loaded on first use. */
export function stackPreflights(): Promise<StackPreflight[]> {
  return Promise.all(STACKS.flatMap((s) => (s.preflight ? [s.preflight()] : [])));
}
