import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'smol-toml';
import { scanToml } from '../src/recipes/toml-scan.js';
import { DSV41, EUGR, PACKED, repoFile } from './helpers/preflight.js';

/** 1-based line of the first line of `text` that matches. */
function lineOf(text: string, re: RegExp): number {
  const i = text.split('\n').findIndex((l) => re.test(l));
  assert.ok(i >= 0, `no line matches ${re}`);
  return i + 1;
}

test('keys, tables and arrays of tables resolve to paths with their lines', () => {
  const src = [
    'a = 1', //                                  1
    'b.c = "x"', //                              2
    '[t]', //                                    3
    'k = true', //                               4
    '"quoted key" = 2', //                       5
    '[[m]]', //                                  6
    'host = "/x"', //                            7
    '[[m]]', //                                  8
    'host = "/y"  # comment', //                 9
    '[m.sub]', //                                10
    'z = 3', //                                  11
    '[nccl."4nodes-switch"]', //                 12
    'NCCL_NET = "IB"', //                        13
  ].join('\n');
  const loc = scanToml(src);
  const lines = Object.fromEntries(loc.keys.map((k) => [k.path, k.line]));
  assert.deepEqual(lines, {
    a: 1,
    'b.c': 2,
    't.k': 4,
    't."quoted key"': 5,
    'm[0].host': 7,
    'm[1].host': 9,
    'm[1].sub.z': 11,
    'nccl.4nodes-switch.NCCL_NET': 13,
  });
  assert.deepEqual(
    loc.headers.map((h) => [h.path, h.line, h.array]),
    [
      ['t', 3, false],
      ['m[0]', 6, true],
      ['m[1]', 8, true],
      ['m[1].sub', 10, false],
      ['nccl.4nodes-switch', 12, false],
    ],
  );
  assert.equal(loc.get('m[1].host')?.table?.path, 'm[1]');
  assert.equal(loc.get('a')?.table, undefined);
});

test('values spanning lines do not hide or invent keys, and array elements get their lines', () => {
  const src = [
    'args = [', //                                       1
    '  "--a", "1",  # x = 2 [not a header]', //          2
    '  # [[fake]]', //                                   3
    '  """', //                                          4
    "'{\"k\": [1, 2]}'\"\"\",", //                       5
    "  '''lit = [''',", //                               6
    '  [1, [2]], {x = 1},', //                           7
    ']', //                                              8
    's = """', //                                        9
    'not_a_key = 1', //                                  10
    '[not.a.header]', //                                 11
    '"""', //                                            12
    'after = "#" # real comment', //                     13
  ].join('\n');
  const parsed = parse(src);
  assert.equal((parsed.args as unknown[]).length, 6);
  const loc = scanToml(src);
  assert.deepEqual(
    loc.keys.map((k) => [k.path, k.line]),
    [
      ['args', 1],
      ['s', 9],
      ['after', 13],
    ],
  );
  assert.deepEqual(loc.headers, []);
  assert.deepEqual(loc.get('args')?.elementLines, [2, 2, 4, 6, 7, 7]);
});

test("the seeds' keys are found on the lines they are written on", () => {
  const dsv41 = repoFile(DSV41);
  const d = scanToml(dsv41);
  assert.equal(d.get('engine')?.line, lineOf(dsv41, /^engine = /));
  assert.equal(d.get('args')?.line, lineOf(dsv41, /^args = \[/));
  assert.equal(d.get('extra_mounts[0].host')?.line, lineOf(dsv41, /^host = /));
  assert.equal(d.get('env.SPARK_ENGRAM_DIR')?.line, lineOf(dsv41, /^SPARK_ENGRAM_DIR/));
  assert.equal(d.get('env.NCCL_MAX_NCHANNELS')?.line, lineOf(dsv41, /^NCCL_MAX_NCHANNELS/));
  assert.equal(d.get('args')?.elementLines?.[0], lineOf(dsv41, /"--trust-remote-code"/));
  assert.equal(d.get('args')?.elementLines?.length, 38);

  const eugr = repoFile(EUGR);
  const e = scanToml(eugr);
  const args = e.get('args')!.elementLines!;
  const values = parse(eugr).args as string[];
  assert.equal(args.length, values.length);
  // Every element starts on the line where the file writes it (the JSON ones open with """).
  const spec = values.indexOf('--speculative-config');
  assert.equal(args[spec], lineOf(eugr, /"--speculative-config"/));
  assert.equal(args[spec + 1], lineOf(eugr, /"--speculative-config"/));
  assert.equal(args[values.indexOf('--max-num-seqs') + 1], lineOf(eugr, /"--max-num-seqs", "6"/));
  assert.equal(e.get('env.VLLM_PCIE_ALLREDUCE_BACKEND')?.line, eugr.split('\n').length);
});

test('every scanned key exists in the parsed document, and every scalar leaf was scanned', () => {
  for (const file of [DSV41, EUGR, PACKED]) {
    const src = repoFile(file);
    const parsed = parse(src) as Record<string, unknown>;
    const loc = scanToml(src);
    const leaves: string[] = [];
    const walk = (v: unknown, path: string) => {
      if (Array.isArray(v) && v.every((x) => typeof x === 'object' && x !== null && !Array.isArray(x))) {
        v.forEach((x, i) => walk(x, `${path}[${i}]`));
      } else if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
        for (const [k, x] of Object.entries(v)) walk(x, path === '' ? k : `${path}.${k}`);
      } else {
        leaves.push(path);
      }
    };
    walk(parsed, '');
    assert.deepEqual(loc.keys.map((k) => k.path).sort(), leaves.sort(), file);
  }
});
