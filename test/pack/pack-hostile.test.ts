import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  watch,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { binPath, cli } from '../helpers/cli.js';
import { makeSnapshot } from '../helpers/synth.js';
import { tempDir } from '../helpers/tmp.js';

// A hostile output directory: a link planted at every name a pack creates, renames onto or
// removes. Every run must refuse (exit 3, naming the link) and leave every link's target as it
// was. The names are not listed by hand: they are learned by watching real runs (a finished one,
// a killed one, a forced replacement), so a name added to the packer later is covered too.
const snap = makeSnapshot({ vocab: 4000 });

function packArgs(out: string, layout: string, extra: string[] = []): string[] {
  return [
    'pack',
    snap.dir,
    '--out',
    out,
    '--rank',
    '0',
    '--world',
    '2',
    '--layout',
    layout,
    '--chunk-rows',
    layout === 'page' ? '1500' : '1000',
    '--sync-every',
    '1',
    '--threads',
    '1',
    ...extra,
  ];
}

/** Every name that appears in `out` while `run` runs (inotify through fs.watch), and after. */
async function watchNames(out: string, run: () => Promise<unknown>): Promise<Set<string>> {
  const names = new Set<string>(readdirSync(out));
  const watcher = watch(out, (_event, name) => {
    if (name) names.add(name.toString());
  });
  try {
    await run();
    await new Promise((r) => setTimeout(r, 50)); // let the last events arrive
  } finally {
    watcher.close();
  }
  for (const n of readdirSync(out)) names.add(n);
  return names;
}

/** A real `spark pack` process, SIGKILLed 30 ms after its first .partial appears. */
function killedRun(out: string, layout: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, ...packArgs(out, layout)], { stdio: 'ignore' });
    const poll = setInterval(() => {
      if (readdirSync(out).some((n) => n.endsWith('.partial'))) {
        clearInterval(poll);
        setTimeout(() => child.kill('SIGKILL'), 30);
      }
    }, 1);
    child.on('error', reject);
    child.on('exit', () => {
      clearInterval(poll);
      resolve();
    });
  });
}

interface Scenario {
  what: string;
  /** Prepares a directory as this scenario starts from. */
  setup(out: string): Promise<void>;
  argv(out: string): string[];
}

function fresh(layout: string): Scenario {
  return { what: `a new ${layout} pack`, setup: async () => {}, argv: (out) => packArgs(out, layout) };
}

const killedState = new Map<string, string>();
function resumed(layout: string): Scenario {
  return {
    what: `a resumed ${layout} pack`,
    async setup(out) {
      cpSync(killedState.get(layout)!, out, { recursive: true });
    },
    argv: (out) => packArgs(out, layout),
  };
}

const replacing: Scenario = {
  what: 'a sparse pack replacing a dense one (--force)',
  async setup(out) {
    const r = await cli(packArgs(out, 'dense'));
    assert.equal(r.code, 0, r.stderr);
  },
  argv: (out) => packArgs(out, 'sparse', ['--force']),
};

async function learn(s: Scenario, kill: boolean, layout: string): Promise<Set<string>> {
  const out = join(tempDir(), 'learn');
  mkdirSync(out);
  await s.setup(out);
  const before = new Set(readdirSync(out));
  const names = await watchNames(out, async () => {
    if (kill) return killedRun(out, layout);
    const r = await cli(s.argv(out));
    assert.equal(r.code, 0, `${s.what}: ${r.stderr}`);
  });
  if (kill) {
    const keep = join(tempDir(), 'killed');
    cpSync(out, keep, { recursive: true });
    killedState.set(layout, keep);
  }
  // Names the scenario started with and the run left alone are not the pack's to write.
  return new Set(
    [...names].filter(
      (n) => !before.has(n) || !existsSync(join(out, n)) || n.endsWith('.journal') || n.endsWith('.partial'),
    ),
  );
}

/** Plants a link at `name`, runs, and checks the refusal and the untouched target. */
async function hostile(s: Scenario, name: string): Promise<void> {
  const out = join(tempDir(), 'hostile');
  mkdirSync(out);
  await s.setup(out);
  const target = join(tempDir(), 'precious');
  writeFileSync(target, 'precious bytes\n');
  rmSync(join(out, name), { force: true });
  symlinkSync(target, join(out, name));
  const r = await cli(s.argv(out));
  const where = `${s.what}, link at ${name}`;
  assert.equal(r.code, 3, `${where}: exit ${r.code}: ${r.stderr}`);
  assert.ok(r.stderr.includes(join(out, name)), `${where}: the error names the link: ${r.stderr}`);
  assert.match(r.stderr, /symbolic link where spark pack writes/, where);
  assert.equal(readFileSync(target, 'utf8'), 'precious bytes\n', `${where}: the target changed`);
  assert.ok(
    lstatSync(join(out, name)).isSymbolicLink() && readlinkSync(join(out, name)) === target,
    `${where}: the link itself was replaced`,
  );
}

test('a link at any name a pack writes is refused (exit 3, naming it) and its target is left untouched', async (t) => {
  const seen: string[] = [];
  for (const layout of ['sparse', 'dense', 'page']) {
    const finished = await learn(fresh(layout), false, layout);
    const killed = await learn(fresh(layout), true, layout);
    // Both manifest names are read (and so refused as links) by every run.
    const names = new Set([...finished, ...killed, 'engram-local.json', 'spark-pack.json']);
    for (const n of names) await hostile(fresh(layout), n);
    for (const n of killed) {
      if (existsSync(join(killedState.get(layout)!, n))) await hostile(resumed(layout), n);
    }
    seen.push(`${layout}: ${[...names].sort().join(' ')}`);
  }
  const replaced = await learn(replacing, false, 'sparse');
  for (const n of replaced) await hostile(replacing, n);
  seen.push(`--force: ${[...replaced].sort().join(' ')}`);
  t.diagnostic(seen.join('\n'));
  // The learning runs saw what the packer is known to create; a run that saw less proves little.
  const all = seen.join(' ');
  for (const n of [
    '.spark-hole-probe',
    'model-00003-of-00003.safetensors.partial',
    'model-00003-of-00003.safetensors.journal',
    'engram-local.json.tmp',
    'model.safetensors.index.json.tmp',
    'engram-l14-r0of2.bin.partial',
    'spark-pack.json.tmp',
    'spark-pack.json.replaced',
  ]) {
    assert.ok(all.includes(n), `no run was seen creating ${n}`);
  }
});
