// Functions of one screen: lists every function in src/ (TypeScript, through the compiler's own
// parser) and native/ (C++, by matching braces; native/test aside) longer than a limit, longest
// first. `node dist/scripts/long-functions.js [ROOT] [--max N]` prints them and exits 1 if any.
// A function's length runs from the first line of its signature to its closing brace.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_FUNCTION_LINES = 80;

export interface LongFunction {
  /** Path relative to the scanned root, '/'-separated. */
  file: string;
  /** 1-based line where the function's signature starts. */
  line: number;
  name: string;
  lines: number;
}

function walk(dir: string, keep: (path: string) => boolean, skip: (path: string) => boolean): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((n) => {
      const p = join(dir, n);
      if (skip(p)) return [];
      return statSync(p).isDirectory() ? walk(p, keep, skip) : keep(p) ? [p] : [];
    });
}

// ---- TypeScript ----

function tsName(node: ts.Node, file: ts.SourceFile): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (ts.isConstructorDeclaration(node)) return `${classOf(node)}constructor`;
  if (named.name) {
    const own = named.name.getText(file);
    return ts.isMethodDeclaration(node) || ts.isAccessor(node) ? `${classOf(node)}${own}` : own;
  }
  const p = node.parent;
  if (ts.isVariableDeclaration(p) || ts.isPropertyAssignment(p) || ts.isPropertyDeclaration(p)) {
    return p.name.getText(file);
  }
  if (ts.isCallExpression(p)) return `<callback of ${p.expression.getText(file).slice(0, 40)}>`;
  return '<anonymous>';
}

function classOf(node: ts.Node): string {
  const c = node.parent;
  return c && (ts.isClassDeclaration(c) || ts.isClassExpression(c)) && c.name ? `${c.name.text}.` : '';
}

/** Every function, method, constructor, accessor and function expression in one .ts text. */
export function tsFunctions(path: string, text: string): Omit<LongFunction, 'file'>[] {
  const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: Omit<LongFunction, 'file'>[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && (node as ts.Node & { body?: ts.Node }).body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      found.push({ line: start + 1, name: tsName(node, file), lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

// ---- C++ ----

/**
 * The text with comments, string and character literals and preprocessor lines blanked
 * (newlines kept, so offsets still give line numbers).
 */
export function blankCpp(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number): void => {
    for (let k = from; k < to && k < out.length; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  let lineStart = true;
  while (i < text.length) {
    const c = text[i];
    if (lineStart && /^[ \t]*#/.test(text.slice(i, text.indexOf('\n', i) === -1 ? undefined : text.indexOf('\n', i)))) {
      let j = i;
      for (;;) {
        const nl = text.indexOf('\n', j);
        const end = nl === -1 ? text.length : nl;
        if (nl === -1 || !/\\\s*$/.test(text.slice(j, end))) {
          j = end;
          break;
        }
        j = nl + 1;
      }
      blank(i, j);
      i = j;
      continue;
    }
    lineStart = c === '\n';
    if (c === '/' && text[i + 1] === '/') {
      const nl = text.indexOf('\n', i);
      const end = nl === -1 ? text.length : nl;
      blank(i, end);
      i = end;
    } else if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      const end = close === -1 ? text.length : close + 2;
      blank(i, end);
      i = end;
    } else if (c === 'R' && text[i + 1] === '"' && !/\w/.test(text[i - 1] ?? '')) {
      const open = text.indexOf('(', i + 2);
      const delim = text.slice(i + 2, open);
      const close = text.indexOf(`)${delim}"`, open);
      const end = close === -1 ? text.length : close + delim.length + 2;
      blank(i, end);
      i = end;
    } else if (c === '"' || (c === "'" && !/[0-9a-fA-F]/.test(text[i - 1] ?? ''))) {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      blank(i, j + 1);
      i = j + 1;
    } else {
      i++;
    }
  }
  return out.join('');
}

const SCOPE = /(^|[\s;}])(namespace|class|struct|union|enum)\b[^()]*$|^\s*extern\s*$/;
const SIGNATURE_END = /\)\s*(const|override|final|noexcept|mutable|&|&&|->\s*[\w:<>,&*\s]+|\s)*$/;
// A constructor's initialiser list: before a member's `{` (it ends in a name), and at its end.
const INIT_LIST_MEMBER = /\)\s*:[^;]*[\w>]\s*$/;
const INIT_LIST_END = /\)\s*:[^;]*[)}]\s*$/;

