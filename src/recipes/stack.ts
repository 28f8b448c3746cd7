// What a recipe serves, as rules need to know it: the engine, the model family, and the
// engine's names for the flags rules read. A "stack" is engine + model family: a fact that
// holds on the SGLang DeepSeek-V4.1 stack may be false on the vLLM DeepSeek-V4 stack.
import type { Engine, Recipe } from './recipe.js';

export type ModelFamily = 'dsv41' | 'dsv4' | 'other';
export type Stack = `${Engine}-${ModelFamily}`;

/** DeepSeek-V4.1 (Engram) or DeepSeek-V4, from the model or parent model id. */
export function modelFamily(recipe: Pick<Recipe, 'model' | 'parentModel'>): ModelFamily {
  const ids = [recipe.model, recipe.parentModel ?? ''].join(' ');
  if (/deepseek-v4\.1/i.test(ids)) return 'dsv41';
  if (/deepseek-v4/i.test(ids)) return 'dsv4';
  return 'other';
}

export function stackOf(recipe: Pick<Recipe, 'engine' | 'model' | 'parentModel'>): Stack {
  return `${recipe.engine}-${modelFamily(recipe)}`;
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
