// A launch's snapshot rules, beside test/launch/launch-snapshot-rules.test.ts: a ref that holds
// no commit stops the dry run and the launch alike.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cli } from '../helpers/cli.js';
import { fakeNodes } from '../helpers/fake-node.js';
import { PACKED, hfCacheWith, writeCluster } from '../helpers/launch-files.js';
import { dockerRuns, errorOf, FABRIC, HOSTS, MAIN, MODEL, RUN } from '../helpers/launch-snapshot-rules.js';

test('a ref that holds no commit stops the dry run and the launch alike (exit 2, nothing started)', async () => {
  const fake = fakeNodes();
  const env = fake.env();
  const cache = hfCacheWith(MODEL, MAIN, { main: 'not-a-hash' });
  const cluster = writeCluster({ name: 'badref', hosts: HOSTS, fabric: FABRIC, hfCache: cache });
  const dry = await cli(['launch', PACKED, '--cluster', cluster, '--dry-run', '--json'], env);
  const run = await cli(['launch', PACKED, '--cluster', cluster, ...RUN], env);
  for (const r of [dry, run]) {
    assert.equal(r.code, 2, r.stderr);
    assert.equal(errorOf(r.stderr).code, 'E_SNAPSHOT');
    assert.match(errorOf(r.stderr).message, /refs\/main holds "not-a-hash", not a commit hash/);
  }
  assert.equal(dockerRuns(fake.calls()).length, 0);
});
