import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parse } from 'smol-toml';
import { formatPath, tomlPositions, type TomlPosition } from '../../src/recipes/toml-positions.js';
import { DSV41, EUGR, PACKED, repoFile } from '../helpers/preflight.js';

/** 1-based line of the first line of `text` that matches. */
function lineOf(text: string, re: RegExp): number {
  const i = text.split('\n').findIndex((l) => re.test(l));
  assert.ok(i >= 0, `no line matches ${re}`);
  return i + 1;
}

/** Every position below `at` as `path line`, depth first (keys, then array elements). */
function flatten(at: TomlPosition, path: (string | number)[] = []): string[] {
  return [
    ...[...at.keys].flatMap(([k, p]) => [`${formatPath([...path, k])} ${p.line}`, ...flatten(p, [...path, k])]),
    ...at.items.flatMap((p, i) => [`${formatPath([...path, i])} ${p.line}`, ...flatten(p, [...path, i])]),
  ];
}

test('keys, dotted keys, quoted keys, tables and arrays of tables: each at the line that wrote it', () => {
  const src = `a = 1
b.c = "x"
[t]
k = true
"quoted key" = 2
'lit.eral' = 3
[[m]]
host = "/x"
[[m]]
host = "/y"  # comment
[m.sub]
z = 3
[nccl."4nodes-switch"]
NCCL_NET = "IB"
[p.q]
r = 1
[p]
s = 2
`;
  parse(src); // the scanner runs only on text smol-toml accepts
  const at = tomlPositions(src);
  assert.deepEqual(flatten(at.root), [
    'a 1',
    'b 2',
    'b.c 2',
    't 3',
    't.k 4',
    't."quoted key" 5',
    't."lit.eral" 6',
    'm 7',
    'm[0] 7',
    'm[0].host 8',
    'm[1] 9',
    'm[1].host 10',
    'm[1].sub 11',
    'm[1].sub.z 12',
    'nccl 13',
    'nccl.4nodes-switch 13',
    'nccl.4nodes-switch.NCCL_NET 14',
    'p 17', // [p] after [p.q] is where p is defined
    'p.q 15',
    'p.q.r 16',
    'p.s 18',
  ]);
  assert.deepEqual(
    at.headers.map((h) => [formatPath(h.path), h.line, h.array, h.keys.map((k) => `${k.key.join('|')}@${k.line}`)]),
    [
      ['t', 3, false, ['k@4', 'quoted key@5', 'lit.eral@6']],
      ['m[0]', 7, true, ['host@8']],
      ['m[1]', 9, true, ['host@10']],
      ['m[1].sub', 11, false, ['z@12']],
      ['nccl.4nodes-switch', 13, false, ['NCCL_NET@14']],
      ['p.q', 15, false, ['r@16']],
      ['p', 17, false, ['s@18']],
    ],
  );
  // A file saved with CRLF line endings has its keys on the same lines.
  assert.deepEqual(flatten(tomlPositions(src.replaceAll('\n', '\r\n')).root), flatten(at.root));
});

test('strings, arrays and inline tables spanning lines: no key hidden or invented, elements and inner keys at their lines', () => {
  const src = `args = [
  "--a", "1",  # x = 2 [not a header]
  # [[fake]]
  """
'{"k": [1, 2]}'""",
  '''lit = [''',
  [1, [2]], {x = 1},
]
s = """
not_a_key = 1
[not.a.header]
"""
after = "#" # real comment
env = { A = "1", "B.C" = '2',
  # TOML 1.1: newlines and comments inside an inline table
  D.E = 3 }
mounts = [
  { host = "/h", container = "/c" },
  {
    host = "/h2" },
]
when = 1979-05-27 07:32:00Z
`;
  const parsed = parse(src);
  assert.equal((parsed.args as unknown[]).length, 6);
  const at = tomlPositions(src);
  assert.deepEqual(
    flatten(at.root).sort(),
    [
      'args 1',
      's 9',
      'after 13',
      'env 14',
      'env.A 14',
      'env."B.C" 14',
      'env.D 16',
      'env.D.E 16',
      'mounts 17',
      'when 22',
      'args[0] 2',
      'args[1] 2',
      'args[2] 4',
      'args[3] 6',
      'args[4] 7',
      'args[4][0] 7',
      'args[4][1] 7',
      'args[4][1][0] 7',
      'args[5] 7',
      'args[5].x 7',
      'mounts[0] 18',
      'mounts[0].host 18',
      'mounts[0].container 18',
      'mounts[1] 19',
      'mounts[1].host 20',
    ].sort(),
  );
  assert.deepEqual(at.headers, []);
});

