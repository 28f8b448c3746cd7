// What a node holds in the Mia stack's packed directory (DSV41_PACKED_DIR on the host, see
// docs/mia-stack.md), gathered two ways that must agree: in-process (spark on the node, or this
// machine) and by the sh probe. For every `engram-l*-r*of*.bin` in the directory: what it is
// (following links, as the stack's open does), its size, its first 48 bytes (the header's six
// fields, or the start of a version-1 JSON header), and whether it opens with O_DIRECT (the
// only way the stack's reader opens a pack); and the `identity.json` receipt beside them.
// Nothing but a regular file is ever opened, and of its data only the 48 header bytes are
// read (the probe's O_DIRECT try reads one aligned 4 KiB block; spark only opens the file).
import { closeSync, constants, fstatSync, openSync, readdirSync, readSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ShValue } from '../../remote/sh-template.js';
import { readSmallTextSync } from '../../files/small-file.js';
import { MIA_HEADER_FIELDS_BYTES } from '../../stacks/mia/mia-shard.js';
import type { MiaDirFact, MiaFileFact, PathKind } from './types.js';

/** Files the stack could be asked to open; more than any directory of real packs holds. */
export const MIA_DIR_MAX_FILES = 64;
/** The sparkrun registry's receipt beside the packs. */
export const MIA_IDENTITY_NAME = 'identity.json';
const IDENTITY_MAX_BYTES = 64 << 10;
/** The names the shell glob `engram-l*-r*of*.bin` matches (the stack parses them further). */
const CANDIDATE = /^engram-l.*-r.*of.*\.bin$/s;

function kindOf(path: string): { kind: PathKind; size?: number } {
  try {
    const s = statSync(path);
    if (s.isFile()) return { kind: 'file', size: s.size };
    return { kind: s.isDirectory() ? 'dir' : 'other' };
  } catch {
    return { kind: 'missing' };
  }
}

/** The first 48 bytes of a regular file (O_NONBLOCK: a FIFO swapped in after the stat does not block). */
function head(path: string): string | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    if (!fstatSync(fd).isFile()) return undefined;
    const b = Buffer.alloc(MIA_HEADER_FIELDS_BYTES);
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

/** The packed directory's facts, read on this machine. */
export function collectMiaDir(dir: string): MiaDirFact {
  const fact: MiaDirFact = { dir, kind: kindOf(dir).kind, files: [] };
  if (fact.kind !== 'dir') return fact;
  let names: string[] = [];
  try {
    names = readdirSync(dir).filter((n) => CANDIDATE.test(n));
  } catch {
    return fact;
  }
  for (const name of names.sort(byteOrder).slice(0, MIA_DIR_MAX_FILES)) {
    const path = join(dir, name);
    const k = kindOf(path);
    const f: MiaFileFact = { name, ...k };
    if (k.kind === 'file') {
      const h = head(path);
      if (h !== undefined) f.head = h;
      f.direct = opensDirect(path);
    }
    fact.files.push(f);
  }
  try {
    fact.identity = readSmallTextSync(join(dir, MIA_IDENTITY_NAME), {
      what: 'identity file',
      maxBytes: IDENTITY_MAX_BYTES,
    });
  } catch {
    // absent, not a regular file, or too large: no receipt to compare
  }
  return fact;
}

/** Byte order of file names (the probe's `LC_ALL=C` glob order). */
function byteOrder(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

/** The values of the probe's part for the packed directory (mia-dir.sh, inlined in probe.sh). */
export function miaDirValues(dir: string | undefined): Record<string, ShValue> {
  return {
    MIA_DIRS: dir === undefined ? [] : [dir],
    MIA_MAX_FILES: MIA_DIR_MAX_FILES,
    MIA_HEADER_BYTES: MIA_HEADER_FIELDS_BYTES,
    MIA_IDENTITY_NAME,
    MIA_IDENTITY_MAX_BYTES: IDENTITY_MAX_BYTES,
  };
}

/** Reads one `mdir`/`mfile`/`mident` line of the probe into `into` (created by `mdir`). */
export function parseMiaDirLine(
  f: string[],
  into: MiaDirFact | undefined,
  unhex: (hex: string) => Buffer,
): MiaDirFact | undefined {
  const [tag, a = '', b = '', c = '', d = '', e = ''] = f;
  if (tag === 'mdir') return { dir: unhex(b).toString('utf8'), kind: a as PathKind, files: [] };
  if (!into) return into;
  if (tag === 'mident') into.identity = unhex(a).toString('utf8');
  if (tag === 'mfile' && into.files.length < MIA_DIR_MAX_FILES) {
    const file: MiaFileFact = { name: unhex(a).toString('utf8'), kind: b as PathKind };
    if (file.kind === 'file') {
      if (/^\d+$/.test(c)) file.size = Number(c);
      if (e.startsWith('x')) file.head = unhex(e.slice(1)).toString('hex');
      file.direct = d === '1';
    }
    into.files.push(file);
  }
  return into;
}
