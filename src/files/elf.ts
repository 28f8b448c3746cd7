// The one ELF reader of the engine libraries (docs/engine-libs.md): what a serving stack's
// loader and ctypes look at in a shared object, read from its bytes alone (no binutils, no
// dlopen, so a file built for another machine is read the same way): its type and machine,
// the dynamic symbols it defines, the libraries it needs, the glibc versions it imports, and
// spark's ABI note. Every offset read is checked against the buffer: a cut or corrupt file
// throws an ElfError saying what is wrong, never reads past the end. The work is bounded by the
// file's size, not by what its headers claim: at most ELF_MAX_SECTIONS section headers, and
// ELF_MAX_WALK_BYTES walked in all (notes, symbols, dynamic entries, version needs and the
// names they point at), however often sections overlap the same bytes; past either bound the
// file is refused with an ElfError naming the bound.

/** ELF e_machine values of the two machines spark builds for. */
export const ELF_MACHINES: Record<number, string> = { 62: 'x86_64', 183: 'aarch64' };

export class ElfError extends Error {}

/** Section headers read at most: a linked shared object has a few dozen (spark's builds ~35). */
export const ELF_MAX_SECTIONS = 1024;
/**
 * Bytes walked at most per file, summed over every note, symbol, dynamic and version entry and
 * every name read (spark's builds need under 10 KiB, its addon ~60 KiB): sections that claim
 * more, such as thousands of note sections over the same megabytes, are refused in milliseconds.
 */
export const ELF_MAX_WALK_BYTES = 4 << 20;

export interface ElfSummary {
  /** ET_DYN (3) for a shared object. */
  type: number;
  /** 'x86_64', 'aarch64', or `machine N` for any other e_machine. */
  machine: string;
  /** Defined, global, default-visibility dynamic symbols (the ones ctypes can find), sorted. */
  exports: string[];
  /** DT_NEEDED entries, in order. */
  needed: string[];
  /** The newest GLIBC_x.y version the file imports, or undefined when it imports none. */
  glibcMax?: string;
  /** The int32 of spark's ABI note (name "spark", type 1), when the file carries one. */
  abiNote?: number;
}

const SHT_NOTE = 7;
const SHT_DYNAMIC = 6;
const SHT_DYNSYM = 11;
const SHT_GNU_VERNEED = 0x6ffffffe;
const DT_NEEDED = 1;
/** The ABI note's name and type (native/engine-libs/overlay/overlay_abi.cc writes it). */
export const SPARK_NOTE_NAME = 'spark';
export const SPARK_NOTE_ABI = 1;

interface Section {
  type: number;
  offset: number;
  size: number;
  link: number;
  entsize: number;
  info: number;
}

/** A bounds-checked little-endian view of the file, with what is left of its walk budget. */
class Reader {
  private walked = 0;
  constructor(readonly b: Buffer) {}
  /** Counts `n` more bytes walked for `what`; refuses the file past ELF_MAX_WALK_BYTES. */
  walk(n: number, what: string): void {
    this.walked += n;
    if (this.walked > ELF_MAX_WALK_BYTES)
      throw new ElfError(
        `refused: ${what} would walk more than the ${ELF_MAX_WALK_BYTES} bytes this reader walks in a file (a row library needs a few KiB)`,
      );
  }
  private need(at: number, n: number, what: string): void {
    if (!Number.isSafeInteger(at) || at < 0 || at + n > this.b.length) {
      throw new ElfError(`truncated or corrupt: ${what} at offset ${at} lies past the file's ${this.b.length} bytes`);
    }
  }
  u16(at: number, what: string): number {
    this.need(at, 2, what);
    return this.b.readUInt16LE(at);
  }
  u32(at: number, what: string): number {
    this.need(at, 4, what);
    return this.b.readUInt32LE(at);
  }
  u64(at: number, what: string): number {
    this.need(at, 8, what);
    const v = this.b.readBigUInt64LE(at);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new ElfError(`corrupt: ${what} at offset ${at} is ${v}`);
    return Number(v);
  }
  /**
   * A NUL-terminated string of the string table `strtab` at `index`. The NUL is looked for in
   * the table only (never on through the rest of the file), and the bytes up to it count
   * against the walk budget: a table of one long name that every symbol points at is refused,
   * not scanned once per symbol.
   */
  str(strtab: Section, index: number, what: string): string {
    if (index >= strtab.size) throw new ElfError(`corrupt: ${what} name index ${index} is outside its string table`);
    const start = strtab.offset + index;
    this.need(start, 1, what);
    const length = this.b.subarray(start, strtab.offset + strtab.size).indexOf(0);
    if (length < 0) throw new ElfError(`corrupt: ${what} name is not terminated in its string table`);
    this.walk(length + 1, 'the names in its string tables');
    return this.b.toString('latin1', start, start + length);
  }
}

