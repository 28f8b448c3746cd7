// `spark launch` runs the plan `spark launch --dry-run` printed (test/launch/launch-same-plan.test.ts)
// for the recipes npm test does not launch, and under each flag that changes a plan, on the two
// recipes those flags matter to: a long trial (npm run test:long), launches on fake nodes, each
// with its preflight over ssh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertSamePlan, bothSides, ONE_OF_EACH, RECIPES, STABLE, type Case } from '../helpers/same-plan.js';

for (const recipe of RECIPES.filter((r) => !ONE_OF_EACH.includes(r))) {
  test(`the launch runs the dry run's plan: ${recipe}`, async () => {
    const c: Case = { recipe, flags: [] };
    assertSamePlan(c, await bothSides(c));
  });
}

test("the launch runs the dry run's plan with --cpu-only, --name, --revision <ref>, --no-detect-gid, an idle node and ~ in hf_cache", async () => {
  const variants: Case[] = [];
  for (const recipe of RECIPES.filter((r) => /aiden16|eugr/.test(r))) {
    variants.push(
      { recipe, flags: ['--cpu-only', '--name', 'smoke.1', '--no-detect-gid'], idle: 1 },
      { recipe, flags: ['--revision', 'stable'], tildeCache: true },
    );
  }
  for (const c of variants) {
    const sides = await bothSides(c);
    assertSamePlan(c, sides);
    if (c.flags.includes('--revision'))
      assert.deepEqual([sides.run.model.revision, sides.run.model.from], [STABLE, 'refs/stable']);
    if (c.flags.includes('--cpu-only')) assert.ok(!sides.run.nodes[0]!.argv.includes('--gpus'));
  }
});
