// GPU memory fractions on unified memory: on GB10 the 128 GB is both host RAM and GPU memory,
// so what the engine reserves is taken from the OS, page cache and pinned NCCL buffers.
import { formatBytes } from '../../terminal/format.js';
import { defineRule, finding, whereArg, whereField } from '../../preflight-api/rule.js';

/** vLLM: above this the server boots and then dies under traffic. */
export const VLLM_GMU_CEILING = 0.85;
/** vLLM: the ceiling measured safe on the eugr agent stack. */
export const VLLM_GMU_SAFE = 0.78;
/** vLLM's own default when the flag is absent. */
export const VLLM_GMU_DEFAULT = 0.9;
/** SGLang: the highest --mem-fraction-static measured to boot and serve on GB10 (mia-tp4's working value). */
export const SGLANG_MFS_CEILING = 0.95;

/** The memory a GB10 node's GPU sees (of its 128 GB, both host RAM and GPU memory; recipes/deepseek-v4-flash-eugr-agent). */
export const UNIFIED_MEMORY_BYTES = 119.6 * 2 ** 30;

/** vLLM's human-readable integers: `8G` is 8 GiB, `8g` 8 GB, a bare number bytes. */
export function parseVllmBytes(text: string): number | undefined {
  const m = /^(\d+(?:\.\d+)?)([kKmMgGtT]?)$/.exec(text.trim());
  if (!m) return undefined;
  const power = ' kmgt'.indexOf(m[2]!.toLowerCase());
  const base = m[2] === '' ? 1 : m[2] === m[2]!.toUpperCase() ? 1024 : 1000;
  return Number(m[1]) * base ** Math.max(0, power);
}

/**
 * vLLM's --kv-cache-memory-bytes sets the KV cache outright (--gpu-memory-utilization no longer
 * sizes it): weighed against the node's unified memory, with the same ceiling.
 */
function kvCacheFinding(rule: Parameters<typeof finding>[0], ctx: Parameters<typeof whereArg>[0]) {
  const f = ctx.args.get('--kv-cache-memory-bytes');
  if (!f) return undefined;
  const bytes = parseVllmBytes(String(f.value));
  const where = whereArg(ctx, f);
  if (bytes === undefined || bytes <= 0) {
    return finding(rule, {
      message: `--kv-cache-memory-bytes must be a byte count like 24G or 25769803776, got '${String(f.value)}'`,
      where,
    });
  }
  const most = VLLM_GMU_CEILING * UNIFIED_MEMORY_BYTES;
  if (bytes <= most) return undefined;
  return finding(rule, {
    message:
      `--kv-cache-memory-bytes ${String(f.value)} (${formatBytes(bytes)}) is more than ${VLLM_GMU_CEILING} of the node's ` +
      `${formatBytes(UNIFIED_MEMORY_BYTES)} of unified memory (${formatBytes(most)}), before the weights: the server cannot start, or dies under traffic`,
    where,
    fix: `lower it well below ${formatBytes(most)} minus the rank's weights, or drop it and set "--gpu-memory-utilization", "${VLLM_GMU_SAFE}"`,
  });
}

export const utilizationCeiling = defineRule({
  id: 'memory.utilization-ceiling',
  title: 'the GPU memory fraction leaves room for the OS on unified memory',
  severity: 'error',
  also: `warn for a vLLM value above ${VLLM_GMU_SAFE} and at most ${VLLM_GMU_CEILING}; vLLM's --kv-cache-memory-bytes, when given, is weighed instead against ${VLLM_GMU_CEILING} of the node's ${UNIFIED_MEMORY_BYTES / 2 ** 30} GiB of unified memory`,
  scope: 'files',
  evidence:
    '"0.80 boots but dies under traffic"; 0.78 is the safe ceiling on 2× GB10 with weights at ~77.7 of ~119.6 GiB ' +
    "(recipes/deepseek-v4-flash-eugr-agent; docs/failures.md 3: above ~0.78-0.85 boots then dies). SGLang's --mem-fraction-static " +
    'counts differently: 0.95 is the mia-tp4 working value, where rank 0 already has ~0.3 GB left for the OS, ' +
    'and a pinned allocation that pushed the need to 0.9569 left no KV cache at all (recipes/docker-images/mia-tp4/.env.example); above ' +
    `${SGLANG_MFS_CEILING} the host starves (page cache, NCCL buffers, the OS share the same 128 GB).`,
  fix: `vLLM: --gpu-memory-utilization ${VLLM_GMU_SAFE}; SGLang: --mem-fraction-static ${SGLANG_MFS_CEILING} or less`,
  check(ctx) {
    if (ctx.recipe.engine === 'sglang') {
      const f = ctx.args.get('--mem-fraction-static');
      const v = ctx.args.number('--mem-fraction-static');
      if (!f) return [];
      if (v === undefined || v <= 0 || v >= 1) {
        return [
          finding(this, {
            message: `--mem-fraction-static must be a number between 0 and 1, got '${String(f.value)}'`,
            where: whereArg(ctx, f),
          }),
        ];
      }
      if (v <= SGLANG_MFS_CEILING) return [];
      return [
        finding(this, {
          message:
            `--mem-fraction-static ${String(f.value)} is above ${SGLANG_MFS_CEILING}, the most measured to work on unified memory: ` +
            'the OS, page cache and NCCL buffers are left too little of the 128 GB',
          where: whereArg(ctx, f),
          fix: `set "--mem-fraction-static", "${SGLANG_MFS_CEILING}" or less`,
        }),
      ];
    }
    // With --kv-cache-memory-bytes, vLLM sizes the KV cache from it and ignores --gpu-memory-utilization.
    if (ctx.args.has('--kv-cache-memory-bytes')) {
      const kv = kvCacheFinding(this, ctx);
      return kv ? [kv] : [];
    }
    const flag = ctx.args.get('--gpu-memory-utilization');
    const v = flag ? ctx.args.number('--gpu-memory-utilization') : VLLM_GMU_DEFAULT;
    const where = flag ? whereArg(ctx, flag) : whereField(ctx, 'args');
    const fix = `set "--gpu-memory-utilization", "${VLLM_GMU_SAFE}"`;
    if (v === undefined || v <= 0 || v > 1) {
      return [
        finding(this, {
          message: `--gpu-memory-utilization must be a number in (0, 1], got '${String(flag?.value)}'`,
          where,
          fix,
        }),
      ];
    }
    const what = flag
      ? `--gpu-memory-utilization ${String(flag.value)}`
      : `no --gpu-memory-utilization: vLLM's default ${v}`;
    if (v > VLLM_GMU_CEILING) {
      return [
        finding(this, {
          message: `${what} is above the ${VLLM_GMU_CEILING} ceiling of unified memory: the server boots, then dies under traffic`,
          where,
          fix,
        }),
      ];
    }
    if (v > VLLM_GMU_SAFE) {
      return [
        finding(this, {
          severity: 'warn',
          message: `${what} is above ${VLLM_GMU_SAFE}, the value measured to survive traffic (0.80 boots but dies under traffic)`,
          where,
          fix,
        }),
      ];
    }
    return [];
  },
});