/** Whether the bytes start like an ELF file at all (for messages: "not an ELF" vs "a broken one"). */
export function looksLikeElf(b: Buffer): boolean {
  return b.length >= 4 && b.readUInt32BE(0) === 0x7f454c46;
}

function sections(r: Reader): Section[] {
  const shoff = r.u64(0x28, 'the section header offset');
  const shentsize = r.u16(0x3a, 'the section header size');
  const shnum = r.u16(0x3c, 'the section count');
  if (shnum === 0 || shentsize < 64) throw new ElfError(`corrupt: ${shnum} section headers of ${shentsize} bytes`);
  if (shnum > ELF_MAX_SECTIONS)
    throw new ElfError(
      `refused: ${shnum} section headers, more than the ${ELF_MAX_SECTIONS} this reader reads (a shared object has a few dozen)`,
    );
  const out: Section[] = [];
  for (let i = 0; i < shnum; i++) {
    const h = shoff + i * shentsize;
    const s: Section = {
      type: r.u32(h + 4, `section header ${i}`),
      offset: r.u64(h + 0x18, `section header ${i}`),
      size: r.u64(h + 0x20, `section header ${i}`),
      link: r.u32(h + 0x28, `section header ${i}`),
      info: r.u32(h + 0x2c, `section header ${i}`),
      entsize: r.u64(h + 0x38, `section header ${i}`),
    };
    // SHT_NOBITS (8) occupies no bytes of the file.
    if (s.type !== 8 && s.offset + s.size > r.b.length) {
      throw new ElfError(`truncated: section ${i} ends at byte ${s.offset + s.size}, the file has ${r.b.length}`);
    }
    out.push(s);
  }
  return out;
}

function linked(all: Section[], s: Section, what: string): Section {
  const t = all[s.link];
  if (!t) throw new ElfError(`corrupt: the ${what} names section ${s.link}, which does not exist`);
  return t;
}

function dynamicExports(r: Reader, all: Section[]): string[] {
  const dynsym = all.find((s) => s.type === SHT_DYNSYM);
  if (!dynsym) return [];
  const strtab = linked(all, dynsym, 'dynamic symbol table');
  const n = dynsym.entsize >= 24 ? Math.floor(dynsym.size / dynsym.entsize) : 0;
  const out = new Set<string>();
  for (let i = 1; i < n; i++) {
    r.walk(dynsym.entsize, 'the dynamic symbols');
    const e = dynsym.offset + i * dynsym.entsize;
    const info = r.b[e + 4]!;
    const other = r.b[e + 5]!;
    const shndx = r.u16(e + 6, `dynamic symbol ${i}`);
    const bind = info >> 4;
    const type = info & 0xf;
    // Defined (not SHN_UNDEF), STB_GLOBAL, STV_DEFAULT, not a section symbol: what check-lib.sh counts.
    if (shndx === 0 || bind !== 1 || (other & 3) !== 0 || type === 3) continue;
    out.add(r.str(strtab, r.u32(e, `dynamic symbol ${i}`), `dynamic symbol ${i}`));
  }
  return [...out].sort();
}

function neededLibraries(r: Reader, all: Section[]): string[] {
  const dyn = all.find((s) => s.type === SHT_DYNAMIC);
  if (!dyn) return [];
  const strtab = linked(all, dyn, 'dynamic section');
  const out: string[] = [];
  for (let e = dyn.offset; e + 16 <= dyn.offset + dyn.size; e += 16) {
    r.walk(16, 'the dynamic section');
    const tag = r.u64(e, 'a dynamic entry');
    if (tag === 0) break;
    if (tag === DT_NEEDED) out.push(r.str(strtab, r.u64(e + 8, 'a dynamic entry'), 'a NEEDED entry'));
  }
  return out;
}