/**
 * Every function body at namespace or class scope in one C++ text: a `{` after a signature
 * (`)` then qualifiers, or a constructor's initialiser list). Lambdas and blocks inside a
 * function count toward it; `= {...}` tables are not functions.
 */
export function cppFunctions(text: string): Omit<LongFunction, 'file'>[] {
  const code = blankCpp(text);
  const lineAt: number[] = [];
  for (let i = 0, line = 1; i < code.length; i++) {
    lineAt.push(line);
    if (code[i] === '\n') line++;
  }
  const found: Omit<LongFunction, 'file'>[] = [];
  const stack: ('scope' | 'init' | 'other')[] = [];
  let headerStart = 0;
  let i = 0;
  while (i < code.length) {
    const c = code[i];
    if (c === ';') headerStart = i + 1;
    else if (c === '}') {
      const kind = stack.pop();
      if (kind !== 'init') headerStart = i + 1;
    } else if (c === '{') {
      const header = code.slice(headerStart, i);
      if (SCOPE.test(header) || /extern\s*$/.test(header)) {
        stack.push('scope');
        headerStart = i + 1;
      } else if (INIT_LIST_MEMBER.test(header) && !SIGNATURE_END.test(header)) {
        stack.push('init');
      } else if (SIGNATURE_END.test(header) || INIT_LIST_END.test(header)) {
        const close = matching(code, i);
        // The signature starts after any access label (`public:`) left from the class body.
        const lead = /^(\s*(public|private|protected)\s*:)*\s*/.exec(header)![0].length;
        const first = headerStart + lead;
        const sig = header.slice(lead).trim();
        const name = /([~\w:]+(?:<[^()]*>)?|operator\s*\S+)\s*\(/.exec(sig)?.[1] ?? '<function>';
        found.push({ line: lineAt[first], name, lines: lineAt[close] - lineAt[first] + 1 });
        i = close + 1;
        headerStart = i;
        continue;
      } else {
        // A table or an aggregate initialiser: skip it whole.
        i = matching(code, i) + 1;
        continue;
      }
    }
    i++;
  }
  return found;
}

function matching(code: string, open: number): number {
  let depth = 0;
  for (let j = open; j < code.length; j++) {
    if (code[j] === '{') depth++;
    else if (code[j] === '}' && --depth === 0) return j;
  }
  return code.length - 1;
}

// ---- The scan ----

/** Every function over `max` lines in ROOT/src (.ts) and ROOT/native (.cc, .h; not native/test). */
export function longFunctions(root: string, max = MAX_FUNCTION_LINES): LongFunction[] {
  const skip = (p: string): boolean => /(^|[\\/])(node_modules|build|dist|\.[^\\/]*)$/.test(p);
  const ts = walk(join(root, 'src'), (p) => p.endsWith('.ts') && !p.endsWith('.d.ts'), skip);
  const cc = walk(
    join(root, 'native'),
    (p) => /\.(cc|h)$/.test(p),
    (p) => skip(p) || p === join(root, 'native', 'test'),
  );
  const all: LongFunction[] = [];
  for (const p of [...ts, ...cc]) {
    const text = readFileSync(p, 'utf8');
    const file = relative(root, p).split(sep).join('/');
    const fns = p.endsWith('.ts') ? tsFunctions(p, text) : cppFunctions(text);
    for (const f of fns) if (f.lines > max) all.push({ file, ...f });
  }
  return all.sort((a, b) => b.lines - a.lines || a.file.localeCompare(b.file) || a.line - b.line);
}

export function formatLong(f: LongFunction): string {
  return `${f.file}:${f.line} ${f.name} ${f.lines} lines`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--max');
  const max = at === -1 ? MAX_FUNCTION_LINES : Number(args.splice(at, 2)[1]);
  const root = args[0] ?? fileURLToPath(new URL('../..', import.meta.url));
  const long = longFunctions(root, max);
  for (const f of long) process.stdout.write(`${formatLong(f)}\n`);
  process.exitCode = long.length === 0 ? 0 : 1;
}
