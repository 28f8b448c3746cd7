// PyTorch allocator settings that break one stack and are fine on another. PyTorch reads them
// from PYTORCH_ALLOC_CONF (the newer name) or PYTORCH_CUDA_ALLOC_CONF (the older one, still
// honoured); which wins when both are set has changed between releases, so both are checked.
import { defineRule, envSourceName, finding, whereEnv } from '../../preflight-api/rule.js';

/** The allocator variables PyTorch reads, newer name first. */
export const ALLOC_CONF_VARS = ['PYTORCH_ALLOC_CONF', 'PYTORCH_CUDA_ALLOC_CONF'] as const;

/** True when an allocator configuration turns expandable_segments on. */
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
    'a scheduler crash when sampling), bisected over five boots (recipes/docker-images/mia-tp4/.env.example). The eugr vLLM DeepSeek-V4 recipe ' +
    'sets it on purpose, so the rule is for this stack only. Newer PyTorch reads the same setting from PYTORCH_ALLOC_CONF.',
  fix: 'set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False (and PYTORCH_ALLOC_CONF likewise, or leave it unset)',
  check(ctx) {
    return ALLOC_CONF_VARS.flatMap((key) => {
      const v = ctx.env.get(key);
      if (!v || !expandableSegmentsOn(v.value)) return [];
      return [
        finding(this, {
          message: `${key}=${v.value} (from ${envSourceName(v)}) gives NaN logits on every prefill over 64 tokens on this stack`,
          where: whereEnv(v),
          fix: `set ${key}=expandable_segments:False`,
        }),
      ];
    });
  },
});
