// Keys a table header swallowed. TOML puts every bare key written after `[table]` or
// `[[array]]` into that table, so `args = [...]` below `[[extra_mounts]]` becomes
// `extra_mounts[0].args` and the engine silently runs without its arguments; `dist_port = 20000`
// appended below a cluster's `[nccl]` becomes an NCCL variable. A key counts as swallowed when
// it is one of the file's top-level keys and not one the table itself defines.
import { isTable, type FieldReader, type FileDiagnostic } from './fields.js';
import type { TomlDocument } from './toml-file.js';
import type { TomlKeyLocation } from './toml-scan.js';

export interface SwallowedKeySchema {
  /** Keys the file defines at the top level. */
  topLevel: readonly string[];
  /** Keys each table defines itself (by table name), which are never swallowed. */
  tables: Record<string, readonly string[]>;
}

/** The first key segment below the key's table (`args` for `extra_mounts[0].args`). */
function keyInTable(loc: TomlKeyLocation): string {
  return loc.path.slice(loc.table!.path.length + 1).split('.')[0] ?? '';
}

/** `extra_mounts[0]` → `extra_mounts`. */
function tableName(loc: TomlKeyLocation): string {
  return loc.table!.path.replace(/\[\d+\]$/, '').split('.')[0] ?? '';
}

export function findSwallowedKeys(doc: TomlDocument, schema: SwallowedKeySchema): TomlKeyLocation[] {
  return doc.locations.keys.filter((loc) => {
    if (!loc.table) return false;
    const key = keyInTable(loc);
    const table = tableName(loc);
    if (!schema.topLevel.includes(key) || key === table) return false;
    return !(schema.tables[table] ?? []).includes(key);
  });
}

export function swallowedDiagnostic(file: string, loc: TomlKeyLocation): FileDiagnostic {
  const header = loc.table!;
  const written = header.array ? `[[${header.path.replace(/\[\d+\]$/, '')}]]` : `[${header.path}]`;
  const key = keyInTable(loc);
  return {
    kind: 'swallowed-key',
    severity: 'error',
    file,
    line: loc.line,
    key: loc.path,
    message:
      `${key} on line ${loc.line} is inside the ${written} table (header on line ${header.line}), ` +
      `so it is ${loc.path}, not the file's top-level ${key}`,
    fix: `move ${key} above the first table header in the file`,
  };
}

/** Refuses a required key that is missing because a table swallowed it, saying where it went. */
export function failIfSwallowed(top: FieldReader, key: string, swallowed: TomlKeyLocation[]): void {
  if (top.has(key)) return;
  const lost = swallowed.find((l) => keyInTable(l) === key);
  if (lost) top.fail(key, swallowedDiagnostic(top.file, lost).message, `move ${key} above the first table header`);
}

/** A copy of the document's table without the swallowed keys, so typing does not trip on them. */
export function withoutSwallowed(table: Record<string, unknown>, swallowed: TomlKeyLocation[]): Record<string, unknown> {
  if (swallowed.length === 0) return table;
  const copy = structuredClone(table) as Record<string, unknown>;
  for (const loc of swallowed) {
    const holder = resolveTable(copy, loc.table!.path);
    if (holder) delete holder[keyInTable(loc).replace(/^"|"$/g, '')];
  }
  return copy;
}

function resolveTable(root: Record<string, unknown>, path: string): Record<string, unknown> | undefined {
  let node: unknown = root;
  for (const part of path.split('.')) {
    const m = /^(.*?)(?:\[(\d+)\])?$/.exec(part)!;
    node = isTable(node) ? node[m[1] ?? ''] : undefined;
    if (m[2] !== undefined) node = Array.isArray(node) ? node[Number(m[2])] : undefined;
  }
  return isTable(node) ? node : undefined;
}