/** Every version name the file needs (Elf64_Verneed chains and their Vernaux entries). */
function neededVersions(r: Reader, all: Section[]): string[] {
  const vn = all.find((s) => s.type === SHT_GNU_VERNEED);
  if (!vn) return [];
  const strtab = linked(all, vn, 'version needs');
  const out: string[] = [];
  let at = vn.offset;
  // sh_info is the number of Verneed entries; each chain is bounded by its count, and a zero
  // `next` ends it, so a corrupt file cannot loop.
  for (let i = 0; i < vn.info; i++) {
    r.walk(16, 'the version needs');
    const cnt = r.u16(at + 2, 'a version need');
    let aux = at + r.u32(at + 8, 'a version need');
    for (let j = 0; j < cnt; j++) {
      r.walk(16, 'the version needs');
      out.push(r.str(strtab, r.u32(aux + 8, 'a version'), 'a version'));
      const next = r.u32(aux + 12, 'a version');
      if (next === 0) break;
      aux += next;
    }
    const next = r.u32(at + 12, 'a version need');
    if (next === 0) break;
    at += next;
  }
  return out;
}

function sparkAbiNote(r: Reader, all: Section[]): number | undefined {
  for (const s of all.filter((x) => x.type === SHT_NOTE)) {
    // The whole section counts, walked or not: note sections laid over the same bytes add up.
    r.walk(s.size, 'the note sections');
    for (let at = s.offset; at + 12 <= s.offset + s.size;) {
      const namesz = r.u32(at, 'a note');
      const descsz = r.u32(at + 4, 'a note');
      const type = r.u32(at + 8, 'a note');
      const name = at + 12;
      const desc = name + Math.ceil(namesz / 4) * 4;
      const end = desc + Math.ceil(descsz / 4) * 4;
      if (end > s.offset + s.size) throw new ElfError('corrupt: a note runs past its section');
      if (
        type === SPARK_NOTE_ABI &&
        namesz === SPARK_NOTE_NAME.length + 1 &&
        descsz === 4 &&
        r.b.toString('latin1', name, name + namesz - 1) === SPARK_NOTE_NAME
      ) {
        return r.b.readInt32LE(desc);
      }
      at = end;
    }
  }
  return undefined;
}

/**
 * Whether a version name is `GLIBC_` and dot-separated digits. Checked part by part rather than
 * with a repeated group, which the regular-expression engine would recurse through once per
 * part on a long name.
 */
function isGlibcVersion(v: string): boolean {
  return (
    v.startsWith('GLIBC_') &&
    v
      .slice('GLIBC_'.length)
      .split('.')
      .every((p) => /^\d+$/.test(p))
  );
}

/** `GLIBC_2.34` as [2, 34]. */
function glibcParts(v: string): number[] {
  return v.slice('GLIBC_'.length).split('.').map(Number);
}

export function compareGlibc(a: string, b: string): number {
  const x = glibcParts(a);
  const y = glibcParts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Reads an ELF64 little-endian file's loader-visible facts; throws ElfError on anything else or a broken one. */
export function readElf(b: Buffer): ElfSummary {
  if (!looksLikeElf(b)) throw new ElfError('not an ELF file');
  if (b.length < 64) throw new ElfError(`truncated: ${b.length} bytes, shorter than an ELF header`);
  if (b[4] !== 2 || b[5] !== 1) throw new ElfError('not a 64-bit little-endian ELF file');
  const r = new Reader(b);
  const m = r.u16(18, 'the machine');
  const all = sections(r);
  let glibcMax: string | undefined;
  for (const v of neededVersions(r, all))
    if (isGlibcVersion(v) && (glibcMax === undefined || compareGlibc(v, glibcMax) > 0)) glibcMax = v;
  const note = sparkAbiNote(r, all);
  return {
    type: r.u16(16, 'the type'),
    machine: ELF_MACHINES[m] ?? `machine ${m}`,
    exports: dynamicExports(r, all),
    needed: neededLibraries(r, all),
    ...(glibcMax !== undefined ? { glibcMax } : {}),
    ...(note !== undefined ? { abiNote: note } : {}),
  };
}
