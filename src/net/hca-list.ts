// NCCL_IB_HCA syntax, as NCCL parses it: an optional leading '^' (exclude the listed devices),
// then an optional '=' (names are exact, otherwise prefixes), then comma-separated names, each
// with an optional ':port'. Examples: "mlx5_0:1,mlx5_1:1", "=rocep1s0f0", "^mlx5_2", "^=mlx5_3".
export interface HcaItem {
  name: string;
  /** undefined: every port of the device. */
  port?: number;
}

export interface HcaList {
  exclude: boolean;
  exact: boolean;
  items: HcaItem[];
  text: string;
}

// Nothing is trimmed, as in NCCL: "a, b" names " b", which matches no device (and is reported).
export function parseHcaList(text: string): HcaList {
  let rest = text;
  const exclude = rest.startsWith('^');
  if (exclude) rest = rest.slice(1);
  const exact = rest.startsWith('=');
  if (exact) rest = rest.slice(1);
  const items: HcaItem[] = [];
  for (const entry of rest.split(',')) {
    if (entry === '') continue;
    const colon = entry.indexOf(':');
    if (colon < 0) {
      items.push({ name: entry });
      continue;
    }
    const name = entry.slice(0, colon);
    if (name === '') continue; // NCCL skips an entry with no name
    // NCCL reads the port with atoi: digits up to the first non-digit, 0 when none.
    const digits = /^\d*/.exec(entry.slice(colon + 1))![0];
    items.push({ name, port: digits === '' ? 0 : Number(digits) });
  }
  return { exclude, exact, items, text };
}

function matchItem(list: HcaList, item: HcaItem, hca: string, port: number): boolean {
  const nameOk = list.exact ? hca === item.name : hca.startsWith(item.name);
  return nameOk && (item.port === undefined || item.port === port);
}

/** Whether NCCL would use (hca, port) under this list. An empty list matches everything. */
export function hcaListMatches(list: HcaList, hca: string, port: number): boolean {
  const listed = list.items.length === 0 || list.items.some((item) => matchItem(list, item, hca, port));
  return listed !== list.exclude;
}

/** Items of an include list that match no (hca, port) present: named devices that are missing. */
export function unmatchedItems(list: HcaList, present: { hca: string; port: number }[]): HcaItem[] {
  if (list.exclude) return [];
  return list.items.filter((item) => !present.some((p) => matchItem(list, item, p.hca, p.port)));
}

export function formatHcaItem(item: HcaItem): string {
  return item.port === undefined ? item.name : `${item.name}:${item.port}`;
}
