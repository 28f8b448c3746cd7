// Keys a table header swallowed. TOML puts every bare key written after `[table]` or
// `[[array]]` into that table, so `args = [...]` below `[[extra_mounts]]` becomes
// `extra_mounts[0].args` and the engine silently runs without its arguments; `dist_port = 20000`
// appended below a cluster's `[nccl]` becomes an NCCL variable. A key counts as swallowed when
// it is one of the file's top-level keys and not one the table itself defines.
import { isTable, type FieldReader, type FileDiagnostic } from './fields.js';
import { formatPath, type TomlHeader, type TomlPositions } from './toml-positions.js';

export interface SwallowedKeySchema {
  /** Keys the file defines at the top level. */
  topLevel: readonly string[];
  /** Keys each table defines itself (by table name), which are never swallowed. */
  tables: Record<string, readonly string[]>;
}

/** A key written below `header` (its segments as written, the first one in the header's table). */
export interface SwallowedKey {
  header: TomlHeader;
  key: string[];
  line: number;
}

/** `extra_mounts[0].args`: where the key ended up. */
function swallowedPath(s: SwallowedKey): string {
  return formatPath([...s.header.path, ...s.key]);
}

/** The header as written: `[[extra_mounts]]`, `[nccl]`. */
function writtenHeader(header: TomlHeader): string {
  return header.array ? `[[${formatPath(header.path.slice(0, -1))}]]` : `[${formatPath(header.path)}]`;
}

export function findSwallowedKeys(positions: TomlPositions, schema: SwallowedKeySchema): SwallowedKey[] {
  return positions.headers.flatMap((header) => {
    const table = header.key[0]!;
    return header.keys
      .filter(
        ({ key }) =>
          schema.topLevel.includes(key[0]!) && key[0] !== table && !(schema.tables[table] ?? []).includes(key[0]!),
      )
      .map(({ key, line }) => ({ header, key, line }));
  });
}

export function swallowedDiagnostic(file: string, s: SwallowedKey): FileDiagnostic {
  const key = s.key[0]!;
  const path = swallowedPath(s);
  return {
    kind: 'swallowed-key',
    severity: 'error',
    file,
    line: s.line,
    key: path,
    message:
      `${key} on line ${s.line} is inside the ${writtenHeader(s.header)} table (header on line ${s.header.line}), ` +
      `so it is ${path}, not the file's top-level ${key}`,
    fix: `move ${key} above the first table header in the file`,
  };
}

/** Refuses a required key that is missing because a table swallowed it, saying where it went. */
export function failIfSwallowed(top: FieldReader, key: string, swallowed: SwallowedKey[]): void {
  if (top.has(key)) return;
  const lost = swallowed.find((s) => s.key[0] === key);
  if (lost) top.fail(key, swallowedDiagnostic(top.file, lost).message, `move ${key} above the first table header`);
}

/** A copy of the document's table without the swallowed keys, so typing does not trip on them. */
export function withoutSwallowed(table: Record<string, unknown>, swallowed: SwallowedKey[]): Record<string, unknown> {
  if (swallowed.length === 0) return table;
  const copy = structuredClone(table) as Record<string, unknown>;
  for (const s of swallowed) {
    const holder = s.header.path.reduce<unknown>(
      (node, p) => (node as Record<string | number, unknown> | undefined)?.[p],
      copy,
    );
    if (isTable(holder)) delete holder[s.key[0]!];
  }
  return copy;
}
