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
import { binPath, cli } from './cli.js';
import { makeSnapshot } from './synth.js';
import { tempDir } from './tmp.js';

// A hostile output directory for spark pack (test/pack/pack-hostile.test.ts, and every name in
// test/long/pack-hostile-names.test.ts): a link planted at a name a pack creates, renames onto
// or removes. Every run must refuse (exit 3, naming the link) and leave the link's target as it
// was. The names are learned by watching real runs (learn: a finished one, a killed one, a
// forced replacement), so a name added to the packer later is covered too.
const snap = makeSnapshot({ vocab: 4000 });

export function packArgs(out: string, layout: string, extra: string[] = []): string[] {
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
export async function watchNames(out: string, run: () => Promise<unknown>): Promise<Set<string>> {
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
export function killedRun(out: string, layout: string): Promise<void> {
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

export interface Scenario {
  what: string;
  /** Prepares a directory as this scenario starts from. */
  setup(out: string): Promise<void>;
  argv(out: string): string[];
}

export function fresh(layout: string): Scenario {
  return { what: `a new ${layout} pack`, setup: async () => {}, argv: (out) => packArgs(out, layout) };
}

export const killedState = new Map<string, string>();
export function resumed(layout: string): Scenario {
  return {
    what: `a resumed ${layout} pack`,
    async setup(out) {
      cpSync(killedState.get(layout)!, out, { recursive: true });
    },
    argv: (out) => packArgs(out, layout),
  };
}

export const replacing: Scenario = {
  what: 'a sparse pack replacing a dense one (--force)',
  async setup(out) {
    const r = await cli(packArgs(out, 'dense'));
    assert.equal(r.code, 0, r.stderr);
  },
  argv: (out) => packArgs(out, 'sparse', ['--force']),
};

export async function learn(s: Scenario, kill: boolean, layout: string): Promise<Set<string>> {
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
export async function hostile(s: Scenario, name: string): Promise<void> {
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
