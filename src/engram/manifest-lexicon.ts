// What JSON.parse cannot tell about a manifest's text, and the grammar needs (docs/packed-format.md,
// "The manifest grammar"): every reader of a node-local copy (this one, the --emit-sh script's,
// the Python reader's) gives the same verdict, and only what the overlay reads exactly as spark
// does may pass. JSON.parse turns `15029.0` and `1.5029e4` into the integer 15029 and keeps the
// last of two equal keys (as Python's json does: the overlay would serve the second `"1"`), so
// this scan, over text JSON.parse has already accepted, refuses:
//   - a number that is not a plain integer literal (`0`, `[1-9][0-9]*`) under `layers`, or as
//     `rank` / `world` (at the top or under `spark`);
//   - a key twice in one object, more than MAX_OBJECT_KEYS keys in one object;
//   - more than MAX_MANIFEST_BYTES bytes, nesting deeper than MAX_DEPTH;
//   - a key with a digit written as an escape (`"\u0031"`, layer 1 to a JSON reader).

/** The largest manifest any reader accepts (spark writes ~50 KB for a 4-rank copy at the default chunk). */
export const MAX_MANIFEST_BYTES = 16 << 20;
/** Deepest nesting of objects and arrays a manifest may use (spark writes 5). */
export const MAX_DEPTH = 64;
/** Most keys one object of a manifest may have (spark writes at most 12). */
export const MAX_OBJECT_KEYS = 1024;

const INTEGER = /^(0|[1-9][0-9]*)$/;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * The JSON string starting at `text[start]` (its `"`): where it ends (past the closing quote),
 * and whether it writes a digit as an escape (`\u0030`-`\u0039`). A loop, not a regular
 * expression: a repeated group such as `"(?:[^"\\]|\\.)*"` recurses once per character and
 * throws "Maximum call stack size exceeded" on a string of a few MiB, which a manifest of
 * MAX_MANIFEST_BYTES can hold.
 */
function scanString(text: string, start: number): { end: number; escapedDigit: boolean } {
  let escapedDigit = false;
  for (let i = start + 1; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) return { end: i + 1, escapedDigit };
    if (c === 0x5c) {
      if (text[i + 1] === 'u' && text.startsWith('003', i + 2) && isDigit(text.charCodeAt(i + 5))) escapedDigit = true;
      // Past the escaped character; the rest of a \uXXXX is hex digits, never a quote or backslash.
      i++;
    }
  }
  // JSON.parse accepted the text, so every string is closed.
  return { end: text.length, escapedDigit };
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/** A key as written, cut for a one-line message (a key may be megabytes long). */
const shown = (literal: string) => (literal.length > 60 ? `${literal.slice(0, 57)}…"` : literal);

type Segment = string | number;

interface Frame {
  kind: 'object' | 'array';
  keys: Set<string>;
  /** Where this container is: ['layers', '1'], ['layers', 0]. */
  path: Segment[];
  /** The key whose value comes next (objects), or the index of the last value (arrays). */
  key?: string;
  index: number;
}

/** `layers[0].start`, `layers.1[0]`, as the field readers name keys. */
function formatPath(path: readonly Segment[]): string {
  return path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`)).join('');
}

/** Whether a number at `path` must be a plain integer literal. */
function wantsInteger(path: readonly Segment[]): boolean {
  if (path[0] === 'layers') return true;
  const last = path.at(-1);
  if (last !== 'rank' && last !== 'world') return false;
  return path.length === 1 || (path.length === 2 && path[0] === 'spark');
}

export interface LexiconProblem {
  /** The key it concerns ('' for the whole file), for the one-line error. */
  key: string;
  what: string;
}

/** The first defect of `text` (valid JSON) against the grammar, or undefined. */
export function manifestLexiconProblem(text: string): LexiconProblem | undefined {
  if (text.length > MAX_MANIFEST_BYTES || Buffer.byteLength(text) > MAX_MANIFEST_BYTES) {
    return { key: '', what: `is larger than ${MAX_MANIFEST_BYTES} bytes, the most a manifest may have` };
  }
  const stack: Frame[] = [];
  let expectKey = false;
  /** The path of the value starting now, in the container on top. */
  const valuePath = (top: Frame | undefined): Segment[] => {
    if (!top) return [];
    if (top.kind === 'object') return [...top.path, top.key!];
    top.index++;
    return [...top.path, top.index];
  };
  for (let i = 0; i < text.length;) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === ',' || c === ':') {
      i++;
      continue;
    }
    const top = stack.at(-1);
    if (c === '{' || c === '[') {
      const path = valuePath(top);
      if (stack.length >= MAX_DEPTH)
        return { key: formatPath(path), what: `nests objects and arrays deeper than ${MAX_DEPTH}` };
      stack.push({ kind: c === '{' ? 'object' : 'array', keys: new Set(), path, index: -1 });
      expectKey = c === '{';
      i++;
      continue;
    }
    if (c === '}' || c === ']') {
      stack.pop();
      // A value ended: in an object, the next string is a key.
      expectKey = stack.at(-1)?.kind === 'object';
      i++;
      continue;
    }
    if (c === '"') {
      const string = scanString(text, i);
      const literal = text.slice(i, string.end);
      i = string.end;
      if (expectKey && top?.kind === 'object') {
        const key = JSON.parse(literal) as string;
        const where = formatPath(top.path);
        const there = where === '' ? 'the top-level object' : where;
        // A layer is named by its digits as written: "\u0031" would be layer 1 to a JSON reader.
        if (string.escapedDigit)
          return { key: where, what: `has the key ${shown(literal)}, a digit written with an escape` };
        if (top.keys.has(key))
          return {
            key: where,
            what: `${where === '' ? `${there} ` : ''}has the key ${shown(JSON.stringify(key))} twice (readers disagree on which one counts)`,
          };
        if (top.keys.size >= MAX_OBJECT_KEYS) return { key: where, what: `has more than ${MAX_OBJECT_KEYS} keys` };
        top.keys.add(key);
        top.key = key;
        expectKey = false;
      } else {
        valuePath(top);
        if (top?.kind === 'object') expectKey = true;
      }
      continue;
    }
    // A number or a literal.
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    const token = m ? m[0] : /^[a-z]+/.exec(text.slice(i, i + 5))![0];
    const path = valuePath(top);
    if (m && wantsInteger(path) && !INTEGER.test(token))
      return { key: formatPath(path), what: `must be a whole number written as digits (got ${token})` };
    i += token.length;
    if (top?.kind === 'object') expectKey = true;
  }
  return undefined;
}
