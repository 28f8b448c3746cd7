// A sparkrun recipe's `env` values as the containers get them: `{config.KEY}` from `defaults`,
// `{launch.model_path}` / `{launch.model_revision}` / `{launch.num_nodes}` /
// `{launch.runtime_cache_dir}` from what spark resolves, then `$VAR` / `${VAR}` from the
// launching machine's environment (sparkrun 0.2 expands them there). A path under sparkrun's
// Hugging Face mount (/cache/huggingface) is moved to spark's (HF_CACHE_CONTAINER_PATH), with a
// word, so the value names the same file in spark's containers.
import { HF_CACHE_CONTAINER_PATH } from '../cluster.js';
import { ExpandError, expand } from '../env-expand.js';
import type { FileDiagnostic } from '../fields.js';
import { renderValue } from './command.js';

/** Where spark mounts the runtime cache in every container (sparkrun's mount point). */
export const RUNTIME_CACHE_CONTAINER_PATH = '/cache/runtime';
/** The host directory sparkrun keeps its runtime cache in, unless runtime_cache.dir says. */
export const RUNTIME_CACHE_HOST_DEFAULT = '~/.cache/sparkrun/runtime-cache';
/** Where sparkrun mounts the Hugging Face cache in its containers. */
export const SPARKRUN_HF_PATH = '/cache/huggingface';

export interface LaunchValues {
  /** The snapshot as the containers see it; undefined when it could not be resolved here. */
  modelPath?: string;
  modelRevision?: string;
  /** Why the snapshot could not be resolved (for the finding). */
  unresolvedWhy?: string;
  numNodes: number;
}

export interface EnvContext {
  file: string;
  defaults: Record<string, unknown>;
  launch: LaunchValues;
  /** The launching machine's environment, for `$VAR`. */
  processEnv: NodeJS.ProcessEnv;
  diagnostics: FileDiagnostic[];
}

/** Whether any value names the runtime cache (spark then mounts it). */
export function usesRuntimeCache(values: readonly string[]): boolean {
  return values.some((v) => v.includes('{launch.runtime_cache_dir}'));
}

const REFERENCE = /\{(config|launch)\.([A-Za-z_][A-Za-z0-9_]*)\}/g;

function note(
  ctx: EnvContext,
  key: string,
  line: number | undefined,
  severity: 'error' | 'warn',
  message: string,
  fix: string,
): void {
  ctx.diagnostics.push({
    kind: 'sparkrun-defaults',
    severity,
    file: ctx.file,
    ...(line !== undefined ? { line } : {}),
    key: `env.${key}`,
    message,
    fix,
  });
}

function launchValue(ctx: EnvContext, name: string, key: string, line: number | undefined): string | undefined {
  const l = ctx.launch;
  switch (name) {
    case 'num_nodes':
      return String(l.numNodes);
    case 'runtime_cache_dir':
      return RUNTIME_CACHE_CONTAINER_PATH;
    case 'model_path':
    case 'model_revision': {
      const v = name === 'model_path' ? l.modelPath : l.modelRevision;
      if (v === undefined) {
        note(
          ctx,
          key,
          line,
          'error',
          `env.${key}: {launch.${name}} cannot be resolved here (${l.unresolvedWhy ?? 'no snapshot'})`,
          'pin model_revision to a commit hash, or give the cluster whose hf_cache holds the model (--cluster)',
        );
      }
      return v;
    }
    default:
      note(
        ctx,
        key,
        line,
        'error',
        `env.${key}: {launch.${name}} is not a value spark gives (it gives model_path, model_revision, num_nodes and runtime_cache_dir)`,
        'write the value, or use NODE_RANK, which spark sets in every container',
      );
      return undefined;
  }
}

/** One env value, interpolated; unresolvable references stay as written, with an error finding. */
export function interpolate(ctx: EnvContext, key: string, raw: unknown, line: number | undefined): string {
  let value = renderValue(raw).replace(REFERENCE, (whole, scope: string, name: string) => {
    if (scope === 'launch') return launchValue(ctx, name, key, line) ?? whole;
    if (ctx.defaults[name] !== undefined) return renderValue(ctx.defaults[name]);
    note(
      ctx,
      key,
      line,
      'error',
      `env.${key}: {config.${name}} names no key of defaults`,
      `add ${name} to defaults, or correct the name`,
    );
    return whole;
  });
  try {
    value = expand(value, (name, quiet) => {
      const v = ctx.processEnv[name];
      if (v === undefined && !quiet) {
        ctx.diagnostics.push({
          kind: 'undefined-variable',
          severity: 'warn',
          file: ctx.file,
          ...(line !== undefined ? { line } : {}),
          key: name,
          message: `$${name} in env.${key} is not set on this machine; it expands to an empty string`,
          fix: `set ${name} before running spark, or write the value into the recipe`,
        });
      }
      return v;
    });
  } catch (err) {
    if (!(err instanceof ExpandError)) throw err;
    note(ctx, key, line, 'error', `env.${key}: ${err.message}`, 'correct the ${…} expansion');
  }
  const moved = value.replace(/(^|[\s:=,])\/cache\/huggingface(?=\/|$|[\s:,])/g, `$1${HF_CACHE_CONTAINER_PATH}`);
  if (moved !== value) {
    note(
      ctx,
      key,
      line,
      'warn',
      `env.${key} names ${SPARKRUN_HF_PATH}, where sparkrun mounts the Hugging Face cache; spark mounts it at ${HF_CACHE_CONTAINER_PATH}, so the value is passed as "${moved}"`,
      `write {launch.model_path} for the model's snapshot, or the path under ${HF_CACHE_CONTAINER_PATH}`,
    );
  }
  return moved;
}
