// Malformed and hostile YAML recipes: each is one line on stderr naming the file, exit 2, and
// never a hang (a real process with a deadline, so a parser stuck in a loop fails the test).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { binPath, cli } from '../../helpers/cli.js';
import { tempDir } from '../../helpers/tmp.js';

const HEAD = 'recipe_version: "2"\nruntime: sglang\nmodel: org/model\ncontainer: img:1\n';

/** Nine levels of nine aliases each: 9^9 strings once expanded. */
function aliasBomb(): string {
  const lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
  for (let i = 1; i <= 9; i++)
    lines.push(
      `a${i}: &a${i} [${Array(9)
        .fill(`*a${i - 1}`)
        .join(',')}]`,
    );
  return `${HEAD}metadata:\n  ${lines.join('\n  ')}\n`;
}

const CASES: { name: string; text: () => string; expect: RegExp }[] = [
  {
    name: 'a tab in the indentation',
    text: () => `${HEAD}defaults:\n\ttensor_parallel: 4\n`,
    expect: /:6: invalid YAML: Tabs are not allowed as indentation/,
  },
  {
    name: 'a duplicate key',
    text: () => `${HEAD}model: other/model\n`,
    expect: /:5: invalid YAML: the key model is written twice \(lines 3 and 5\); map keys must be unique: keep one$/,
  },
  {
    name: 'an alias to no anchor',
    text: () => `${HEAD}defaults: *nowhere\n`,
    expect: /:5: invalid YAML: Unresolved alias.*nowhere; define the anchor &nowhere above it/,
  },
  {
    name: 'a billion-laughs alias bomb',
    text: aliasBomb,
    expect: /invalid YAML: Excessive alias count.*write the values out/,
  },
  {
    name: 'a 2 MB YAML file',
    text: () => `${HEAD}metadata:\n  note: "${'x'.repeat(2 << 20)}"\n`,
    expect: /is far larger than a recipe or cluster file/,
  },
  {
    name: 'a 20 MB file',
    text: () => `${HEAD}metadata:\n  note: "${'x'.repeat(20 << 20)}"\n`,
    expect: /is larger than 16\.0 MiB/,
  },
  {
    name: 'two documents',
    text: () => `${HEAD}---\n${HEAD}`,
    expect: /invalid YAML: Source contains multiple documents/,
  },
  { name: 'a list, not a map', text: () => '- model: org/model\n', expect: /a sparkrun recipe is a YAML map/ },
];

const dir = tempDir('spark-yaml-hostile-');

for (const c of CASES) {
  test(`${c.name}: one line, exit 2, at once`, async () => {
    const file = join(dir, `${c.name.replace(/\W+/g, '-')}.yaml`);
    writeFileSync(file, c.text());
    const check = (code: number | null, stderr: string) => {
      assert.equal(code, 2, stderr);
      const lines = stderr.trimEnd().split('\n');
      assert.equal(lines.length, 1, stderr.slice(0, 500));
      assert.ok(lines[0]!.includes(file), lines[0]);
      assert.match(lines[0]!, c.expect);
    };
    // A real process with a deadline: a parser stuck in a loop is killed and fails the test.
    const began = Date.now();
    const r = spawnSync(process.execPath, [binPath, 'preflight', file], { encoding: 'utf8', timeout: 20_000 });
    assert.equal(r.signal, null, `${c.name}: killed after ${Date.now() - began} ms (a hang)`);
    check(r.status, r.stderr);
    const converted = await cli(['recipe', 'convert', file]);
    check(converted.code, converted.stderr);
  });
}
