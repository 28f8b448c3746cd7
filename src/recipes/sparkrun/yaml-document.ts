// One YAML document (a sparkrun recipe or cluster file): its plain values and the line that
// wrote every key and element, so every message names file:line.
//
// The `yaml` package (eemeli/yaml) is used because it keeps what a finding needs and refuses
// what a recipe must not hold: a LineCounter and a source range on every node (line numbers
// without a second pass over the text, unlike the TOML side), duplicate keys refused by
// default, tabs in indentation and anchors to nowhere refused as errors, and a cap on alias
// expansion (maxAliasCount) that stops a billion-laughs document when it is turned into plain
// values. It has no dependencies and parses YAML 1.2, which is what sparkrun's PyYAML reads
// for every construct a recipe uses.
import { LineCounter, isAlias, isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { SparkError } from '../../errors.js';
import type { ErrorCode } from '../../error-codes.js';
import type { TomlPosition } from '../toml-positions.js';

/**
 * A recipe or cluster file is a few KB; one over this is refused before it is parsed (a large
 * YAML document takes the parser seconds, and nothing that big is a recipe).
 */
export const YAML_MAX_BYTES = 1 << 20;
/** Aliases a document may expand: recipes use a handful at most. */
const MAX_ALIASES = 100;

export interface YamlDocument {
  /** The document as plain values (maps as objects). */
  value: unknown;
  /** Where each key and element was written (the same shape the TOML side gives). */
  root: TomlPosition;
}

function position(line: number): TomlPosition {
  return { line, keys: new Map(), items: [] };
}

/** Positions of a node's keys and elements; aliases are not followed (they point at nodes already walked). */
function walk(node: unknown, at: TomlPosition, lines: LineCounter, depth: number): void {
  if (depth > 64 || isAlias(node)) return;
  const lineOf = (n: Node | null | undefined, fallback: number) =>
    n?.range ? lines.linePos(n.range[0]).line : fallback;
  if (isMap(node)) {
    for (const pair of node.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const child = position(lineOf(pair.key as Node, at.line));
      at.keys.set(key, child);
      walk(pair.value, child, lines, depth + 1);
    }
  } else if (isSeq(node)) {
    for (const item of node.items) {
      const child = position(lineOf(item as Node, at.line));
      at.items.push(child);
      walk(item, child, lines, depth + 1);
    }
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
  const doc = parseDocument(source, {
    lineCounter: lines,
    uniqueKeys: true,
    prettyErrors: false,
    strict: true,
    version: '1.2',
  });
  const problem = doc.errors[0];
  if (problem) fail(code, file, lines.linePos(problem.pos[0]).line, firstLine(problem.message));
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
  walk(doc.contents, root, lines, 0);
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
