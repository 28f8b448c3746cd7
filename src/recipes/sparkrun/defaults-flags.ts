// What each `defaults` key of a sparkrun recipe without a `command:` becomes: the launcher's own
// (the parallel shape, the port), a flag of sparkrun's flag table, the engine's own flag for a
// key outside that table, a key sparkrun reads itself, or nothing, and the finding that says
// which (docs/sparkrun.md, "defaults without a template").
import type { Engine } from '../recipe.js';
import { ENGINE_FLAG_NAMES } from './engine-flag-names.js';

/** `defaults` keys spark reads itself (the parallel shape, the port, vLLM's backend): the launcher passes them. */
export const SHAPE_KEYS = new Set(['tensor_parallel', 'pipeline_parallel', 'port', 'distributed_executor_backend']);

/** sparkrun's flag table per runtime (v0.2): a `defaults` key and the engine flag it becomes. */
export const FLAG_TABLES: Record<Engine, Record<string, string>> = {
  sglang: {
    tensor_parallel: '--tp-size',
    pipeline_parallel: '--pp-size',
    port: '--port',
    host: '--host',
    gpu_memory_utilization: '--mem-fraction-static',
    max_model_len: '--context-length',
    max_num_seqs: '--max-running-requests',
    trust_remote_code: '--trust-remote-code',
    chunked_prefill: '--chunked-prefill-size',
    ep_size: '--ep-size',
    served_model_name: '--served-model-name',
    dtype: '--dtype',
    quantization: '--quantization',
    kv_cache_dtype: '--kv-cache-dtype',
  },
  vllm: {
    tensor_parallel: '-tp',
    pipeline_parallel: '-pp',
    port: '--port',
    host: '--host',
    gpu_memory_utilization: '--gpu-memory-utilization',
    max_model_len: '--max-model-len',
    max_num_seqs: '--max-num-seqs',
    max_num_batched_tokens: '--max-num-batched-tokens',
    served_model_name: '--served-model-name',
    dtype: '--dtype',
    quantization: '--quantization',
    kv_cache_dtype: '--kv-cache-dtype',
    trust_remote_code: '--trust-remote-code',
    enforce_eager: '--enforce-eager',
    enable_prefix_caching: '--enable-prefix-caching',
    distributed_executor_backend: '--distributed-executor-backend',
  },
};

/** vLLM flags that are on unless turned off: `false` is written `--no-<flag>`, not left out. */
export const NEGATABLE = new Set(['enable_prefix_caching', 'enable_chunked_prefill', 'async_scheduling']);

/**
 * Keys outside sparkrun's table whose engine flag is not their dashed name: the flag, or why
 * there is none. (`--data-parallel` would reach SGLang's `--data-parallel-size` only through
 * argparse's abbreviations, which a new flag of the same prefix breaks.)
 */
const ENGINE_KEY_FLAGS: Record<Engine, Record<string, string | { none: string }>> = {
  sglang: {
    data_parallel: '--dp-size',
    expert_parallel: '--ep-size',
  },
  vllm: {
    data_parallel: '--data-parallel-size',
    random_seed: '--seed',
    expert_parallel: {
      none: 'vLLM has no expert-parallel size flag (--enable-expert-parallel makes it tensor × data parallel)',
    },
    ep_size: {
      none: 'vLLM has no expert-parallel size flag (--enable-expert-parallel makes it tensor × data parallel)',
    },
  },
};

/** Keys sparkrun reads itself, never engine flags, and what sparkrun does with each. */
const SPARKRUN_OWN_KEYS: Record<string, string> = {
  model_type: 'the kind of model, llm or another, by which it picks the backend of `sglang serve`',
  resolved_model_path: 'the path of pre-placed weights, for templates',
  model: 'the model its templates name as {model}; spark serves the top-level model',
  init_port: "the rendezvous port (spark gives the cluster file's dist_port)",
  data_parallel_rpc_port: "the port of vLLM's data-parallel ranks",
  speculative_draft_model: 'the draft model sparkrun copies to the nodes',
  executor: 'how sparkrun runs containers',
  image_prefix: 'how sparkrun names the images it builds',
  launcher_image: 'how sparkrun runs containers',
  use_sentinel_image: 'how sparkrun runs containers',
  save_build_logs: 'how sparkrun builds images',
  transformers: 'how sparkrun builds images',
  kubectl: 'how sparkrun runs containers',
  benchmark_framework: 'its benchmarks',
  benchmark_output_dir: 'its benchmarks',
};

