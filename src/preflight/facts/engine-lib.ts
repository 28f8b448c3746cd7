// The engine-library files a node would bind-mount over a serving stack's own row library
// (docs/engine-libs.md), and the node's machine, gathered two ways that must agree:
// in-process (spark on the node, or this machine) and by a short sh command of its own, sent
// after the probe (`engineLibScript`). For each host path: what it is (following links, as
// docker's bind mount does, and whether it is a link), and for a regular file its size, its
// sha256 and what the one ELF reader (files/elf.ts) finds in it. Nothing but a regular
// file of at most ENGINE_LIB_MAX_BYTES is read; the sh command sends its bytes, and this
// machine computes the digest and reads the ELF from them, as spark on the node does.
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync, statSync } from 'node:fs';
import { machine } from 'node:os';
import { shQuote } from '../../remote/shell.js';
import { readElf } from '../../files/elf.js';
import { hexBytes } from './hex.js';
import type { EngineLibFileFact, EngineLibsFact, PathKind } from '../../preflight-api/node-facts.js';

/** A real library is well under 1 MiB; anything this large is not one and is not sent. */
export const ENGINE_LIB_MAX_BYTES = 64 << 20;

/** The file's facts from its kind and, for a regular file, its bytes (or why they were not read). */
export function engineLibFileFact(
  path: string,
  kind: PathKind,
  link: boolean,
  bytes: Buffer | { size: number; unread: string },
): EngineLibFileFact {
  const f: EngineLibFileFact = { path, kind, ...(link ? { link: true } : {}) };
  if (kind !== 'file') return f;
  if (!Buffer.isBuffer(bytes)) return { ...f, size: bytes.size, unread: bytes.unread };
  f.size = bytes.length;
  f.sha256 = createHash('sha256').update(bytes).digest('hex');
  try {
    f.elf = readElf(bytes);
  } catch (err) {
    f.elfError = (err as Error).message;
  }
  return f;
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Reads a regular file whole. What it is is asked first (stat, following links as docker
 * does), so a device or FIFO is never opened; the open does not block (a FIFO swapped in after
 * the stat does not hang) and fstat checks again what was opened.
 */
function readLibrary(path: string): EngineLibFileFact {
  const link = isLink(path);
  let kind: PathKind;
  try {
    const st = statSync(path);
    kind = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : 'other';
  } catch {
    kind = 'missing';
  }
  if (kind !== 'file') return { path, kind, ...(link ? { link: true } : {}) };
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR'
      ? { path, kind: 'missing', ...(link ? { link: true } : {}) }
      : { path, kind: 'file', ...(link ? { link: true } : {}), unread: code ?? 'error' };
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) return engineLibFileFact(path, st.isDirectory() ? 'dir' : 'other', link, Buffer.alloc(0));
    if (st.size > ENGINE_LIB_MAX_BYTES)
      return engineLibFileFact(path, 'file', link, {
        size: st.size,
        unread: `larger than ${ENGINE_LIB_MAX_BYTES} bytes`,
      });
    const b = Buffer.alloc(st.size);
    let got = 0;
    for (let n = -1; n !== 0 && got < b.length; got += n) n = readSync(fd, b, got, b.length - got, got);
    return engineLibFileFact(path, 'file', link, b.subarray(0, got));
  } catch (err) {
    return {
      path,
      kind: 'file',
      ...(link ? { link: true } : {}),
      unread: (err as NodeJS.ErrnoException).code ?? 'error',
    };
  } finally {
    closeSync(fd);
  }
}

/** The library files' facts and this machine's, read here. */
export function collectEngineLibs(paths: readonly string[]): EngineLibsFact {
  return { machine: machine(), files: paths.map(readLibrary) };
}

/**
 * The sh command for the files. Output: `emachine HEX` (uname -m), then per path
 * `efile I KIND LINK SIZE xBYTESHEX` (`-` for what is not read), then `end`. Only a regular,
 * readable file of at most ENGINE_LIB_MAX_BYTES is read, whole, by od.
 */
export function engineLibScript(paths: readonly string[]): string {
  return String.raw`LC_ALL=C; export LC_ALL
hx() { od -An -v -tx1 | tr -d ' \n'; }
printf 'spark-engine-libs 1\nemachine '; uname -m | tr -d '\n' | hx; echo
i=0
for p in ${paths.map(shQuote).join(' ')}; do
  if [ -d "$p" ]; then k=dir; elif [ -f "$p" ]; then k=file; elif [ -e "$p" ]; then k=other; else k=missing; fi
  l=0; [ -L "$p" ] && l=1
  s=-; b=-
  if [ $k = file ]; then
    s=$(wc -c < "$p" 2>/dev/null | tr -d ' ')
    if [ -r "$p" ] && [ -n "$s" ] && [ "$s" -le ${ENGINE_LIB_MAX_BYTES} ]; then b=x$(hx < "$p"); fi
  fi
  printf 'efile %s %s %s %s %s\n' $i $k $l "${'$'}{s:--}" "$b"
  i=$((i+1))
done
printf 'end\n'
`;
}

/** Parses the command's answer; throws when it did not finish. */
export function parseEngineLibs(out: string, paths: readonly string[]): EngineLibsFact {
  const lines = out.split('\n');
  const start = lines.indexOf('spark-engine-libs 1');
  if (start < 0 || !lines.includes('end'))
    throw new Error(`the library check did not finish: ${out.trim().split('\n').at(-1) ?? 'no output'}`);
  const fact: EngineLibsFact = { machine: '', files: paths.map((path) => ({ path, kind: 'missing' as PathKind })) };
  for (const line of lines.slice(start + 1)) {
    const [tag, a = '', b = '', c = '', d = '', e = ''] = line.split(' ');
    if (tag === 'emachine') fact.machine = hexBytes(a)?.toString('utf8') ?? '';
    if (tag !== 'efile') continue;
    const i = Number(a);
    const path = paths[i];
    if (path === undefined || !['file', 'dir', 'other', 'missing'].includes(b)) continue;
    const sent = e.startsWith('x');
    const bytes = sent ? hexBytes(e.slice(1)) : undefined;
    const size = /^\d+$/.test(d) ? Number(d) : 0;
    fact.files[i] = engineLibFileFact(
      path,
      b as PathKind,
      c === '1',
      bytes ?? {
        size,
        unread:
          size > ENGINE_LIB_MAX_BYTES
            ? `larger than ${ENGINE_LIB_MAX_BYTES} bytes`
            : sent
              ? 'its bytes came back from the node garbled (not hex)'
              : 'not readable',
      },
    );
  }
  return fact;
}

/**
 * Every file as not read, for `why`: what a node whose answer about its library files was lost
 * reports, so the file rule fails on each (never a pass on files nobody read).
 */
export function unreadEngineLibs(paths: readonly string[], why: string): EngineLibsFact {
  return { machine: '', files: paths.map((path) => ({ path, kind: 'file' as PathKind, unread: why })) };
}
