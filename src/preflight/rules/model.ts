// Settings checked against the model's own config.json.
import { configFamily, ENGINE_FLAGS, modelFamily, type Engine } from '../../recipes/index.js';
import { defineRule, finding, whereArg, whereEnv, whereField } from '../../preflight-api/rule.js';

/** `524288`, `128k` (×1000), `128K` (×1024), `1m` / `1M`; undefined for `auto` or junk. */
export function parseTokenCount(text: string): number | undefined {
  const m = /^\s*(\d+)\s*([kKmM]?)\s*$/.exec(text);
  if (!m) return undefined;
  const mult: Record<string, number> = { '': 1, k: 1000, K: 1024, m: 1_000_000, M: 1024 * 1024 };
  return Number(m[1]) * mult[m[2]!]!;
}

/** The variable with which each engine accepts a context longer than max_position_embeddings. */
export const LONG_CONTEXT_VARIABLE: Record<Engine, string> = {
  vllm: 'VLLM_ALLOW_LONG_MAX_MODEL_LEN',
  sglang: 'SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN',
};

/** Both engines read these as booleans: 1 or true (any case). */
function envTrue(value: string | undefined): boolean {
  return value !== undefined && /^(1|true)$/i.test(value.trim());
}

export const contextLength = defineRule({
  id: 'model.context-length',
  title: "the context length is within the model's max_position_embeddings",
  severity: 'error',
  also: `warn instead when the override is set (${LONG_CONTEXT_VARIABLE.vllm}=1, ${LONG_CONTEXT_VARIABLE.sglang}=1): the engine boots, positions past the trained length may give wrong output`,
  scope: 'snapshot',
  evidence:
    'Both engines refuse a context length above max_position_embeddings at boot unless overridden; DeepSeek-V4(.1) ' +
    'Flash allows 1,048,576 (recipes/deepseek-v4-flash-eugr-agent 1048576, recipes/dsv41-flash-4x-sglang-aiden16 524288, recipes/docker-images/mia-tp4/.env.example "model max 1,048,576"). ' +
    `vLLM accepts a longer --max-model-len with ${LONG_CONTEXT_VARIABLE.vllm}=1, SGLang a longer --context-length with ` +
    `${LONG_CONTEXT_VARIABLE.sglang}=1.`,
  fix: 'lower the context length to at most max_position_embeddings',
  async check(ctx) {
    const name = ENGINE_FLAGS[ctx.recipe.engine].contextLength;
    const flag = ctx.args.get(name);
    if (!flag || typeof flag.value !== 'string') return [];
    const want = parseTokenCount(flag.value);
    if (want === undefined) return [];
    const config = await ctx.modelConfig();
    if (!config) return { skip: 'no config.json: pass --snapshot DIR (or --cluster with hf_cache)' };
    const max = config.maxPositionEmbeddings;
    if (max === undefined || want <= max) return [];
    const override = LONG_CONTEXT_VARIABLE[ctx.recipe.engine];
    const allowed = ctx.env.get(override);
    if (envTrue(allowed?.value)) {
      return [
        finding(this, {
          severity: 'warn',
          message:
            `${name} ${flag.value} is above the model's max_position_embeddings ${max} (${config.path}); ${override}=${allowed!.value} ` +
            `(${whereEnv(allowed!)}) makes the engine accept it, but positions past ${max} were never trained`,
          where: whereArg(ctx, flag),
          fix: `set ${name} ${max} or less, unless the model is extended (rope scaling) to the longer context`,
        }),
      ];
    }
    return [
      finding(this, {
        message: `${name} ${flag.value} is above the model's max_position_embeddings ${max} (${config.path})`,
        where: whereArg(ctx, flag),
        fix: `set ${name} ${max} or less (or set ${override}=1 when the model is extended to the longer context)`,
      }),
    ];
  },
});

/** `deepseek-ai/DeepSeek-V4.1-Flash` from a Hugging Face cache path (`…/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/…`). */
export function hfModelOfPath(path: string): string | undefined {
  const m = /(?:^|\/)models--([^/]+?)--([^/]+)\/snapshots\//.exec(path);
  return m ? `${m[1]}/${m[2]}` : undefined;
}

/** What a model id or config says it is, for messages. */
const FAMILY_NAME: Record<string, string> = { dsv41: 'DeepSeek-V4.1', dsv4: 'DeepSeek-V4' };

export const snapshotMatches = defineRule({
  id: 'model.snapshot-matches',
  title: 'the snapshot given is the model the recipe serves',
  severity: 'error',
  scope: 'snapshot',
  evidence:
    'The engine serves whatever checkpoint the path holds: a DeepSeek-V4-Flash recipe pointed at a V4.1 snapshot (or ' +
    'the reverse) boots with the wrong tokenizer, layers and Engram tables, or dies loading them ten minutes in. ' +
    "The snapshot's config.json (Engram keys, model_type) and its Hugging Face cache path say what it is.",
  fix: 'point the recipe at the snapshot of its model (or change model = "…" to the model the snapshot holds)',
  async check(ctx) {
    const config = await ctx.modelConfig();
    if (!config) return { skip: 'no config.json: pass --snapshot DIR (or --cluster with hf_cache)' };
    const byName = modelFamily(ctx.recipe);
    const byConfig = configFamily(config.raw);
    const where = whereField(ctx, 'model');
    if (byName !== 'other' && byConfig !== undefined && byName !== byConfig) {
      return [
        finding(this, {
          message: `model = "${ctx.recipe.model}" is a ${FAMILY_NAME[byName]} model, but the snapshot's ${config.path} is ${FAMILY_NAME[byConfig]}`,
          where,
        }),
      ];
    }
    const cached = hfModelOfPath(config.path);
    const id = ctx.recipe.model;
    if (cached !== undefined && /^[^/\s]+\/[^/\s]+$/.test(id) && cached.toLowerCase() !== id.toLowerCase()) {
      return [
        finding(this, {
          message: `model = "${id}", but the snapshot ${config.path} is ${cached}'s (its Hugging Face cache path)`,
          where,
        }),
      ];
    }
    return [];
  },
});
