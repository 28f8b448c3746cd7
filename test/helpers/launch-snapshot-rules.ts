// A DSV4.1 model on four fake nodes, for the launch's snapshot rules
// (test/launch/launch-snapshot-rules.test.ts and test/long/launch-snapshot-rules-refs.test.ts).
import type { FakeCall } from './fake-node.js';

export const MODEL = 'deepseek-ai/DeepSeek-V4.1-Flash';
export const MAIN = 'c'.repeat(40);
export const HOSTS = ['k1', 'k2', 'k3', 'k4'];
export const FABRIC = ['10.66.0.1', '10.66.0.2', '10.66.0.3', '10.66.0.4'];
export const RUN = ['--interval', '0.05', '--timeout', '20', '--force', '--json'];

export const dockerRuns = (calls: FakeCall[]) => calls.filter((c) => c.prog === 'docker' && c.argv[0] === 'run');
export const errorOf = (stderr: string) =>
  (JSON.parse(stderr.trim().split('\n').at(-1)!) as { error: { code: string; message: string } }).error;
