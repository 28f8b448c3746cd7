// Typed reads of one TOML table, with errors that name the file, line and key. Shared by the
// recipe and cluster readers: a wrong type is refused (SparkError, exit 2), an unknown key is a
// warning the caller reports.
import { SparkError } from '../errors/errors.js';
import type { ErrorCode } from '../errors/error-codes.js';
import { pathSegment, type TomlPosition } from './toml-positions.js';
import { envKeyProblem, envValueProblem } from './env-key.js';

/**
 * What reading a sparkrun recipe says (src/recipes/sparkrun/): something of the recipe spark
 * does not do, or what became of a `defaults` key or placeholder on the way to the engine.
 */
export type SparkrunDiagnosticKind = 'sparkrun-not-run' | 'sparkrun-defaults';

/** A problem found while reading a file that is not fatal (fatal ones are thrown). */
export interface FileDiagnostic {
  kind: 'unknown-key' | 'swallowed-key' | 'undefined-variable' | 'compose-only' | SparkrunDiagnosticKind;
  severity: 'error' | 'warn';
  /** The file as the user named it. */
  file: string;
  line?: number;
  /** Resolved key path (`extra_mounts[0].args`) or variable name. */
  key: string;
  message: string;
  fix: string;
}

/** Levenshtein distance (keys are short: the plain table is enough). */
function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row.push(Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1)));
    prev = row;
  }
  return prev[b.length]!;
}

/** "did you mean tensor_parallel_size?" for a key a few edits from a known one, else the known keys. */
export function spellingFix(key: string, known: readonly string[]): string {
  const scored = known.map((k) => ({ k, d: editDistance(key.toLowerCase(), k) })).sort((a, b) => a.d - b.d);
  const best = scored[0];
  if (best && best.d <= Math.max(2, Math.floor(best.k.length / 4))) return `did you mean ${best.k}? (else remove it)`;
  return `remove it, or use a known key: ${known.join(', ')}`;
}

/** `file:line` when the line is known, else `file`. */
export function at(file: string, line: number | undefined): string {
  return line === undefined ? file : `${file}:${line}`;
}

export function typeName(value: unknown): string {
  if (Array.isArray(value)) return 'array';
  if (value === null) return 'null';
  if (typeof value === 'bigint' || (typeof value === 'number' && Number.isInteger(value))) return 'integer';
  if (typeof value === 'number') return 'float';
  if (value instanceof Date || (typeof value === 'object' && value?.constructor?.name === 'TomlDate')) return 'date';
  if (typeof value === 'object') return 'table';
  return typeof value;
}

export function isTable(value: unknown): value is Record<string, unknown> {
  return typeName(value) === 'table';
}

/**
 * Reads the keys of one table. `prefix` is the table's path in messages ('' at the top level),
 * `position` where the file wrote the table, and `headerLine` the line to name for a key it lacks.
 */
export class FieldReader {
  constructor(
    readonly file: string,
    readonly table: Record<string, unknown>,
    readonly prefix: string,
    readonly position: TomlPosition | undefined,
    readonly code: ErrorCode,
    readonly headerLine?: number,
  ) {}

  path(key: string): string {
    return this.prefix === '' ? pathSegment(key) : `${this.prefix}.${pathSegment(key)}`;
  }

  lineOf(key: string): number | undefined {
    return this.position?.keys.get(key)?.line ?? this.headerLine;
  }

  fail(key: string, message: string, fix?: string): never {
    const line = this.lineOf(key);
    const text = `${at(this.file, line)}: ${message}${fix ? `; ${fix}` : ''}`;
    throw new SparkError(this.code, text, { path: this.file, key: this.path(key), line });
  }

  private wrongType(key: string, want: string, example: string): never {
    const got = typeName(this.table[key]);
    return this.fail(key, `${this.path(key)} must be ${want}, got ${got}`, `write it as ${example}`);
  }

  has(key: string): boolean {
    return this.table[key] !== undefined;
  }

  missing(key: string, what: string): never {
    const where = this.prefix === '' ? 'at the top level' : `in [${this.prefix}]`;
    return this.fail(key, `${this.path(key)} is missing ${where}`, `add ${what}`);
  }

