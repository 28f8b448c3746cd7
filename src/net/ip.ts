// IPv4/IPv6 text <-> 16-byte GIDs, and CIDR ranges as NCCL_IB_ADDR_RANGE uses them.
export type AddrFamily = 'AF_INET' | 'AF_INET6';

/** A parsed CIDR. For AF_INET, `bytes` holds the 4 address bytes; for AF_INET6, 16. */
export interface Cidr {
  family: AddrFamily;
  bytes: Uint8Array;
  prefix: number;
  text: string;
}

/** Dotted-quad IPv4 into 4 bytes, or undefined. */
export function parseIpv4(text: string): Uint8Array | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    // No leading zeros: inet_pton (and so NCCL) rejects them.
    if (!/^(0|[1-9]\d{0,2})$/.test(p) || Number(p) > 255) return undefined;
    out[i] = Number(p);
  }
  return out;
}

/** IPv6 text (with '::' and an optional dotted-quad tail) into 16 bytes, or undefined. */
export function parseIpv6(text: string): Uint8Array | undefined {
  let head = text;
  let tail4: Uint8Array | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.') && lastColon >= 0) {
    tail4 = parseIpv4(text.slice(lastColon + 1));
    if (!tail4) return undefined;
    head = text.slice(0, lastColon + 1) + '0:0';
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const group = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = group(halves[0]!);
  const right = halves.length === 2 ? group(halves[1]!) : [];
  if (!left || !right) return undefined;
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const words = [...left, ...new Array<number>(missing).fill(0), ...right];
  const out = new Uint8Array(16);
  words.forEach((w, i) => {
    out[2 * i] = w >> 8;
    out[2 * i + 1] = w & 0xff;
  });
  if (tail4) out.set(tail4, 12);
  return out;
}

/** NCCL's rule: IPv4-mapped (::ffff:a.b.c.d, or the ff0e::ffff:a.b.c.d multicast form) is AF_INET. */
export function gidFamily(gid: Uint8Array): AddrFamily {
  const zero = (from: number, to: number): boolean => gid.subarray(from, to).every((b) => b === 0);
  const mappedTail = zero(4, 10) && gid[10] === 0xff && gid[11] === 0xff;
  const mapped = zero(0, 4) && mappedTail;
  const mappedMulticast = gid[0] === 0xff && gid[1] === 0x0e && zero(2, 4) && mappedTail;
  return mapped || mappedMulticast ? 'AF_INET' : 'AF_INET6';
}

export const isZeroGid = (gid: Uint8Array): boolean => gid.every((b) => b === 0);

/** fe80::/64 (the first 8 bytes fe80:0:0:0), which NCCL never picks. */
export const isLinkLocalGid = (gid: Uint8Array): boolean =>
  gid[0] === 0xfe && gid[1] === 0x80 && gid.subarray(2, 8).every((b) => b === 0);

/** The address a GID carries: dotted quad for IPv4-mapped entries, compressed IPv6 otherwise. */
export function gidAddress(gid: Uint8Array): string {
  if (gidFamily(gid) === 'AF_INET') return Array.from(gid.subarray(12)).join('.');
  const words = Array.from({ length: 8 }, (_, i) => (gid[2 * i]! << 8) | gid[2 * i + 1]!);
  // Compress the longest run of two or more zero words, as inet_ntop does.
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j === i ? i + 1 : j;
  }
  const hex = words.map((w) => w.toString(16));
  if (best < 0) return hex.join(':');
  return `${hex.slice(0, best).join(':')}::${hex.slice(best + bestLen).join(':')}`;
}

/** `a.b.c.d/len` or `ipv6/len`; undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const addr = text.slice(0, slash);
  const len = text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(len)) return undefined;
  const prefix = Number(len);
  const v4 = parseIpv4(addr);
  if (v4) return prefix <= 32 ? { family: 'AF_INET', bytes: v4, prefix, text } : undefined;
  const v6 = parseIpv6(addr);
  if (v6) return prefix <= 128 ? { family: 'AF_INET6', bytes: v6, prefix, text } : undefined;
  return undefined;
}

/** Whether the GID's address lies in the range: IPv4 ranges compare the GID's last 4 bytes. */
export function gidInRange(gid: Uint8Array, range: Cidr): boolean {
  const addr = range.family === 'AF_INET' ? gid.subarray(12) : gid;
  let bits = range.prefix;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((addr[i]! & mask) !== (range.bytes[i]! & mask)) return false;
  }
  return true;
}
