// One YAML document (a sparkrun recipe or cluster file, sparkrun's config.yaml): its plain values
// and the line that wrote every key and element, so every message names file:line.
//
// The `yaml` package (eemeli/yaml) is used because it keeps what a finding needs and refuses
// what a recipe must not hold: a LineCounter and a source range on every node (line numbers
// without a second pass over the text, unlike the TOML side), duplicate keys refused by
// default, tabs in indentation and anchors to nowhere refused as errors, and a cap on alias
// expansion (maxAliasCount) that stops a billion-laughs document when it is turned into plain
// values. It has no dependencies.
//
// sparkrun reads its files with PyYAML, a YAML 1.1 loader: `<<: *base` merges the anchored map
// into the one that holds it (its own keys win). YAML 1.2 has no merge key, so a 1.2 reader
// would see a key named `<<`; spark resolves merges as PyYAML does (YAML_PARSE_OPTIONS), and
// refuses the forms the two would read differently (a quoted or tagged `<<`).
import {
  LineCounter,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  parseDocument,
  type Document,
  type Node,
  type Pair,
  type YAMLMap,
} from 'yaml';
import { SparkError } from '../../errors/errors.js';
import type { ErrorCode } from '../../errors/error-codes.js';
import type { TomlPosition } from '../toml-positions.js';

/**
 * A recipe or cluster file is a few KB; one over this is refused before it is parsed (a large
 * YAML document takes the parser seconds, and nothing that big is a recipe).
 */
export const YAML_MAX_BYTES = 1 << 20;
/** Aliases a document may expand: recipes use a handful at most. */
const MAX_ALIASES = 100;

/**
 * How spark parses every YAML file it reads (recipes, sparkrun clusters, sparkrun's config.yaml):
 * merge keys resolved as sparkrun's YAML 1.1 loader resolves them; duplicate keys refused; every
 * key a string (a list or map as a key is refused, and `1` and `"1"` are the same key, as they
 * are once the document is plain values).
 */
export const YAML_PARSE_OPTIONS = {
  version: '1.2',
  merge: true,
  stringKeys: true,
  uniqueKeys: true,
  strict: true,
  prettyErrors: false,
} as const;

export interface YamlDocument {
  /** The document as plain values (maps as objects). */
  value: unknown;
  /** Where each key and element was written (the same shape the TOML side gives). */
  root: TomlPosition;
}

function position(line: number): TomlPosition {
  return { line, keys: new Map(), items: [] };
}

function keyText(pair: Pair): string {
  return isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
}

/** A `<<` key the parser takes as a merge: plain and untagged (sparkrun's loader agrees on these only). */
function isMergePair(pair: Pair): boolean {
  return isScalar(pair.key) && pair.key.value === '<<' && pair.key.type === 'PLAIN' && pair.key.tag === undefined;
}

/** The maps a merge key's value names: one map or alias to one, or a list of them; undefined when it is neither. */
function mergeSources(value: unknown, doc: Document): YAMLMap[] | undefined {
  const resolve = (n: unknown) => (isAlias(n) ? n.resolve(doc) : n);
  const v = resolve(value);
  const items = isSeq(v) ? v.items.map(resolve) : [v];
  return items.every((m) => isMap(m)) ? (items as YAMLMap[]) : undefined;
}

/** The name of an alias in a merge key's value that no anchor defines. */
function missingAnchor(value: unknown, doc: Document): string | undefined {
  const items = isSeq(value) ? value.items : [value];
  const alias = items.find((n) => isAlias(n) && n.resolve(doc) === undefined);
  return isAlias(alias) ? alias.source : undefined;
}

/**
 * A map's keys as the plain value has them, each with the pair that wrote it: its own keys,
 * then those its merge keys bring in that it does not write itself (earlier sources first).
 */
