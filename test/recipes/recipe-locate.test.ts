// Where messages point: each recipe field's line is resolved when the recipe is loaded, and a
// rule's finding names the line of the key in the file, however the file writes it (dotted keys,
// inline tables, arrays of tables, keys quoted, after multi-line strings).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { parseRecipe } from '../../src/recipes/index.js';
import { preflight, write } from '../helpers/preflight.js';
import { tempDir } from '../helpers/tmp.js';

/** 1-based line of the only line of `text` that contains `needle`. */
function lineOf(text: string, needle: string): number {
  const lines = text.split('\n');
  const hits = lines.flatMap((l, i) => (l.includes(needle) ? [i + 1] : []));
  assert.equal(hits.length, 1, `"${needle}" is on ${hits.length} lines`);
  return hits[0]!;
}

const HEAD = `engine = "sglang"
docker_image = "lmsysorg/sglang:dev"
model = "deepseek-ai/DeepSeek-V4.1-Flash"
`;

/** args with multi-line strings that hold text shaped like keys and headers. */
const ARGS = `args = [
  "--context-length", """
port = 1
[[extra_mounts]]
""",
  '''literal
"shm_size" = "1gb"''',
  "--port", "30001",
]
`;

test('recipe.locate: the line of each field, of an args element, of an env key and of a mount', () => {
  const text = `${HEAD}"shm_size" = "32gb"
${ARGS}env.DOTTED = "1"
env."QUOTED.KEY" = "2"
[[extra_mounts]]
host = "/a"
container = "/a"
[[extra_mounts]]
'host' = "/b"
container = "/b"
`;
  const { recipe, diagnostics } = parseRecipe(text, 'r.toml');
  assert.deepEqual(diagnostics, []);
  assert.equal(recipe.locate('engine'), 1);
  assert.equal(recipe.locate('shmSize'), lineOf(text, '"shm_size" = "32gb"'));
  assert.equal(recipe.locate('args'), lineOf(text, 'args = ['));
  assert.equal(recipe.locate('args', 2), lineOf(text, "'''literal"), 'an element starts where its string opens');
  assert.equal(recipe.locate('args', 3), lineOf(text, '"--port"'));
  assert.equal(recipe.locate('args', 99), lineOf(text, 'args = ['), 'an element past the end names the key');
  assert.equal(recipe.locate('env', 'DOTTED'), lineOf(text, 'env.DOTTED'));
  assert.equal(recipe.locate('env', 'QUOTED.KEY'), lineOf(text, '"QUOTED.KEY"'));
  assert.equal(recipe.locate('extraMounts', 1), lineOf(text, "'host'") - 1);
  assert.equal(recipe.extraMounts[1]!.line, recipe.locate('extraMounts', 1));
  assert.equal(recipe.locate('port'), undefined, 'the key text inside a string is not a key');
  assert.equal(recipe.locate('tensorParallelSize'), undefined);
  // The recipe's fields, not its TOML keys: a key name or a renamed field does not compile.
  // @ts-expect-error shm_size is the TOML key; the field is shmSize
  assert.equal(recipe.locate('shm_size'), undefined);
  // @ts-expect-error a string field has no parts
  assert.equal(recipe.locate('shmSize', 0), lineOf(text, '"shm_size" = "32gb"'));
});

test('inline tables: the mount and the env key inside them are where the file writes them', () => {
  const text = `${HEAD}extra_mounts = [
  { host = "/a", container = "/a" },
  { host = "/b",
    container = "/b" },
]
env = { A = "1",
  SPARK_ENGRAM_ROWS = "1:0-5" }
`;
  const { recipe } = parseRecipe(text, 'r.toml');
  assert.equal(recipe.locate('extraMounts', 1), lineOf(text, '{ host = "/b"'));
  assert.equal(recipe.extraMounts[1]!.line, lineOf(text, '{ host = "/b"'));
  assert.equal(recipe.locate('env', 'SPARK_ENGRAM_ROWS'), lineOf(text, 'SPARK_ENGRAM_ROWS'));
});

/** The `where` of each finding of `rule` on recipe `text`, checked on this machine alone. */
async function whereOf(rule: string, text: string): Promise<string[]> {
  const dir = tempDir('spark-locate-');
  const recipe = write(join(dir, 'recipe.toml'), text);
  const report = await preflight({ recipe, local: true, only: [rule], home: dir, sysfs: join(dir, 'sys') });
  return report.findings.filter((f) => f.rule === rule).map((f) => f.where.slice(dir.length + 1));
}

test("a rule's finding names the line of the key: quoted key after multi-line strings", async () => {
  const text = `${HEAD}${ARGS}"shm_size" = "32xb"\n`;
  assert.deepEqual(await whereOf('docker.shm-size', text), [`recipe.toml:${lineOf(text, '"32xb"')}`]);
});

test("a rule's finding names the line of the key: args elements and env keys, dotted, quoted or inline", async () => {
  const dotted = `${HEAD}${ARGS}env.NODE_RANK = "0"\n`;
  assert.deepEqual(await whereOf('args.launcher-owned', dotted), [
    `recipe.toml:${lineOf(dotted, '"--port"')}`,
    `recipe.toml:${lineOf(dotted, 'NODE_RANK')}`,
  ]);
  const table = `${HEAD}${ARGS}[env]\nA = "1"\n"NODE_RANK" = "0"\n`;
  assert.deepEqual((await whereOf('args.launcher-owned', table))[1], `recipe.toml:${lineOf(table, 'NODE_RANK')}`);
  const inline = `${HEAD}env = {\n  A = "1",\n  SPARK_ENGRAM_ROWS = "1:0-5,14:0-5" }\n`;
  assert.deepEqual(await whereOf('engram.rows-grammar', inline), [
    `recipe.toml:${lineOf(inline, 'SPARK_ENGRAM_ROWS')}`,
  ]);
});

test("a rule's finding names the line of the key: the array-of-tables entry it is about", async () => {
  const dir = tempDir('spark-locate-mount-');
  const text = `${HEAD}[[extra_mounts]]
host = "${dir}"
container = "/ok"
[[extra_mounts]] # the missing one
host = "${join(dir, 'missing')}"
container = "/missing"
`;
  assert.deepEqual(await whereOf('mounts.host-path', text), [`recipe.toml:${lineOf(text, '# the missing one')}`]);
});

test("a rule's finding names the line of the key: the parallel shape's field", async () => {
  const text = `${HEAD}required_nodes = 2\n"tensor_parallel_size" = 4\n`;
  assert.deepEqual(await whereOf('parallel.nodes', text), [`recipe.toml:${lineOf(text, 'tensor_parallel_size')}`]);
});
