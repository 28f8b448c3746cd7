// RDMA devices, socket interfaces and the RoCE GID index, as this node's sysfs shows them.
// Device lists follow NCCL's syntax (src/net/hca-list.ts): `^` excludes, `=` asks for exact
// names (otherwise a name is a prefix), `name:port` picks a port.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { formatHcaItem, parseHcaList, unmatchedItems, type HcaList } from '../../net/hca-list.js';
import { envValues, type EnvValue } from '../../recipes/index.js';
import { defineRule, finding, whereEnv, whereNode } from '../../preflight-api/rule.js';
import type { PreflightContext } from '../../preflight-api/types.js';

function listDir(path: string): string[] | undefined {
  try {
    return readdirSync(path);
  } catch {
    return undefined;
  }
}

/** Every (device, port) under class/infiniband; undefined when the directory is missing. */
export function presentPorts(sysfs: string): { hca: string; port: number }[] | undefined {
  const root = join(sysfs, 'class', 'infiniband');
  const devices = listDir(root);
  if (!devices) return undefined;
  return devices.flatMap((hca) =>
    (listDir(join(root, hca, 'ports')) ?? []).filter((p) => /^\d+$/.test(p)).map((p) => ({ hca, port: Number(p) })),
  );
}

/** The device list of a variable: NCCL_IB_HCA in NCCL's syntax, B12X_ROCE_HCA as exact names. */
function hcaListOf(key: string, value: string): HcaList {
  return parseHcaList(key === 'NCCL_IB_HCA' || /^[\^=]/.test(value) ? value : `=${value}`);
}

export const hca = defineRule({
  id: 'fabric.hca',
  title: 'the RDMA devices (HCAs) and ports the environment names exist on this node',
  severity: 'error',
  scope: 'local-node',
  evidence:
    'A wrong HCA name makes NCCL fall back to sockets or fail at the first collective (docs/failures.md 8; ' +
    'recipes/dsv41-flash-4x-sglang-aiden16 pins NCCL_IB_HCA and B12X_ROCE_HCA = rocep1s0f0,roceP2p1s0f0).',
  fix: 'use the names in /sys/class/infiniband on this node (ibv_devices lists them)',
  check(ctx) {
    const present = presentPorts(ctx.sysfs);
    const out = [];
    for (const key of ['NCCL_IB_HCA', 'B12X_ROCE_HCA']) {
      const v = ctx.env.get(key);
      if (!v || v.value === '') continue;
      if (present === undefined) {
        const root = join(ctx.sysfs, 'class', 'infiniband');
        out.push(
          finding(this, {
            message: `${key}=${v.value} but ${whereNode(ctx)} has no RDMA devices (${root} is missing)`,
            where: whereEnv(v),
          }),
        );
        continue;
      }
      const missing = unmatchedItems(hcaListOf(key, v.value), present);
      if (missing.length === 0) continue;
      const have = present.map((p) => `${p.hca}:${p.port}`).join(', ') || 'none';
      out.push(
        finding(this, {
          message: `${key}=${v.value}: no device ${missing.map(formatHcaItem).join(', ')} on ${whereNode(ctx)} (present: ${have})`,
          where: whereEnv(v),
        }),
      );
    }
    return out;
  },
});

/** Names in a socket interface list (NCCL_SOCKET_IFNAME syntax) with no interface present. */
export function missingInterfaces(text: string, present: readonly string[], exactByDefault: boolean): string[] {
  let t = text.trim();
  if (t.startsWith('^')) return [];
  const exact = exactByDefault || t.startsWith('=');
  if (t.startsWith('=')) t = t.slice(1);
  return t
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '' && !present.some((p) => (exact ? p === e : p.startsWith(e))));
}

export const socketIfname = defineRule({
  id: 'fabric.socket-ifname',
  title: 'the socket interfaces NCCL and Gloo bootstrap over exist on this node',
  severity: 'error',
  scope: 'local-node',
  evidence:
    'NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME naming an interface the node lacks hangs or fails the rendezvous ' +
    '(docs/failures.md 8; recipes/dsv41-flash-4x-sglang-aiden16: enp1s0f0np0; recipes/docker-images/mia-tp4/.env.example: enP7s7).',
  fix: 'use an interface listed by `ip -br link` on this node',
  check(ctx) {
    const present = listDir(join(ctx.sysfs, 'class', 'net')) ?? [];
    return (['NCCL_SOCKET_IFNAME', 'GLOO_SOCKET_IFNAME'] as const).flatMap((key) => {
      const v = ctx.env.get(key);
      if (!v || v.value.trim() === '') return [];
      const missing = missingInterfaces(v.value, present, key === 'GLOO_SOCKET_IFNAME');
      if (missing.length === 0) return [];
      const have = present.filter((i) => i !== 'lo').sort();
      return [
        finding(this, {
          message: `${key}=${v.value}: no interface ${missing.join(', ')} on ${whereNode(ctx)} (present: ${have.join(', ') || 'none but lo'})`,
          where: whereEnv(v),
          fix:
            have.length > 0
              ? `use one of ${have.join(', ')} (the one on the fabric subnet; \`ip -br addr\` shows them)`
              : 'bring up the fabric interface on this node',
        }),
      ];
    });
  },
});

