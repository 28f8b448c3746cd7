// The baseline for `spark inspect`: what a careful script would do in plain TypeScript. Reads
// the index, then every shard's 8-byte length and header sequentially with fs.read, and
// JSON.parses each (no validation beyond that).
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2];
const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
const files = [...new Set(Object.values(index.weight_map as Record<string, string>))].sort();
let tensors = 0;
for (const f of files) {
  const fd = openSync(join(dir, f), 'r');
  const len = Buffer.alloc(8);
  readSync(fd, len, 0, 8, 0);
  const n = Number(len.readBigUInt64LE(0));
  const header = Buffer.alloc(n);
  readSync(fd, header, 0, n, 8);
  closeSync(fd);
  tensors += Object.keys(JSON.parse(header.toString('utf8'))).length;
}
process.stdout.write(JSON.stringify({ shards: files.length, tensors }) + '\n');
