// The sh programs spark sends to nodes or writes for containers are real .sh files beside the
// TypeScript that fills them (shellcheck and dash -n read them in the test run). TypeScript puts
// in only the values it bakes, through one mechanism:
//
//   @NAME@        a placeholder: replaced by one value, quoted by the rules of shell.ts, so it
//                 is always whole shell words and never code. It must stand as a word of its
//                 own (after a space, `=` or a line's start; before a space, `;`, `)` or the
//                 line's end), outside any comment, so no value ever lands where a newline in
//                 it would end a comment and run the next line.
//   . ./x.sh      a line of exactly this form inlines the fragment x.sh of the same folder
//                 (filled with the same values), so the output stays one self-contained script
//                 while shellcheck -x follows the same line to check the whole.
//
// A placeholder without a value, or a value no placeholder uses, is an error: a typo in a name
// fails every test that emits the script instead of baking an empty word.
//
// The files are read from the source tree (<package>/src/...), not from dist/: tsc copies no
// .sh files, and src/ is in the package however it is installed (package.json has no "files"
// list). A module finds its files by its own URL: dist/src/x/y.js reads src/x/NAME.sh.
import { readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { shJoin, shQuote, shSingleQuote } from './shell.js';

/** Always single-quoted (shSingleQuote), for values found again by their quotes. */
export interface Quoted {
  quoted: string | readonly string[];
}

/**
 * A baked value: a string is one word (shQuote), a number a whole number, a list one word per
 * element (shJoin: `for p in @PATHS@`), `{ quoted }` single-quoted words whatever they hold.
 */
export type ShValue = string | number | readonly (string | number)[] | Quoted;

/** tsc's outDir (tsconfig.json): compiled modules live under it, their sources outside it. */
const OUT_DIR = 'dist';
const PLACEHOLDER = /@([A-Z][A-Z0-9_]*)@/g;
const INCLUDE = /^\. \.\/([a-z0-9][a-z0-9-]*\.sh)$/;
const BEFORE = /(^|[\s=])$/;
const AFTER = /^($|[\s;)])/;

export function quoted(value: string | readonly string[]): Quoted {
  return { quoted: value };
}

function render(name: string, value: ShValue): string {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new Error(`sh placeholder @${name}@: ${value} is not a whole number`);
    return String(value);
  }
  if (typeof value === 'string') return shQuote(value);
  if (Array.isArray(value)) return shJoin(value.map(String));
  const q = (value as Quoted).quoted;
  return typeof q === 'string' ? shSingleQuote(q) : q.map(shSingleQuote).join(' ');
}

/** The folder of a module's source file, where its .sh files are. */
export function sourceDir(moduleUrl: string): string {
  const dir = dirname(fileURLToPath(moduleUrl));
  let root = dir;
  while (!existsSync(join(root, 'package.json'))) {
    const parent = dirname(root);
    if (parent === root) return dir;
    root = parent;
  }
  const rel = relative(root, dir).split(sep);
  return rel[0] === OUT_DIR ? join(root, ...rel.slice(1)) : dir;
}

/** One .sh file and the fragments it inlines, read once, filled on each call. */
export class ShTemplate {
  private lines: { file: string; line: number; text: string }[] | undefined;

  constructor(
    private readonly dir: string,
    private readonly name: string,
  ) {}

  /** The program with every placeholder replaced; throws on a missing or an unused value. */
  fill(values: Readonly<Record<string, ShValue>>): string {
    const used = new Set<string>();
    const out = this.load().map(({ file, line, text }) => {
      const where = `${file}:${line}`;
      return text.replace(PLACEHOLDER, (whole, key: string, at: number) => {
        // A `#` at a word's start before it: the rest of the line is a comment (quotes aside,
        // which no placeholder line needs).
        if (/(^|\s)#/.test(text.slice(0, at)))
          throw new Error(`${where}: @${key}@ is in a comment (a value there could end it)`);
        if (!BEFORE.test(text.slice(0, at)) || !AFTER.test(text.slice(at + whole.length))) {
          throw new Error(`${where}: @${key}@ must be a word of its own`);
        }
        const value = values[key];
        if (value === undefined) throw new Error(`${where}: no value for @${key}@`);
        used.add(key);
        return render(key, value);
      });
    });
    const unused = Object.keys(values).filter((k) => !used.has(k));
    if (unused.length > 0)
      throw new Error(`${this.name}: no placeholder for ${unused.map((k) => `@${k}@`).join(', ')}`);
    return out.join('\n');
  }

  private load(): { file: string; line: number; text: string }[] {
    this.lines ??= this.read(this.name, []);
    return this.lines;
  }

  private read(name: string, outer: string[]): { file: string; line: number; text: string }[] {
    if (outer.includes(name)) throw new Error(`${[...outer, name].join(' -> ')}: a fragment includes itself`);
    const text = readFileSync(join(this.dir, name), 'utf8');
    return text.split('\n').flatMap((t, i) => {
      const inc = INCLUDE.exec(t);
      if (!inc) return [{ file: name, line: i + 1, text: t }];
      // The fragment's last line ends in a newline: its empty tail is dropped so that the
      // included text takes exactly the lines it has.
      const inner = this.read(inc[1]!, [...outer, name]);
      return inner.at(-1)?.text === '' ? inner.slice(0, -1) : inner;
    });
  }
}

/** The .sh file `name` beside the source of the module at `moduleUrl` (pass import.meta.url). */
export function shTemplate(moduleUrl: string, name: string): ShTemplate {
  return new ShTemplate(sourceDir(moduleUrl), name);
}