  string(key: string): string | undefined {
    const v = this.table[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') this.wrongType(key, 'a string', `${key} = "…"`);
    return v;
  }

  requiredString(key: string, example: string): string {
    return this.string(key) ?? this.missing(key, example);
  }

  integer(key: string, min: number, max: number): number | undefined {
    const v = this.table[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.wrongType(key, 'an integer', `${key} = ${min}`);
    if (v < min || v > max) this.fail(key, `${this.path(key)} must be between ${min} and ${max}, got ${v}`);
    return v;
  }

  boolean(key: string): boolean | undefined {
    const v = this.table[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'boolean') this.wrongType(key, 'true or false', `${key} = true`);
    return v;
  }

  stringArray(key: string): string[] | undefined {
    const v = this.table[key];
    if (v === undefined) return undefined;
    if (!Array.isArray(v)) this.wrongType(key, 'an array of strings', `${key} = ["…", "…"]`);
    v.forEach((item, i) => {
      if (typeof item !== 'string') {
        const line = this.position?.keys.get(key)?.items[i]?.line ?? this.lineOf(key);
        throw new SparkError(
          this.code,
          `${at(this.file, line)}: ${this.path(key)}[${i}] must be a string, got ${typeName(item)}; quote it`,
          { path: this.file, key: this.path(key), line },
        );
      }
    });
    return v as string[];
  }

  /**
   * A table of environment variables ([env], [nccl], [nodes.env]): every key an environment
   * variable name and every value a string (a table, array or date is one error naming the
   * key, never a TypeError). `otherFix` may give a better fix for a key that is not a string.
   */
  envTable(
    key: string,
    otherFix?: (name: string, value: unknown) => string | undefined,
  ): Record<string, string> | undefined {
    const v = this.table[key];
    if (v === undefined) return undefined;
    if (!isTable(v)) this.wrongType(key, 'a table', `[${key}]`);
    // Annotated so that its never-returning checks narrow the value's type.
    const sub: FieldReader = this.sub(key, v);
    const out: Record<string, string> = {};
    for (const k of Object.keys(v)) {
      const keyProblem = envKeyProblem(k);
      if (keyProblem)
        sub.fail(
          k,
          `[${this.path(key)}] key ${keyProblem}`,
          'rename it; docker would get -e ' + JSON.stringify(`${k}=…`),
        );
      const value = v[k];
      if (typeof value !== 'string') {
        const fix = otherFix?.(k, value);
        if (fix) sub.fail(k, `${sub.path(k)} must be a string, got ${typeName(value)}`, fix);
        sub.wrongType(k, 'a string', `${pathSegment(k)} = "…"`);
      }
      const valueProblem = envValueProblem(value);
      if (valueProblem) sub.fail(k, `${sub.path(k)} ${valueProblem}`, 'remove the \\u0000 escape');
      out[k] = value;
    }
    return out;
  }

  /** An array of tables, e.g. [[extra_mounts]]: one reader per element. */
  tableArray(key: string): FieldReader[] {
    const v = this.table[key];
    if (v === undefined) return [];
    if (!Array.isArray(v) || !v.every(isTable)) this.wrongType(key, 'an array of tables', `[[${key}]]`);
    const at = this.position?.keys.get(key);
    return v.map((item, i) => {
      const element = at?.items[i];
      return new FieldReader(
        this.file,
        item,
        `${this.path(key)}[${i}]`,
        element,
        this.code,
        element?.line ?? this.lineOf(key),
      );
    });
  }

  sub(key: string, table: Record<string, unknown>): FieldReader {
    return new FieldReader(this.file, table, this.path(key), this.position?.keys.get(key), this.code, this.lineOf(key));
  }

  /** Keys of this table not in `known`, as warnings. */
  unknownKeys(known: readonly string[], what: string): FileDiagnostic[] {
    return Object.keys(this.table)
      .filter((k) => !known.includes(k))
      .map((k) => ({
        kind: 'unknown-key' as const,
        severity: 'warn' as const,
        file: this.file,
        line: this.lineOf(k),
        key: this.path(k),
        message: `unknown key ${this.path(k)} in the ${what} (ignored)`,
        fix: spellingFix(k, known),
      }));
  }
}
