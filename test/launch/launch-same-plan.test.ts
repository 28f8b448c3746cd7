// `spark launch --dry-run` and `spark launch` make one plan (src/launch/prepare.ts). For every
// recipe in recipes/ and the sparkrun seeds, each fake node's docker receives exactly the argv
// the dry run printed for it (and the rm, inspect and logs of the container the dry run named),
// and the launch's JSON plan is the dry run's. The one fact a dry run cannot know, each node's
// detected B12X_ROCE_GID_INDEX, is the only difference allowed. Here one recipe of each stack and
// the overlay's sparkrun seed; the other recipes, and each flag that changes a plan:
// test/long/launch-same-plan-flags.test.ts (npm run test:long).
import { test } from 'node:test';
import { assertSamePlan, bothSides, ONE_OF_EACH, type Case } from '../helpers/same-plan.js';

for (const recipe of ONE_OF_EACH) {
  test(`the launch runs the dry run's plan: ${recipe}`, async () => {
    const c: Case = { recipe, flags: [] };
    const sides = await bothSides(c);
    assertSamePlan(c, sides);
  });
}