const GID_VARS = ['NCCL_IB_GID_INDEX', 'B12X_ROCE_GID_INDEX'] as const;

/**
 * The fix for one GID problem: a port that is down or not Ethernet needs the port fixed (no
 * index helps); a pinned index that drifted needs the index that is usable now, or no pin.
 */
function gidFix(problem: string, commonIndexes: readonly number[], pinnedKey?: string): string | undefined {
  if (/: port state is /.test(problem)) {
    return 'bring the port up (check its cable and switch port, then `ip link` and `ibv_devinfo`): NCCL skips a port that is not ACTIVE, whatever the GID index';
  }
  if (/: link layer is /.test(problem)) return 'name a RoCE (Ethernet) port in the HCA list instead';
  if (pinnedKey !== undefined && /pinned GID index/.test(problem)) {
    const drop = `or drop the pin (remove ${pinnedKey}) and let NCCL pick`;
    return commonIndexes.length > 0
      ? `use ${pinnedKey}=${commonIndexes[0]} (usable on every HCA of this node now), ${drop}`
      : `no index is usable on every HCA of this node: restore the ports' IPv4 addresses, ${drop}`;
  }
  return undefined;
}

/** A pinned GID index as NCCL reads it (atoi: an empty or non-numeric value is 0). */
export function pinnedIndex(value: string): { index: number; note?: string } {
  const t = value.trim();
  if (/^\d+$/.test(t)) return { index: Number(t) };
  const digits = /^\d*/.exec(t)![0];
  return {
    index: digits === '' ? 0 : Number(digits),
    note: `'${value}' is read as ${digits === '' ? 0 : Number(digits)}`,
  };
}

function relevant(ctx: PreflightContext): EnvValue | undefined {
  return (
    ctx.env.get('NCCL_IB_HCA') ?? ctx.env.get('B12X_ROCE_HCA') ?? GID_VARS.map((k) => ctx.env.get(k)).find(Boolean)
  );
}

export const gid = defineRule({
  id: 'fabric.gid',
  title: 'a RoCE GID index resolves on every HCA of this node (and a pinned one is valid on all of them)',
  severity: 'error',
  scope: 'local-node',
  evidence:
    'NCCL picks the lowest in-range IPv4 RoCE v2 GID; the index drifts after a reboot, a lost IPv4 leaves only fe80 ' +
    'entries, a pinned index must be valid on every HCA of the node, and an empty value parses as 0 (docs/entrypoint.md, ' +
    'spark gid; recipes/dsv41-flash-4x-sglang-aiden16 shares one B12X_ROCE_GID_INDEX across both HCAs).',
  fix: "restore the port's IPv4 address, or pin NCCL_IB_GID_INDEX / B12X_ROCE_GID_INDEX to the index `spark gid` reports",
  also: 'warn for settings NCCL would ignore or reinterpret (an empty pinned index, an invalid NCCL_IB_ADDR_RANGE)',
  async check(ctx) {
    const anchor = relevant(ctx);
    if (!anchor) return [];
    const { gidPolicy, scanGids } = await import('../../net/gid.js');
    const env = envValues(ctx.env);
    const policy = gidPolicy(env);
    const hcas =
      env.NCCL_IB_HCA ??
      (env.B12X_ROCE_HCA !== undefined ? hcaListOf('B12X_ROCE_HCA', env.B12X_ROCE_HCA).text : undefined);
    const base = { sysfs: ctx.sysfs, policy, ...(hcas !== undefined ? { hcas } : {}) };
    const out = policy.warnings.map((w) => finding(this, { severity: 'warn', message: w, where: whereEnv(anchor) }));
    const pinned = GID_VARS.filter((k) => ctx.env.has(k));
    try {
      if (pinned.length === 0) {
        const report = scanGids(base);
        // Unknown devices are fabric.hca's finding; per-port problems and disagreement are ours.
        const problems = report.problems.filter((p) => !/^HCA '.*' not found/.test(p));
        const oneIndexNeeded = ctx.env.has('B12X_ROCE_HCA');
        for (const p of problems) {
          if (p.startsWith('the HCAs disagree') && !oneIndexNeeded) continue;
          const fix = gidFix(p, report.commonIndexes);
          out.push(
            finding(this, { message: `${p} on ${whereNode(ctx)}`, where: whereEnv(anchor), ...(fix ? { fix } : {}) }),
          );
        }
        return out;
      }
      for (const key of pinned) {
        const v = ctx.env.get(key)!;
        const { index, note } = pinnedIndex(v.value);
        if (note) out.push(finding(this, { severity: 'warn', message: `${key}: ${note}`, where: whereEnv(v) }));
        const report = scanGids({ ...base, checkIndex: index });
        for (const p of report.problems.filter((x) => !/^HCA '.*' not found/.test(x))) {
          const fix = gidFix(p, report.commonIndexes, key);
          out.push(
            finding(this, {
              message: `${key}=${v.value}: ${p} on ${whereNode(ctx)}`,
              where: whereEnv(v),
              ...(fix ? { fix } : {}),
            }),
          );
        }
      }
      return out;
    } catch (err) {
      if ((err as { code?: string }).code === 'E_SYSFS')
        return { skip: `no RDMA devices on this node (see fabric.hca): ${(err as Error).message}` };
      throw err;
    }
  },
});