function effectivePairs(map: YAMLMap, doc: Document, depth: number): Map<string, Pair> {
  const own = new Map<string, Pair>();
  const merged = new Map<string, Pair>();
  for (const pair of map.items) {
    if (!isMergePair(pair)) {
      own.set(keyText(pair), pair);
      continue;
    }
    if (depth > 64) continue;
    for (const source of mergeSources(pair.value, doc) ?? []) {
      for (const [k, p] of effectivePairs(source, doc, depth + 1)) if (!merged.has(k)) merged.set(k, p);
    }
  }
  for (const [k, p] of own) merged.set(k, p);
  return merged;
}

/** Positions of a node's keys and elements; aliases are not followed (they point at nodes already walked). */
function walk(node: unknown, at: TomlPosition, lines: LineCounter, doc: Document, depth: number): void {
  if (depth > 64 || isAlias(node)) return;
  const lineOf = (n: Node | null | undefined, fallback: number) =>
    n?.range ? lines.linePos(n.range[0]).line : fallback;
  if (isMap(node)) {
    // A merged key is placed where the anchored map wrote it.
    for (const [key, pair] of effectivePairs(node, doc, depth)) {
      const child = position(lineOf(pair.key as Node, at.line));
      at.keys.set(key, child);
      walk(pair.value, child, lines, doc, depth + 1);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) {
      const child = position(lineOf(item as Node, at.line));
      at.items.push(child);
      walk(item, child, lines, doc, depth + 1);
    }
  }
}

/** A key found by its source offset: the dotted path to it, and the map that holds it. */
interface FoundKey {
  path: string;
  map: YAMLMap;
  pair: Pair;
}

function dotted(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

/** The pair whose key starts at `offset` (the parser's error position), with its path. */
function keyAt(node: unknown, offset: number, path: string, depth = 0): FoundKey | undefined {
  if (depth > 64) return undefined;
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = pair.key as Node | null;
      if (key?.range?.[0] === offset) return { path, map: node, pair };
      const inner = keyAt(pair.value, offset, dotted(path, keyText(pair)), depth + 1);
      if (inner) return inner;
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) {
      const inner = keyAt(item, offset, `${path}[${i}]`, depth + 1);
      if (inner) return inner;
    }
  }
  return undefined;
}

/**
 * Keys the parser accepts but spark must not: a `<<` that is quoted or tagged (PyYAML reads
 * `"<<"` as a key named <<, and the two parsers disagree on `!!str <<`), and a merge key whose
 * value is not a map (the parser would only say so without a line).
 */
function checkMergeKeys(
  node: unknown,
  doc: Document,
  lines: LineCounter,
  path: string,
  refuse: (line: number, what: string) => never,
  depth = 0,
): void {
  if (depth > 64 || isAlias(node)) return;
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = pair.key as Node;
      const line = lines.linePos(key.range?.[0] ?? 0).line;
      const where = dotted(path, '<<');
      if (isScalar(pair.key) && pair.key.value === '<<' && !isMergePair(pair)) {
        refuse(
          line,
          `the key ${where} is ${pair.key.tag !== undefined ? 'tagged' : 'quoted'}, so sparkrun reads a key named "<<", not a merge; write <<: *anchor unquoted to merge a map, or rename the key`,
        );
      }
      if (isMergePair(pair)) {
        const missing = missingAnchor(pair.value, doc);
        if (missing !== undefined)
          refuse(line, `Unresolved alias: ${missing}; define the anchor &${missing} above it, or write the value out`);
        if (mergeSources(pair.value, doc) === undefined)
          refuse(line, `the merge key ${where} must name a map (<<: *anchor) or a list of them (<<: [*a, *b])`);
      }
      checkMergeKeys(pair.value, doc, lines, dotted(path, keyText(pair)), refuse, depth + 1);
    }
  } else if (isSeq(node)) {
    for (const [i, item] of node.items.entries()) checkMergeKeys(item, doc, lines, `${path}[${i}]`, refuse, depth + 1);
  }
}

