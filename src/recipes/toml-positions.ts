// Where each key of a TOML document was written. smol-toml gives values but no positions, and
// two questions need positions: "where" in every error and finding (file:line), and which table
// a key landed in (a bare key after `[[extra_mounts]]` belongs to that table, not the top level).
//
// One pass over the same text, run only after smol-toml accepted it, so it never has to judge
// validity: it follows structure alone (headers, keys, strings, arrays and inline tables, which
// may span lines) and never interprets a value. The maintained TOML parser that does keep
// positions is built for linters and reads a different TOML than smol-toml does (by default it
// refuses the TOML 1.1 smol-toml reads, and it rounds integers past 2^53 that smol-toml refuses),
// so swapping parsers would change which recipes load; a walk over text already accepted cannot.

/** Where one key, table or array element was written, and what was written below it. */
export interface TomlPosition {
  /** 1-based line: of the key, of the header that opened the table, or of the array element. */
  line: number;
  /** Keys of a table or inline table (dotted keys and headers included), by their parsed name. */
  keys: Map<string, TomlPosition>;
  /** Elements of an array, or the tables of an array of tables, in order. */
  items: TomlPosition[];
}

/** A key as written below a header: its segments (parsed, a dotted key split) and its line. */
export interface TomlKeyLine {
  key: string[];
  line: number;
}

/** A table header, `[name]` or `[[name]]`, and the keys written below it before the next header. */
export interface TomlHeader {
  /** The header's key as written, e.g. ['nodes', 'env']. */
  key: string[];
  array: boolean;
  line: number;
  /** The table it opens inside the document: ['extra_mounts', 1], ['nodes', 0, 'env']. */
  path: (string | number)[];
  keys: TomlKeyLine[];
}

export interface TomlPositions {
  /** The document's top-level table (its line is 0: no key writes it). */
  root: TomlPosition;
  headers: TomlHeader[];
}

const BARE = /^[A-Za-z0-9_-]+$/;

/** A key as written in messages: bare when possible, else double-quoted. */
export function pathSegment(key: string): string {
  return BARE.test(key) ? key : JSON.stringify(key);
}

/** `['nodes', 0, 'env']` → `nodes[0].env`, as messages name a key. */
export function formatPath(path: readonly (string | number)[]): string {
  return path.reduce<string>(
    (out, p) => (typeof p === 'number' ? `${out}[${p}]` : out === '' ? pathSegment(p) : `${out}.${pathSegment(p)}`),
    '',
  );
}

function position(line: number): TomlPosition {
  return { line, keys: new Map(), items: [] };
}

/** The child `name` of `at`, made on first use (at `line`). */
function child(at: TomlPosition, name: string, line: number): TomlPosition {
  let next = at.keys.get(name);
  if (!next) {
    next = position(line);
    at.keys.set(name, next);
  }
  return next;
}

export function tomlPositions(source: string): TomlPositions {
  const s = new Cursor(source);
  const root = position(0);
  const headers: TomlHeader[] = [];
  let table = root;
  let header: TomlHeader | undefined;

  while (s.skipSpace()) {
    if (s.peek() !== '[') {
      const written = s.keyValue(table);
      header?.keys.push(written);
      continue;
    }
    const line = s.line;
    const array = s.peek(1) === '[';
    s.advance(array ? 2 : 1);
    const key = s.readKey();
    s.advance(array ? 2 : 1);
    // A header walks from the top; through an array of tables it enters the latest table
    // (`[a.b]` after `[[a]]` is a[last].b), and `[[x]]` adds one more table to x.
    let at = root;
    const path: (string | number)[] = [];
    key.forEach((name, i) => {
      at = child(at, name, line);
      path.push(name);
      const last = i === key.length - 1;
      if (last && array) {
        at.items.push(position(line));
      } else if (last) {
        at.line = line; // `[a]` after `[a.b]` defines a here
        return;
      }
      if (at.items.length > 0) {
        path.push(at.items.length - 1);
        at = at.items[at.items.length - 1]!;
      }
    });
    table = at;
    header = { key, array, line, path, keys: [] };
    headers.push(header);
  }
  return { root, headers };
}

/** A cursor over the source that counts lines. */
class Cursor {
  pos = 0;
  line = 1;
  constructor(private readonly src: string) {}

  peek(ahead = 0): string {
    return this.src[this.pos + ahead] ?? '';
  }

  advance(n = 1): void {
    for (let i = 0; i < n && this.pos < this.src.length; i++) {
      if (this.src[this.pos] === '\n') this.line++;
      this.pos++;
    }
  }

  /** Spaces and tabs (and the \r of a CRLF), not newlines. */
  skipBlank(): void {
    while (this.peek() === ' ' || this.peek() === '\t' || this.peek() === '\r') this.advance();
  }

  /** Blanks, newlines and comments; false at the end of the text. */
  skipSpace(): boolean {
    for (;;) {
      this.skipBlank();
      if (this.peek() === '#') while (this.pos < this.src.length && this.peek() !== '\n') this.advance();
      else if (this.peek() === '\n') this.advance();
      else return this.pos < this.src.length;
    }
  }

  /** `key = value` at the cursor, written into `table`. */
  keyValue(table: TomlPosition): TomlKeyLine {
    const line = this.line;
    const key = this.readKey();
    this.advance(); // '='
    this.skipBlank();
    let at = table;
    for (const name of key) at = child(at, name, line);
    this.value(at);
    return { key, line };
  }

  /** A possibly dotted key: bare, "basic" or 'literal' segments separated by dots. */
  readKey(): string[] {
    const segments: string[] = [];
    for (;;) {
      this.skipBlank();
      const c = this.peek();
      const start = this.pos;
      if (c === '"' || c === "'") {
        this.skipString();
        segments.push(unquoteKey(this.src.slice(start, this.pos)));
      } else {
        while (/[A-Za-z0-9_-]/.test(this.peek())) this.advance();
        segments.push(this.src.slice(start, this.pos));
      }
      this.skipBlank();
      if (this.peek() !== '.') return segments;
      this.advance();
    }
  }

  /** One value; an array's elements and an inline table's keys are recorded under `at`. */
  value(at: TomlPosition): void {
    const c = this.peek();
    if (c === '"' || c === "'") return this.skipString();
    if (c === '[' || c === '{') {
      const close = c === '[' ? ']' : '}';
      this.advance();
      // TOML 1.1 (which smol-toml reads) allows newlines and comments inside both.
      while (this.skipSpace() && this.peek() !== close) {
        const before = this.pos;
        if (close === ']') {
          const item = position(this.line);
          at.items.push(item);
          this.value(item);
        } else {
          this.keyValue(at);
        }
        this.skipSpace();
        if (this.peek() === ',') this.advance();
        if (this.pos === before) this.advance(); // never stall on text smol-toml would refuse
      }
      return this.advance();
    }
    // A number, boolean or date: up to what ends a value.
    while (this.pos < this.src.length && !',]}#\n'.includes(this.peek())) this.advance();
  }

  /** Any of the four string forms, starting at its opening quote. */
  skipString(): void {
    const q = this.peek();
    if (this.src.startsWith(q.repeat(3), this.pos)) {
      this.advance(3);
      while (this.pos < this.src.length) {
        if (q === '"' && this.peek() === '\\') {
          this.advance(2);
        } else if (this.src.startsWith(q.repeat(3), this.pos)) {
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
    while (this.pos < this.src.length && this.peek() !== q && this.peek() !== '\n') {
      this.advance(q === '"' && this.peek() === '\\' ? 2 : 1);
    }
    this.advance();
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
