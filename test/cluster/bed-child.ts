// A process that starts a bed and then ends as the mode says, for bed.test.ts: `exit` (the
// teardown by hand), `throw` (an uncaught error) or `signal` (waits for SIGTERM). Before that it
// leaves work on each node that the bed did not start itself: a container, and a process
// started over ssh that outlives its session. It prints what it started as one JSON line.
import { spawnSync } from 'node:child_process';
import { startBed } from './bed.js';
import { IMAGE, ENGINE } from './image.js';

const mode = process.argv[2];
const bed = await startBed({ nodes: 2 });
for (const node of bed.nodes) {
  bed.docker(node.rank, ['run', '-d', '--name', 'left-behind', '--network', 'host', IMAGE, ENGINE]);
  const ssh = spawnSync(
    bed.env.SPARK_SSH!,
    ['-o', 'BatchMode=yes', '--', node.addr, 'nohup sleep 1000 >/dev/null 2>&1 &'],
    { env: bed.env, timeout: 30_000 },
  );
  if (ssh.status !== 0) throw new Error(`ssh to node ${node.rank} failed: ${ssh.stderr}`);
}
const started = {
  dir: bed.dir,
  bridge: bed.bridge,
  netns: bed.nodes.map((n) => n.netns),
  pids: bed.nodes.flatMap((n) => [n.holder, n.daemons.sshd, n.daemons.dockerd]),
  running: bed.nodes.map((n) => bed.containers(n.rank).get('left-behind')?.state),
};
process.stdout.write(JSON.stringify(started) + '\n');
if (mode === 'exit') {
  process.stdout.write(JSON.stringify(bed.teardown()) + '\n');
} else if (mode === 'throw') {
  throw new Error('a test failed');
} else {
  setInterval(() => {}, 1000);
}
