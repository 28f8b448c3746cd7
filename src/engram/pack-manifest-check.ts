// Sanity of a packed manifest as verify sees it: every key the format names, with values
// consistent with each other and with the layout, and each layer's range equal to what the
// split it claims gives this rank. Returns one line per problem (empty: sane).
import {
  CHECKSUM_ALGORITHM,
  dataFileName,
  HEADER_BYTES,
  layerGeometry,
  PACK_FORMAT,
  PACK_VERSION,
  PAGE_BYTES,
  type PackedLayerEntry,
} from './pack-format.js';
import { splitRange } from './pack-ranges.js';

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function checkLayer(e: unknown, i: number, m: Record<string, unknown>, out: string[]): void {
  const at = `layers[${i}]`;
  if (!isObject(e)) {
    out.push(`${at} is not an object`);
    return;
  }
  for (const k of ['layer', 'rows', 'start', 'end', 'rowBytes', 'stride', 'dataOffset']) {
    if (!isCount(e[k])) out.push(`${at}.${k} must be a non-negative integer, got ${JSON.stringify(e[k])}`);
  }
  for (const k of ['file', 'weightDtype', 'scaleDtype', 'layout']) {
    if (typeof e[k] !== 'string') out.push(`${at}.${k} must be a string`);
  }
  const c = e.checksum;
  if (!isObject(c) || typeof c.algorithm !== 'string' || !isCount(c.chunkRows) || !Array.isArray(c.values)) {
    out.push(`${at}.checksum must be {algorithm, chunkRows, values}`);
    return;
  }
  if (out.length > 0) return;
  const l = e as unknown as PackedLayerEntry;
  const name = `layer ${l.layer}`;
  if (!(l.start <= l.end && l.end <= l.rows)) out.push(`${name}: range [${l.start}, ${l.end}) is not inside its table of ${l.rows} rows`);
  if (l.file !== dataFileName(l.layer, m.rank as number, m.world as number)) {
    out.push(`${name}: file '${l.file}' should be '${dataFileName(l.layer, m.rank as number, m.world as number)}'`);
  }
  if (l.rowBytes === 0 || l.rowBytes % 33 !== 0) out.push(`${name}: rowBytes ${l.rowBytes} is not D + D/32 for a multiple of 32`);
  if (l.stride !== l.rowBytes) out.push(`${name}: stride ${l.stride} differs from rowBytes ${l.rowBytes}`);
  if (l.dataOffset !== HEADER_BYTES) out.push(`${name}: dataOffset ${l.dataOffset} is not ${HEADER_BYTES}`);
  if (l.layout !== 'dense' && l.layout !== 'page') out.push(`${name}: layout '${l.layout}' is neither dense nor page`);
  if (l.layout === 'page' && l.rowBytes > PAGE_BYTES) out.push(`${name}: rows of ${l.rowBytes} bytes do not fit a page`);
  if (l.checksum.algorithm !== CHECKSUM_ALGORITHM) out.push(`${name}: checksum algorithm '${l.checksum.algorithm}' is not ${CHECKSUM_ALGORITHM}`);
  if (l.checksum.chunkRows === 0) out.push(`${name}: checksum.chunkRows is 0`);
  if (out.length > 0) return;
  const g = layerGeometry(l);
  if (l.layout === 'page' && l.checksum.chunkRows % g.rowsPerPage !== 0) {
    out.push(`${name}: checksum.chunkRows ${l.checksum.chunkRows} is not a multiple of the ${g.rowsPerPage} rows per page`);
  }
  if (l.checksum.values.length !== g.chunkCount) {
    out.push(`${name}: ${l.checksum.values.length} checksums for ${g.chunkCount} chunks of ${l.checksum.chunkRows} rows`);
  }
  if (!l.checksum.values.every((v) => typeof v === 'string' && /^[0-9a-f]{8}$/.test(v))) {
    out.push(`${name}: a checksum is not 8 lowercase hex digits`);
  }
  if (m.split === 'floor' || m.split === 'front') {
    const [s, t] = splitRange(m.split, l.rows, m.rank as number, m.world as number);
    if (s !== l.start || t !== l.end) {
      out.push(`${name}: range [${l.start}, ${l.end}) is not rank ${m.rank} of ${m.world} under the ${m.split} split ([${s}, ${t}))`);
    }
  }
}

export function checkManifest(m: unknown): string[] {
  const out: string[] = [];
  if (!isObject(m)) return ['the manifest is not a JSON object'];
  if (m.format !== PACK_FORMAT) return [`format is ${JSON.stringify(m.format)}, not "${PACK_FORMAT}"`];
  if (m.version !== PACK_VERSION) return [`version ${JSON.stringify(m.version)} is not supported (this spark reads version ${PACK_VERSION})`];
  if (!isCount(m.world) || m.world === 0 || !isCount(m.rank) || m.rank >= m.world) {
    out.push(`rank ${JSON.stringify(m.rank)} of world ${JSON.stringify(m.world)} is not a valid rank`);
  }
  if (typeof m.split !== 'string') out.push('split must be a string');
  const src = m.source;
  if (!isObject(src) || typeof src.snapshot !== 'string' || !Array.isArray(src.files)) {
    out.push('source must be {snapshot, files}');
  } else if (!src.files.every((f) => isObject(f) && typeof f.name === 'string' && isCount(f.bytes) && typeof f.mtimeMs === 'number')) {
    out.push('source.files entries must be {name, bytes, mtimeMs}');
  }
  if (!Array.isArray(m.layers) || m.layers.length === 0) out.push('layers must be a non-empty array');
  if (out.length > 0) return out;
  const layers = m.layers as unknown[];
  layers.forEach((e, i) => checkLayer(e, i, m, out));
  const ids = layers.map((e) => (isObject(e) ? e.layer : undefined));
  for (let i = 1; i < ids.length; i++) {
    if (!((ids[i] as number) > (ids[i - 1] as number))) out.push(`layers must be in ascending order of layer without repeats (layer ${ids[i]})`);
  }
  return out;
}
