// The overlay's part of preflight: the directory it serves from (SPARK_ENGRAM_DIR, which it
// reads in the container) and the ranges each rank reads (SPARK_ENGRAM_ROWS, in its grammar,
// tiling each table, from somewhere on every rank). The rules are in this room because each
// judges what the overlay does with those variables (docs/serving-stacks.md, stack A).
import { defineRule, finding, whereEnv, whereNode } from '../../preflight-api/rule.js';
import { dirKind, engramDirOnNode, underHfCache } from '../../preflight-api/node-paths.js';
import type { StackPreflight } from '../../preflight-api/types.js';
import { shJoin } from '../../remote/shell.js';
import { rangesSource, rangesTile } from './ranges-rules.js';
import { rowsGrammar } from './rows-grammar.js';

export const engramDir = defineRule({
  id: 'snapshot.engram-dir',
  title: 'SPARK_ENGRAM_DIR is mounted into the container and exists on the node',
  families: ['dsv41'],
  severity: 'error',
  scope: 'local-node',
  evidence:
    'SPARK_ENGRAM_DIR is a container path: the launcher mounts hf_cache at /root/.cache/huggingface and each ' +
    'extra_mount at its container path (recipes/dsv41-flash-4x-sglang-aiden16); a path under no mount, or missing on the node, fails at boot.',
  fix: 'mount the directory (extra_mounts or the cluster hf_cache) and make sure it exists on every node',
  check(ctx) {
    const e = engramDirOnNode(ctx);
    if (!e) return [];
    const v = e.value;
    if (!e.mapped) {
      if (underHfCache(v.value) && !ctx.cluster?.hfCache) {
        return {
          skip: `${v.value} is under the Hugging Face cache: pass --cluster (with hf_cache) to map it to this node`,
        };
      }
      return [
        finding(this, {
          message: `SPARK_ENGRAM_DIR=${v.value} is under no mount (extra_mounts, hf_cache): the container cannot see it`,
          where: whereEnv(v),
        }),
      ];
    }
    const host = e.mapped.host;
    const via =
      e.mapped.via.kind === 'hf_cache' ? `hf_cache ${e.mapped.via.hfCache}` : `the mount of ${e.mapped.via.mount.host}`;
    const kind = dirKind(ctx, host);
    if (kind === 'missing') {
      const pack = e.mapped.via.kind === 'extra_mount';
      return [
        finding(this, {
          message: `SPARK_ENGRAM_DIR=${v.value} is ${host} on ${whereNode(ctx)} (through ${via}), which does not exist`,
          where: whereEnv(v),
          fix: pack
            ? `write this rank's pack there: spark pack <snapshot> ${shJoin(['--out', host])} --rank R --world ${ctx.world}`
            : 'download the snapshot into the Hugging Face cache, or fix the revision in the path',
        }),
      ];
    }
    if (kind === 'other') {
      return [
        finding(this, {
          message: `${host} (SPARK_ENGRAM_DIR=${v.value}) on ${whereNode(ctx)} is neither a snapshot (no model.safetensors.index.json) nor a pack (no engram-local.json)`,
          where: whereEnv(v),
          fix: `finish the pack there (spark pack <snapshot> ${shJoin(['--out', host])} --rank R --world ${ctx.world}) or point SPARK_ENGRAM_DIR at the snapshot`,
        }),
      ];
    }
    return [];
  },
});

/** The overlay's rules: its variables among the recipe's, what each node serves after the snapshot's. */
export const overlayPreflight: StackPreflight = {
  rules: [
    { after: 'args.launcher-owned', rules: [rowsGrammar, rangesTile] },
    { after: 'snapshot.engram-tables', rules: [engramDir, rangesSource] },
  ],
};