/** What becomes of one `defaults` key on the way to the engine's flags. */
export type DefaultsOutcome =
  | { key: string; how: 'shape' }
  /** In sparkrun's flag table. */
  | { key: string; how: 'mapped'; flag: string }
  /** Outside the table, the engine's own flag; `not` is the dashed name when that is not the flag. */
  | { key: string; how: 'engine-flag'; flag: string; not?: string }
  /** sparkrun reads it itself: not passed. */
  | { key: string; how: 'sparkrun-own'; means: string }
  /** No engine flag spark knows: not passed. */
  | { key: string; how: 'not-a-flag'; dashed: string; why?: string }
  /** Its value names a placeholder nothing answers: neither the flag nor the value is passed. */
  | { key: string; how: 'unresolved'; flag: string; placeholders: string[] };

/** Where a `defaults` key goes without a template (before its value is looked at). */
export function keyFate(engine: Engine, key: string): DefaultsOutcome {
  if (SHAPE_KEYS.has(key)) return { key, how: 'shape' };
  const mapped = FLAG_TABLES[engine][key];
  if (mapped !== undefined) return { key, how: 'mapped', flag: mapped };
  const own = SPARKRUN_OWN_KEYS[key];
  if (own !== undefined) return { key, how: 'sparkrun-own', means: own };
  const dashed = `--${key.replace(/_/g, '-')}`;
  const alias = ENGINE_KEY_FLAGS[engine][key];
  if (typeof alias === 'string')
    return { key, how: 'engine-flag', flag: alias, ...(alias !== dashed ? { not: dashed } : {}) };
  if (alias !== undefined) return { key, how: 'not-a-flag', dashed, why: alias.none };
  if (ENGINE_FLAG_NAMES[engine].has(dashed)) return { key, how: 'engine-flag', flag: dashed };
  return { key, how: 'not-a-flag', dashed };
}

/** The finding for a key that is not in sparkrun's table, or not passed; undefined when none is due. */
export function outcomeFinding(
  engine: Engine,
  o: DefaultsOutcome,
): { severity: 'error' | 'warn'; message: string; fix: string } | undefined {
  const key = `defaults.${o.key}`;
  switch (o.how) {
    case 'shape':
    case 'mapped':
      return undefined;
    case 'engine-flag':
      return {
        severity: 'warn',
        message:
          `${key} is not in sparkrun's ${engine} flag table (sparkrun 0.2 drops such keys without a word); ` +
          `spark passes it to the engine as ${o.flag}${o.not !== undefined ? ` (${engine}'s flag for it; ${o.not} is not one)` : ''}`,
        fix: `check that the image's ${engine} takes ${o.flag}, or write the flag in a command: template`,
      };
    case 'sparkrun-own':
      return {
        severity: 'warn',
        message: `${key} is read by sparkrun itself (${o.means}), not an engine flag; spark passes nothing for it`,
        fix: 'remove it when the recipe is only launched by spark',
      };
    case 'not-a-flag':
      return {
        severity: 'warn',
        message: `${key}: ${o.why ?? `${o.dashed} is not a ${engine} flag spark knows`}, so spark does not pass it (sparkrun 0.2 drops it too)`,
        fix: `write the flag the image's ${engine} takes in a command: template, or correct the key`,
      };
    case 'unresolved':
      return {
        severity: 'error',
        message: `${key}: ${o.placeholders.map((p) => `{${p}}`).join(', ')} names no key of defaults and no top-level key spark answers (model, model_revision), so spark passes neither ${o.flag} nor its value`,
        fix: `add ${o.placeholders[0]} to defaults (or the top level), or correct the placeholder`,
      };
  }
}