test("the seeds' keys and args elements are found on the lines they are written on", () => {
  const dsv41 = repoFile(DSV41);
  const d = tomlPositions(dsv41).root;
  assert.equal(d.keys.get('engine')?.line, lineOf(dsv41, /^engine = /));
  assert.equal(d.keys.get('args')?.line, lineOf(dsv41, /^args = \[/));
  assert.equal(d.keys.get('extra_mounts')?.items[0]?.keys.get('host')?.line, lineOf(dsv41, /^host = /));
  assert.equal(d.keys.get('env')?.keys.get('SPARK_ENGRAM_DIR')?.line, lineOf(dsv41, /^SPARK_ENGRAM_DIR/));
  assert.equal(d.keys.get('env')?.keys.get('NCCL_MAX_NCHANNELS')?.line, lineOf(dsv41, /^NCCL_MAX_NCHANNELS/));
  assert.equal(d.keys.get('args')?.items[0]?.line, lineOf(dsv41, /"--trust-remote-code"/));
  assert.equal(d.keys.get('args')?.items.length, 38);

  const eugr = repoFile(EUGR);
  const e = tomlPositions(eugr).root;
  const args = e.keys.get('args')!.items.map((p) => p.line);
  const values = parse(eugr).args as string[];
  assert.equal(args.length, values.length);
  // Every element starts on the line where the file writes it (the JSON ones open with """).
  const spec = values.indexOf('--speculative-config');
  assert.equal(args[spec], lineOf(eugr, /"--speculative-config"/));
  assert.equal(args[spec + 1], lineOf(eugr, /"--speculative-config"/));
  assert.equal(args[values.indexOf('--max-num-seqs') + 1], lineOf(eugr, /"--max-num-seqs", "6"/));
  assert.equal(e.keys.get('env')?.keys.get('VLLM_PCIE_ALLREDUCE_BACKEND')?.line, eugr.split('\n').length);
});

test('the positions and the parsed document have the same shape: every key and element, no more', () => {
  // The parsed value's shape as the same `path` strings flatten() lists (scalars have no children).
  const shape = (v: unknown, path: (string | number)[] = []): string[] => {
    const inner: [string | number, unknown][] = Array.isArray(v)
      ? v.map((x, i) => [i, x])
      : typeof v === 'object' && v !== null && !(v instanceof Date)
        ? Object.entries(v)
        : [];
    const keys = inner.filter(([k]) => typeof k === 'string');
    const items = inner.filter(([k]) => typeof k === 'number');
    return [...keys, ...items].flatMap(([k, x]) => [formatPath([...path, k]), ...shape(x, [...path, k])]);
  };
  for (const file of [DSV41, EUGR, PACKED]) {
    const src = repoFile(file);
    const written = flatten(tomlPositions(src).root).map((e) => e.slice(0, e.lastIndexOf(' ')));
    assert.deepEqual(written.sort(), shape(parse(src)).sort(), file);
  }
});

test('no text stalls the pass: it always ends, even on text smol-toml would refuse', () => {
  for (const src of [
    'a = [',
    'a = {',
    '[[',
    'x = """',
    '= 1',
    'a = [1 2]',
    'a = {b = 1 c = 2}',
    '\r\n\r\n',
    '"unterminated = 1',
  ]) {
    const at = tomlPositions(src);
    assert.ok(at.root.keys instanceof Map, src);
  }
});
