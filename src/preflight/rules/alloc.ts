// PyTorch allocator settings that break one stack and are fine on another.
import { defineRule, envSourceName, finding, whereEnv } from '../rule.js';

/** True when PYTORCH_CUDA_ALLOC_CONF turns expandable_segments on. */
export function expandableSegmentsOn(conf: string): boolean {
  return conf
    .split(',')
    .map((kv) => kv.split(':').map((s) => s.trim().toLowerCase()))
    .some(([k, v]) => k === 'expandable_segments' && (v === 'true' || v === '1'));
}

export const expandableSegments = defineRule({
  id: 'alloc.expandable-segments',
  title: 'no expandable_segments:True on the SGLang DeepSeek-V4.1 stack',
  engines: ['sglang'],
  families: ['dsv41'],
  severity: 'error',
  scope: 'files',
  evidence:
    'With expandable_segments:True every prefill of more than 64 query tokens returns NaN logits (garbage text, then ' +
    'a scheduler crash when sampling), bisected over five boots (seed: mia-tp4 env). The eugr vLLM DeepSeek-V4 recipe ' +
    'sets it on purpose, so the rule is for this stack only.',
  fix: 'set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False',
  check(ctx) {
    const v = ctx.env.get('PYTORCH_CUDA_ALLOC_CONF');
    if (!v || !expandableSegmentsOn(v.value)) return [];
    return [
      finding(this, {
        message: `PYTORCH_CUDA_ALLOC_CONF=${v.value} (from ${envSourceName(v)}) gives NaN logits on every prefill over 64 tokens on this stack`,
        where: whereEnv(v),
      }),
    ];
  },
});