/** The first line of a block scalar's text (the line after `key: |`), else the node's line. */
export function textStartLine(source: string, lines: LineCounter, node: Node): number {
  const start = node.range?.[0] ?? 0;
  const line = lines.linePos(start).line;
  return /^[|>]/.test(source.slice(start, start + 1)) ? line + 1 : line;
}

function fail(code: ErrorCode, file: string, line: number | undefined, what: string): never {
  const where = line === undefined ? file : `${file}:${line}`;
  throw new SparkError(code, `${where}: invalid YAML: ${what}`, {
    path: file,
    ...(line !== undefined ? { line } : {}),
  });
}

/** The first line of the parser's message, without the excerpt it appends. */
function firstLine(message: string): string {
  return message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
}

/** The parser's first error as one line naming what it is about (a duplicate key by its path). */
function problemText(
  doc: Document,
  problem: { code: string; pos: [number, number]; message: string },
  lines: LineCounter,
) {
  const line = lines.linePos(problem.pos[0]).line;
  if (problem.code === 'DUPLICATE_KEY') {
    const found = keyAt(doc.contents, problem.pos[0], '');
    if (found) {
      const key = keyText(found.pair);
      const first = found.map.items.find((p) => p !== found.pair && keyText(p) === key);
      const firstLine = first ? lines.linePos((first.key as Node).range?.[0] ?? 0).line : undefined;
      const where =
        firstLine === undefined
          ? `again at line ${line}`
          : firstLine === line
            ? `both on line ${line}`
            : `lines ${firstLine} and ${line}`;
      return {
        line,
        what: `the key ${dotted(found.path, key)} is written twice (${where}); map keys must be unique: keep one`,
      };
    }
  }
  if (problem.code === 'NON_STRING_KEY')
    return { line, what: 'a key must be a plain word or a quoted string, not a list or a map' };
  return { line, what: firstLine(problem.message) };
}

export interface ParsedYaml extends YamlDocument {
  /** The first text line of a block scalar at a top-level key (for `command: |`). */
  textLine(key: string): number | undefined;
}

/** Parses one YAML document; every refusal is one SparkError line naming file:line (exit 2). */
export function parseYamlDocument(source: string, file: string, code: ErrorCode): ParsedYaml {
  if (Buffer.byteLength(source) > YAML_MAX_BYTES) {
    throw new SparkError(
      code,
      `${file}: a YAML file of ${Buffer.byteLength(source)} bytes is far larger than a recipe or cluster file (at most ${YAML_MAX_BYTES}); point at the right file`,
      { path: file },
    );
  }
  const lines = new LineCounter();
  const doc = parseDocument(source, { lineCounter: lines, ...YAML_PARSE_OPTIONS });
  const problem = doc.errors[0];
  if (problem) {
    const { line, what } = problemText(doc, problem, lines);
    fail(code, file, line, what);
  }
  checkMergeKeys(doc.contents, doc, lines, '', (line, what) => fail(code, file, line, what));
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (err) {
    // maxAliasCount: an alias bomb (each alias expanding to many) stops here, not in memory.
    const message = err instanceof Error ? err.message : String(err);
    const alias = /^Unresolved alias.*: (\S+)$/.exec(firstLine(message))?.[1];
    if (alias !== undefined) {
      // The alias's own line: the first `*name` in the text.
      const at = source.indexOf(`*${alias}`);
      fail(
        code,
        file,
        at >= 0 ? lines.linePos(at).line : undefined,
        `${firstLine(message)}; define the anchor &${alias} above it, or write the value out`,
      );
    }
    fail(code, file, undefined, `${firstLine(message)}; write the values out instead of nesting aliases`);
  }
  const root = position(0);
  walk(doc.contents, root, lines, doc, 0);
  return {
    value,
    root,
    textLine(key) {
      if (!isMap(doc.contents)) return undefined;
      const pair = doc.contents.items.find((p) => isScalar(p.key) && p.key.value === key);
      return pair && isScalar(pair.value) ? textStartLine(source, lines, pair.value) : undefined;
    },
  };
}
