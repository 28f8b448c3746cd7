// Hostile shared objects for the ELF reader's bounds (src/files/elf.ts): well-formed
// headers whose sections ask for far more work than a library's, built byte by byte.

const EHDR = 64;
const SHDR = 64;
const SYM = 24;

interface CraftedSection {
  type: number;
  offset: number;
  size: number;
  link?: number;
  entsize?: number;
}

/** An x86-64 ET_DYN file: the ELF header, `body` at offset 64, then the section headers. */
function elfWith(body: Buffer, sections: CraftedSection[]): Buffer {
  const shoff = EHDR + body.length;
  const b = Buffer.alloc(shoff + sections.length * SHDR);
  b.writeUInt32BE(0x7f454c46, 0);
  b[4] = 2; // ELFCLASS64
  b[5] = 1; // little-endian
  b[6] = 1; // EV_CURRENT
  b.writeUInt16LE(3, 16); // ET_DYN
  b.writeUInt16LE(62, 18); // EM_X86_64
  b.writeUInt32LE(1, 20);
  b.writeBigUInt64LE(BigInt(shoff), 0x28);
  b.writeUInt16LE(EHDR, 0x34);
  b.writeUInt16LE(SHDR, 0x3a);
  b.writeUInt16LE(sections.length, 0x3c);
  body.copy(b, EHDR);
  sections.forEach((s, i) => {
    const h = shoff + i * SHDR;
    b.writeUInt32LE(s.type, h + 4);
    b.writeBigUInt64LE(BigInt(s.offset), h + 0x18);
    b.writeBigUInt64LE(BigInt(s.size), h + 0x20);
    b.writeUInt32LE(s.link ?? 0, h + 0x28);
    b.writeBigUInt64LE(BigInt(s.entsize ?? 0), h + 0x38);
  });
  return b;
}

/**
 * `sections` SHT_NOTE section headers all over the same `noteBytes` of zeros: each is a run of
 * empty 12-byte notes, so a reader that walks every section walks the same bytes `sections`
 * times. (30,000 over 900,000 bytes is a 2.8 MB file.)
 */
export function noteFlood(sections: number, noteBytes: number): Buffer {
  return elfWith(
    Buffer.alloc(noteBytes),
    Array.from({ length: sections }, () => ({ type: 7, offset: EHDR, size: noteBytes })),
  );
}

/**
 * A dynamic symbol table of `symbols` defined global functions that all name one string of
 * `nameBytes` bytes: a reader that scans the name once per symbol does symbols × nameBytes work.
 */
export function oneLongName(symbols: number, nameBytes: number): Buffer {
  const symtab = Buffer.alloc(symbols * SYM);
  for (let i = 1; i < symbols; i++) {
    const e = i * SYM;
    symtab.writeUInt32LE(1, e); // the name at index 1 of the string table
    symtab[e + 4] = (1 << 4) | 2; // STB_GLOBAL, STT_FUNC
    symtab.writeUInt16LE(1, e + 6); // defined in section 1
  }
  const strtab = Buffer.alloc(nameBytes + 2, 'a');
  strtab[0] = 0;
  strtab[nameBytes + 1] = 0;
  return elfWith(Buffer.concat([symtab, strtab]), [
    { type: 0, offset: 0, size: 0 },
    { type: 11, offset: EHDR, size: symtab.length, link: 2, entsize: SYM },
    { type: 3, offset: EHDR + symtab.length, size: strtab.length },
  ]);
}
