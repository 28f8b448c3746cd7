// Readers for the text a node's tools print: nvidia-smi's banner, /proc/net/route, the
// listening sockets of /proc/net/tcp{,6}, and `ip -o addr` / `hostname -I`.
import { isIP } from 'node:net';
import type { RouteFact } from '../../preflight-api/node-facts.js';

/** Driver and CUDA versions from nvidia-smi's banner ("Driver Version: 580.95.05   CUDA Version: 13.0"). */
export function parseNvidiaSmi(text: string): { driver?: string; cuda?: string } {
  const driver = /Driver Version:\s*([0-9][\w.-]*)/.exec(text)?.[1];
  const cuda = /CUDA Version:\s*([0-9][\w.-]*)/.exec(text)?.[1];
  return { ...(driver ? { driver } : {}), ...(cuda ? { cuda } : {}) };
}

/** A little-endian hex IPv4 of /proc/net/route (`0102A8C0`) as dotted text. */
function procIpv4(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return undefined;
  const n = parseInt(hex, 16);
  return [n & 0xff, (n >>> 8) & 0xff, (n >>> 16) & 0xff, n >>> 24].join('.');
}

function prefixOfMask(mask: string): number | undefined {
  const m = procIpv4(mask);
  if (m === undefined) return undefined;
  const bits = m
    .split('.')
    .map((b) => Number(b).toString(2).padStart(8, '0'))
    .join('');
  return /^1*0*$/.test(bits) ? (bits.indexOf('0') < 0 ? 32 : bits.indexOf('0')) : undefined;
}

/** The IPv4 routing table of /proc/net/route (header line first). */
export function parseRoutes(text: string): RouteFact[] {
  const out: RouteFact[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 8) continue;
    const destination = procIpv4(f[1]!);
    const gateway = procIpv4(f[2]!);
    const prefix = prefixOfMask(f[7]!);
    const up = (parseInt(f[3]!, 16) & 1) === 1;
    if (destination === undefined || gateway === undefined || prefix === undefined || !up) continue;
    out.push({ iface: f[0]!, destination, gateway, prefix });
  }
  return out;
}

/** Ports with a listening TCP socket, from /proc/net/tcp and tcp6 (state 0A). */
export function parseListeners(text: string): Set<number> {
  const out = new Set<number>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || f[3] !== '0A') continue;
    const port = /:([0-9A-Fa-f]{4})$/.exec(f[1]!)?.[1];
    if (port) out.add(parseInt(port, 16));
  }
  return out;
}

/** Addresses in `ip -o addr show` lines (`inet 10.0.0.2/24`) or `hostname -I` output. */
export function parseAddresses(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/\binet6?\s+([0-9A-Fa-f:.]+)\//g)) found.add(m[1]!);
  if (found.size === 0) for (const w of text.split(/\s+/)) if (isIP(w) !== 0) found.add(w);
  return [...found];
}
