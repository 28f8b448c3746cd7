// Where the Mia stack's packs are on a node: the directory its container reads them from
// (DSV41_PACKED_DIR), as a host directory, for preflight to list on each node.
import { join, posix } from 'node:path';
import { hostPath, type EnvValue } from '../../recipes/index.js';
import type { PreflightContext } from '../../preflight-api/types.js';
import { MIA_PACKED_VAR } from './room.js';
/** Where the Mia stack's container sees its packs, and where the mia-tp4 `.env`'s start.sh mounts ENGRAM_DIR. */
const MIA_MOUNT = '/engram';

export interface MiaPackDir {
  value: EnvValue;
  /** The host directory on the node; undefined when no mount brings DSV41_PACKED_DIR in. */
  host?: string;
  /** How the host directory was found, for messages. */
  from: string;
}

/**
 * DSV41_PACKED_DIR and its host directory on the node: --pack-dir, else through one of the
 * recipe's mounts, else through ENGRAM_DIR, which the Mia stack's own launcher mounts at /engram.
 */
export function miaPackDir(ctx: PreflightContext): MiaPackDir | undefined {
  const value = ctx.env.get(MIA_PACKED_VAR);
  if (!value) return undefined;
  if (ctx.packDir !== undefined) return { value, host: ctx.packDir, from: '--pack-dir' };
  const mapped = ctx.toHost(value.value);
  if (mapped)
    return { value, host: mapped.host, from: `${MIA_PACKED_VAR}=${value.value} through the mount of ${mapped.host}` };
  const engram = ctx.env.get('ENGRAM_DIR');
  const inside = posix.relative(MIA_MOUNT, posix.normalize(value.value));
  if (engram && engram.value !== '' && !inside.startsWith('..') && !posix.isAbsolute(inside)) {
    const host = join(hostPath(engram.value, ctx.home, ctx.cwd), inside);
    return {
      value,
      host,
      from: `ENGRAM_DIR=${engram.value} (${engram.file}${engram.line !== undefined ? `:${engram.line}` : ''}), mounted at ${MIA_MOUNT}`,
    };
  }
  return { value, from: `${MIA_PACKED_VAR}=${value.value}` };
}
