// Where each key of a TOML document was written. smol-toml gives values but no positions, and
// two questions need positions: "where" in every error and finding (file:line), and which table
// a key landed in (a bare key after `[[extra_mounts]]` belongs to that table, not the top level).
// This scanner only tracks structure: table headers, keys, and the extent of each value
// (strings, arrays and inline tables may span lines). It never interprets values; smol-toml
// parses the document, and the scanner runs only on documents smol-toml accepted.

/** A table header, `[name]` or `[[name]]`. */
export interface TomlHeader {
  /** Resolved path, e.g. `nccl`, `extra_mounts[1]`. */
  path: string;
  line: number;
  array: boolean;
}

export interface TomlKeyLocation {
  /** Resolved dotted path: `args`, `env.SPARK_ENGRAM_ROWS`, `extra_mounts[0].host`. */
  path: string;
  /** The last key segment as written (unquoted). */
  key: string;
  /** 1-based line of the key. */
  line: number;
  /** The header the key was written under; undefined at the top level. */
  table?: TomlHeader;
  /** For an array value: the 1-based line of each top-level element. */
  elementLines?: number[];
}

export interface TomlLocations {
  keys: TomlKeyLocation[];
  headers: TomlHeader[];
  /** The location of a resolved path (see TomlKeyLocation.path), if written as a key. */
  get(path: string): TomlKeyLocation | undefined;
}

const BARE = /^[A-Za-z0-9_-]+$/;

/** A path segment as written in resolved paths: bare when possible, else double-quoted. */
export function pathSegment(key: string): string {
  return BARE.test(key) ? key : JSON.stringify(key);
}

export function scanToml(source: string): TomlLocations {
  const s = new Scanner(source);
  const keys: TomlKeyLocation[] = [];
  const headers: TomlHeader[] = [];
  const arrayCounts = new Map<string, number>();
  let table: TomlHeader | undefined;

  // `[[a]]` twice gives a[0], a[1]; a header nested under an array table resolves through its
  // latest element (`[a.b]` after `[[a]]` is a[0].b).
  const resolve = (segments: string[], array: boolean): string => {
    let prefix = '';
    segments.forEach((seg, i) => {
      prefix = prefix === '' ? pathSegment(seg) : `${prefix}.${pathSegment(seg)}`;
      const last = i === segments.length - 1;
      if (last && array) {
        const next = (arrayCounts.get(prefix) ?? -1) + 1;
        arrayCounts.set(prefix, next);
        prefix = `${prefix}[${next}]`;
      } else if (arrayCounts.has(prefix)) {
        prefix = `${prefix}[${arrayCounts.get(prefix)}]`;
      }
    });
    return prefix;
  };

  while (!s.done()) {
    s.skipBlank();
    if (s.done()) break;
    const c = s.peek();
    if (c === '\n') {
      s.advance();
    } else if (c === '#') {
      s.skipComment();
    } else if (c === '[') {
      const line = s.line;
      const array = s.peek(1) === '[';
      s.advance(array ? 2 : 1);
      const segments = s.readKey();
      s.skipBlank();
      s.advance(array ? 2 : 1);
      table = { path: resolve(segments, array), line, array };
      headers.push(table);
      s.skipRestOfLine();
    } else {
      const line = s.line;
      const segments = s.readKey();
      s.skipBlank();
      s.advance(); // '='
      s.skipBlank();
      const elementLines = s.skipValue();
      const base = table ? table.path : '';
      const rel = segments.map(pathSegment).join('.');
      const loc: TomlKeyLocation = {
        path: base === '' ? rel : `${base}.${rel}`,
        key: segments[segments.length - 1] ?? '',
        line,
      };
      if (table) loc.table = table;
      if (elementLines) loc.elementLines = elementLines;
      keys.push(loc);
      s.skipRestOfLine();
    }
  }
  const byPath = new Map(keys.map((k) => [k.path, k]));
  return { keys, headers, get: (path) => byPath.get(path) };
}

/** A cursor over the source that counts lines. */
class Scanner {
  pos = 0;
  line = 1;
  constructor(private readonly src: string) {}

