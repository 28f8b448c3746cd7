// Variable expansion in .env values, as docker compose does it: $VAR, ${VAR}, and ${VAR<op>word}
// with op one of `:-` `-` (default), `:+` `+` (alternative), `:?` `?` (required). The word may
// itself hold expansions, nested to any depth (`${A:-${B:-x}}`), so it is scanned for its
// matching brace rather than cut at the first `}`. `\$` is a literal `$`.

/** A malformed expansion: the caller names the file and line. */
export class ExpandError extends Error {}

/** `quiet`: a default or alternative follows, so an unset variable is not worth a warning. */
export type Lookup = (name: string, quiet: boolean) => string | undefined;

const NAME = /^[A-Za-z_][A-Za-z0-9_]*/;
const OPS = [':-', ':+', ':?', '-', '+', '?'] as const;
type Op = (typeof OPS)[number];

export function expand(s: string, lookup: Lookup): string {
  let out = '';
  let i = 0;
  while (i < s.length) {
    const c = s[i]!;
    if (c === '\\' && s[i + 1] === '$') {
      out += '$';
      i += 2;
    } else if (c === '$' && s[i + 1] === '{') {
      const { text, end } = braced(s, i + 2, lookup);
      out += text;
      i = end;
    } else if (c === '$' && NAME.test(s.slice(i + 1))) {
      const name = NAME.exec(s.slice(i + 1))![0];
      out += lookup(name, false) ?? '';
      i += 1 + name.length;
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** `${…}` whose body starts at `start`; returns the expansion and the index past its `}`. */
function braced(s: string, start: number, lookup: Lookup): { text: string; end: number } {
  const name = NAME.exec(s.slice(start))?.[0];
  if (name === undefined)
    throw new ExpandError(`'\${' must be followed by a variable name: '${s.slice(start - 2, start + 20)}'`);
  let i = start + name.length;
  if (s[i] === '}') return { text: lookup(name, false) ?? '', end: i + 1 };
  const op = OPS.find((o) => s.startsWith(o, i));
  if (op === undefined) throw new ExpandError(`\${${name}: expected '}' or one of ${OPS.join(' ')} after the name`);
  i += op.length;
  const close = matchingBrace(s, i);
  if (close < 0) throw new ExpandError(`\${${name}${op}…: the '\${' is never closed`);
  // `\}` inside the word is a literal brace, as in sh.
  const word = s.slice(i, close).replace(/\\\}/g, '}');
  return { text: apply(name, op, word, lookup), end: close + 1 };
}

/** Index of the `}` closing a `${` whose body starts at `from`, skipping nested `${…}` and `\x`. */
function matchingBrace(s: string, from: number): number {
  let depth = 0;
  for (let i = from; i < s.length; i++) {
    if (s[i] === '\\') i++;
    else if (s[i] === '$' && s[i + 1] === '{') {
      depth++;
      i++;
    } else if (s[i] === '}') {
      if (depth === 0) return i;
      depth--;
    }
  }
  return -1;
}

function apply(name: string, op: Op, word: string, lookup: Lookup): string {
  const v = lookup(name, true);
  // With a colon, an empty value counts as unset (compose and POSIX sh agree).
  const set = v !== undefined && (!op.startsWith(':') || v !== '');
  switch (op.at(-1)) {
    case '-':
      return set ? v! : expand(word, lookup);
    case '+':
      return set ? expand(word, lookup) : '';
    default: {
      if (set) return v!;
      const why = expand(word, lookup);
      throw new ExpandError(
        `\${${name}${op}…}: ${name} is ${v === undefined ? 'not set' : 'empty'}${why ? `: ${why}` : ''}`,
      );
    }
  }
}
