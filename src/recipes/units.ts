// Sizes as docker writes them (`--shm-size 32gb`): binary units, case-insensitive, optional
// 'b' / 'ib' suffix, as in docker's RAMInBytes.

const UNITS: Record<string, number> = { '': 1, k: 2 ** 10, m: 2 ** 20, g: 2 ** 30, t: 2 ** 40, p: 2 ** 50 };

/** Bytes of a docker size like `32gb`, `16g`, `512m`, `1GiB` or `1048576`; undefined if malformed. */
export function parseDockerSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s?([kmgtp]?)(?:i?b)?\s*$/i.exec(text);
  if (!m) return undefined;
  const bytes = Number(m[1]) * UNITS[m[2]!.toLowerCase()]!;
  return Number.isFinite(bytes) ? Math.floor(bytes) : undefined;
}