  done(): boolean {
    return this.pos >= this.src.length;
  }

  peek(ahead = 0): string {
    return this.src[this.pos + ahead] ?? '';
  }

  advance(n = 1): void {
    for (let i = 0; i < n && this.pos < this.src.length; i++) {
      if (this.src[this.pos] === '\n') this.line++;
      this.pos++;
    }
  }

  startsWith(text: string): boolean {
    return this.src.startsWith(text, this.pos);
  }

  /** Spaces, tabs and carriage returns (not newlines). */
  skipBlank(): void {
    while (this.peek() === ' ' || this.peek() === '\t' || this.peek() === '\r') this.advance();
  }

  skipComment(): void {
    while (!this.done() && this.peek() !== '\n') this.advance();
  }

  /** After a header or a key's value: trailing blanks and a comment, up to the newline. */
  skipRestOfLine(): void {
    this.skipComment();
  }

  /** A possibly dotted key: bare, "basic" or 'literal' segments separated by dots. */
  readKey(): string[] {
    const segments: string[] = [];
    while (!this.done()) {
      this.skipBlank();
      const c = this.peek();
      if (c === '"' || c === "'") {
        const start = this.pos;
        this.skipString();
        segments.push(unquoteKey(this.src.slice(start, this.pos)));
      } else {
        const start = this.pos;
        while (/[A-Za-z0-9_-]/.test(this.peek())) this.advance();
        segments.push(this.src.slice(start, this.pos));
      }
      this.skipBlank();
      if (this.peek() !== '.') break;
      this.advance();
    }
    return segments;
  }

  /** Any of the four string forms, starting at its opening quote. */
  skipString(): void {
    const q = this.peek();
    const multi = this.startsWith(q.repeat(3));
    if (multi) {
      this.advance(3);
      while (!this.done()) {
        if (q === '"' && this.peek() === '\\') {
          this.advance(2);
        } else if (this.startsWith(q.repeat(3))) {
          this.advance(3);
          // Up to two more quotes may close the string ("""a"""" ends in a quote).
          while (this.peek() === q) this.advance();
          return;
        } else {
          this.advance();
        }
      }
      return;
    }
    this.advance();
    while (!this.done() && this.peek() !== q && this.peek() !== '\n') {
      this.advance(q === '"' && this.peek() === '\\' ? 2 : 1);
    }
    this.advance();
  }

  /** Skips one value; for an array returns the line of each top-level element. */
  skipValue(): number[] | undefined {
    const c = this.peek();
    if (c === '"' || c === "'") {
      this.skipString();
      return undefined;
    }
    if (c !== '[' && c !== '{') {
      while (!this.done() && this.peek() !== '\n' && this.peek() !== '#') this.advance();
      return undefined;
    }
    const isArray = c === '[';
    const elementLines: number[] = [];
    let depth = 0;
    let expecting = true;
    while (!this.done()) {
      const ch = this.peek();
      if (ch === '#') {
        this.skipComment();
        continue;
      }
      if (ch === '[' || ch === '{') {
        if (depth === 1 && expecting) {
          elementLines.push(this.line);
          expecting = false;
        }
        depth++;
        this.advance();
        continue;
      }
      if (ch === ']' || ch === '}') {
        depth--;
        this.advance();
        if (depth === 0) break;
        continue;
      }
      if (depth === 1 && ch === ',') {
        expecting = true;
        this.advance();
        continue;
      }
      const blank = ch === ' ' || ch === '\t' || ch === '\r' || ch === '\n';
      if (depth === 1 && expecting && !blank) {
        elementLines.push(this.line);
        expecting = false;
      }
      if (ch === '"' || ch === "'") this.skipString();
      else this.advance();
    }
    return isArray ? elementLines : undefined;
  }
}

function unquoteKey(quoted: string): string {
  if (quoted.startsWith("'")) return quoted.slice(1, -1);
  try {
    return JSON.parse(quoted) as string;
  } catch {
    return quoted.slice(1, -1);
  }
}
