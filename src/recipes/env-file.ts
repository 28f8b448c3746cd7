// .env files with the semantics docker compose and dotenv share: `KEY=value` lines (LF, CRLF
// or CR-only endings), `#` comments, an optional `export ` prefix, 'single' quotes (literal),
// "double" quotes (escapes and expansion, may span lines), and $VAR / ${VAR} / ${VAR:-word}
// expansion (src/recipes/env-expand.ts). A variable resolves against the keys defined earlier
// in the same file first, then the environment: what the file says is what a reader sees.
import { SparkError } from '../errors/errors.js';
import { composeOnlyDiagnostic } from './compose-only.js';
import { expand, ExpandError, type Lookup } from './env-expand.js';
import type { FileDiagnostic } from './fields.js';
import { readTextFile } from './toml-file.js';
import { ENV_KEY_PREFIX } from './env-key.js';

export { expand };

export interface EnvEntry {
  key: string;
  value: string;
  /** 1-based line of the key. */
  line: number;
}

export interface EnvFile {
  file: string;
  /** Entries in file order; a key set twice appears twice (the last wins in `vars`). */
  entries: EnvEntry[];
  /** Final values by key. */
  vars: Map<string, EnvEntry>;
  /** Variables expanded but defined neither in the file nor in the environment (warn). */
  diagnostics: FileDiagnostic[];
}

export async function readEnvFile(path: string, env: NodeJS.ProcessEnv): Promise<EnvFile> {
  return parseEnvFile(await readTextFile(path, 'env file'), path, env);
}

/** Parses .env text. Throws SparkError E_ENV_FILE (exit 2) naming file:line on a bad line. */
export function parseEnvFile(source: string, file: string, env: NodeJS.ProcessEnv): EnvFile {
  // A classic-Mac file (CR only) is as many lines as it shows, not one.
  const lines = source.split(/\r\n|\r|\n/);
  const out: EnvFile = { file, entries: [], vars: new Map(), diagnostics: [] };
  const fail = (line: number, message: string): never => {
    throw new SparkError('E_ENV_FILE', `${file}:${line}: ${message}`, { path: file, line });
  };
  // No environment variable can hold a NUL (execve ends the string there): docker would fail
  // at launch, minutes later. Refuse it here, naming the line.
  const nul = lines.findIndex((l) => l.includes('\0'));
  if (nul >= 0) fail(nul + 1, 'contains a NUL byte, which no environment variable can hold; is this a text file?');
  const expandAt = (text: string, line: number): string => {
    const look: Lookup = (n, quiet) => lookup(n, line, quiet);
    try {
      return expand(text, look);
    } catch (err) {
      if (err instanceof ExpandError) return fail(line, err.message);
      throw err;
    }
  };
  const lookup = (name: string, line: number, quiet: boolean): string | undefined => {
    const v = out.vars.get(name)?.value ?? env[name];
    if (v === undefined && !quiet) {
      out.diagnostics.push({
        kind: 'undefined-variable',
        severity: 'warn',
        file,
        line,
        key: name,
        message: `$${name} is not defined in the file or the environment; it expands to an empty string`,
        fix: `define ${name} above this line or in the environment`,
      });
    }
    return v;
  };

  for (let i = 0; i < lines.length; i++) {
    const lineNo = i + 1;
    let text = lines[i]!.trimStart();
    if (text === '' || text.startsWith('#')) continue;
    if (/^export\s/.test(text)) text = text.slice(6).trimStart();
    const key = ENV_KEY_PREFIX.exec(text)?.[0];
    if (!key) fail(lineNo, `expected KEY=value, got '${lines[i]!.trim()}'`);
    let rest = text.slice(key!.length).trimStart();
    if (!rest.startsWith('=')) fail(lineNo, `expected '=' after ${key}`);
    rest = rest.slice(1).trimStart();

    let value: string;
    const quote = rest[0];
    if (quote === "'" || quote === '"') {
      // The value may continue on the following lines until the closing quote.
      let body = rest.slice(1);
      let close = findClose(body, quote);
      while (close < 0 && i + 1 < lines.length) {
        body += '\n' + lines[++i];
        close = findClose(body, quote);
      }
      if (close < 0)
        fail(lineNo, `${key}: the ${quote === '"' ? 'double' : 'single'} quote opened here is never closed`);
      const after = body.slice(close + 1).trim();
      if (after !== '' && !after.startsWith('#'))
        fail(i + 1, `${key}: unexpected text after the closing quote: '${after}'`);
      const inner = body.slice(0, close);
      value = quote === "'" ? inner : expandAt(unescape(inner), lineNo);
    } else {
      // Unquoted: a ' #' starts a comment; surrounding blanks are dropped.
      const hash = rest.search(/\s#/);
      value = expandAt((hash >= 0 ? rest.slice(0, hash) : rest).trim(), lineNo);
    }
    const entry = { key: key!, value, line: lineNo };
    out.entries.push(entry);
    out.vars.set(key!, entry);
  }
  for (const [key, e] of out.vars) {
    const d = composeOnlyDiagnostic(file, key, e.line);
    if (d) out.diagnostics.push(d);
  }
  return out;
}

/** Index of the closing quote, skipping backslash escapes inside double quotes. */
function findClose(body: string, quote: string): number {
  for (let j = 0; j < body.length; j++) {
    if (quote === '"' && body[j] === '\\') j++;
    else if (body[j] === quote) return j;
  }
  return -1;
}

/** Double-quote escapes. `\$` stays escaped here so expansion leaves a literal `$`. */
function unescape(s: string): string {
  return s.replace(/\\(.)/gs, (_m, c: string) => {
    switch (c) {
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case '$':
        return '\\$';
      default:
        return c;
    }
  });
}
