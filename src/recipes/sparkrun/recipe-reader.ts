// The reading side of a sparkrun recipe: positions, diagnostics, the {launch.*} values and
// executor volumes, for parseSparkrunRecipe (recipe.ts).
import { COMMIT, hfModelDir, hfSnapshotPath, resolveRevision } from '../../engram/hf-cache.js';
import { SparkError } from '../../errors/errors.js';
import { HF_CACHE_CONTAINER_PATH } from '../cluster.js';
import { isTable, typeName, type FileDiagnostic } from '../fields.js';
import { expandHome } from '../paths.js';
import type { Mount } from '../recipe.js';
import type { TomlPosition } from '../toml-positions.js';
import { type LaunchValues } from './env.js';
import { type NotRun } from './features.js';
import { type ParsedYaml } from './yaml-document.js';

export interface SparkrunReadOptions {
  /** The launching machine's environment, for `$VAR` in env values. */
  env: NodeJS.ProcessEnv;
  /** The cluster's Hugging Face cache on this machine, for `{launch.model_path}` (refs/…). */
  hfCache?: string;
  home: string;
}

/** Typed reads of the document's keys, with YAML messages that name file:line. */
export class Reader {
  constructor(
    readonly file: string,
    readonly doc: ParsedYaml,
    readonly top: Record<string, unknown>,
  ) {}

  line(...path: (string | number)[]): number | undefined {
    let at: TomlPosition | undefined = this.doc.root;
    for (const p of path) at = typeof p === 'number' ? at?.items[p] : at?.keys.get(p);
    return at?.line;
  }

  fail(path: (string | number)[], message: string, fix: string): never {
    const line = this.line(...path);
    throw new SparkError('E_RECIPE', `${line === undefined ? this.file : `${this.file}:${line}`}: ${message}; ${fix}`, {
      path: this.file,
      key: path.join('.'),
      ...(line !== undefined ? { line } : {}),
    });
  }

  string(table: Record<string, unknown>, path: string[]): string | undefined {
    const v = table[path.at(-1)!];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string')
      this.fail(path, `${path.join('.')} must be a string, got ${typeName(v)}`, `write it as ${path.at(-1)}: "…"`);
    return v;
  }

  count(table: Record<string, unknown>, path: string[]): number | undefined {
    const v = table[path.at(-1)!];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > 64) {
      this.fail(
        path,
        `${path.join('.')} must be a whole number from 1 to 64, got ${JSON.stringify(v)}`,
        `write it as ${path.at(-1)}: 2`,
      );
    }
    return v;
  }

  map(table: Record<string, unknown>, path: string[]): Record<string, unknown> {
    const v = table[path.at(-1)!];
    if (v === undefined || v === null) return {};
    if (!isTable(v))
      this.fail(
        path,
        `${path.join('.')} must be a map of keys, got ${typeName(v)}`,
        `write it as ${path.at(-1)}: then one "key: value" per line below it`,
      );
    return v;
  }
}

export function diagnostic(
  file: string,
  line: number | undefined,
  kind: FileDiagnostic['kind'],
  severity: 'error' | 'warn',
  key: string,
  message: string,
  fix: string,
): FileDiagnostic {
  return { kind, severity, file, ...(line !== undefined ? { line } : {}), key, message, fix };
}

export function notRunDiagnostic(file: string, line: number | undefined, key: string, n: NotRun): FileDiagnostic {
  return diagnostic(file, line, 'sparkrun-not-run', n.severity, key, `${key}: ${n.means}`, n.fix);
}

/** The snapshot `{launch.model_path}` names: a pinned commit, else the cluster cache's ref. */
export async function launchValues(
  model: string,
  revision: string | undefined,
  numNodes: number,
  options: SparkrunReadOptions,
): Promise<LaunchValues> {
  const out: LaunchValues = { numNodes };
  let commit = revision !== undefined && COMMIT.test(revision) ? revision : undefined;
  if (commit === undefined && options.hfCache !== undefined) {
    try {
      const pinned = revision !== undefined ? { pinned: revision } : {};
      commit = (
        await resolveRevision(hfModelDir(expandHome(options.hfCache, options.home), model), { ...pinned, model })
      ).revision;
    } catch (err) {
      out.unresolvedWhy = err instanceof Error ? err.message.split(';')[0]! : String(err);
    }
  } else if (commit === undefined) {
    out.unresolvedWhy = 'model_revision is not a commit and no cluster hf_cache was given';
  }
  if (commit !== undefined) {
    out.modelRevision = commit;
    out.modelPath = hfSnapshotPath(hfModelDir(HF_CACHE_CONTAINER_PATH, model), commit);
  }
  return out;
}

/** `host:container[:ro]` strings or a host → container map, as executor_config.volumes. */
export function volumes(r: Reader, executor: Record<string, unknown>): Mount[] {
  const v = executor.volumes;
  if (v === undefined || v === null) return [];
  const mount = (host: string, container: string, mode: string | undefined, line: number | undefined): Mount => {
    if (!container.startsWith('/'))
      r.fail(
        ['executor_config', 'volumes'],
        `executor_config.volumes: the container path "${container}" is not absolute`,
        'write host:/absolute/path',
      );
    return { host, container, readOnly: mode === 'ro', ...(line !== undefined ? { line } : {}) };
  };
  if (Array.isArray(v)) {
    return v.map((item, i) => {
      if (typeof item !== 'string')
        r.fail(
          ['executor_config', 'volumes', i],
          `executor_config.volumes[${i}] must be "host:container[:ro]"`,
          'quote it as a string',
        );
      const [host, container, mode] = item.split(':');
      if (!host || !container)
        r.fail(
          ['executor_config', 'volumes', i],
          `executor_config.volumes[${i}] "${item}" must be "host:container[:ro]"`,
          'write both paths',
        );
      return mount(host, container, mode, r.line('executor_config', 'volumes', i));
    });
  }
  if (isTable(v)) {
    return Object.entries(v).map(([host, target]) => {
      const [container, mode] = String(target).split(':');
      return mount(host, container ?? '', mode, r.line('executor_config', 'volumes', host));
    });
  }
  return r.fail(
    ['executor_config', 'volumes'],
    'executor_config.volumes must be a list of "host:container[:ro]" or a map of host: container',
    'write one mount per entry',
  );
}
