// What a recipe serves, as rules need to know it: the engine, the model family, and the
// engine's names for the flags rules read. The engine family is engine + model family (not a
// serving stack, stacks/registry.ts): a fact that holds on the SGLang DeepSeek-V4.1 family
// may be false on the vLLM DeepSeek-V4 one.
import type { Engine, Recipe } from './recipe.js';

export type ModelFamily = 'dsv41' | 'dsv4' | 'other';
export type EngineFamily = `${Engine}-${ModelFamily}`;

/** DeepSeek-V4.1 (Engram) or DeepSeek-V4, from the model or parent model id. */
export function modelFamily(recipe: Pick<Recipe, 'model' | 'parentModel'>): ModelFamily {
  const ids = [recipe.model, recipe.parentModel ?? ''].join(' ');
  if (/deepseek-v4\.1/i.test(ids)) return 'dsv41';
  if (/deepseek-v4/i.test(ids)) return 'dsv4';
  return 'other';
}

/**
 * The family a checkpoint's config.json declares: `model_type` / `architectures` naming
 * DeepSeek-V4.1 or V4, and Engram keys (only V4.1 has Engram tables). Undefined when the config
 * names neither, so the caller can fall back to the model id.
 */
export function configFamily(raw: Record<string, unknown>): ModelFamily | undefined {
  const text =
    typeof raw.text_config === 'object' && raw.text_config !== null ? (raw.text_config as Record<string, unknown>) : {};
  const names = [raw.model_type, text.model_type, ...(Array.isArray(raw.architectures) ? raw.architectures : [])]
    .filter((v): v is string => typeof v === 'string')
    .join(' ');
  const engram = [raw, text].some((t) => Array.isArray(t.engram_layer_ids) && t.engram_layer_ids.length > 0);
  if (engram || /deepseek[_-]?v4[._]?1|deepseekv41/i.test(names)) return 'dsv41';
  if (/deepseek[_-]?v4|deepseekv4/i.test(names)) return 'dsv4';
  return undefined;
}

/** A recipe's stack; `family` overrides the one its model id suggests (see configFamily). */
export function engineFamilyOf(
  recipe: Pick<Recipe, 'engine' | 'model' | 'parentModel'>,
  family?: ModelFamily,
): EngineFamily {
  return `${recipe.engine}-${family ?? modelFamily(recipe)}`;
}

/** Engine flag names for the settings rules check. */
export interface EngineFlags {
  contextLength: string;
  tensorParallel: string[];
  port: string;
  memoryFraction: string;
}

export const ENGINE_FLAGS: Record<Engine, EngineFlags> = {
  sglang: {
    contextLength: '--context-length',
    tensorParallel: ['--tp', '--tp-size', '--tensor-parallel-size'],
    port: '--port',
    memoryFraction: '--mem-fraction-static',
  },
  vllm: {
    contextLength: '--max-model-len',
    tensorParallel: ['-tp', '--tensor-parallel-size'],
    port: '--port',
    memoryFraction: '--gpu-memory-utilization',
  },
};

/** The engine's default serving port when the recipe sets none. */
export function defaultPort(engine: Engine): number {
  return engine === 'sglang' ? 30000 : 8000;
}
