// Preflight judges the container the launch starts. For each setting both look at (/dev/shm and
// the IPC namespace, each mount and whether docker must find its source, the program the
// entrypoint runs, privileges, the variables the launcher sets per node), a pair of recipes that
// differ in that setting alone. For each recipe the launch plan (prepareLaunch, as --dry-run
// makes it) gives each node's `docker run` argv; what each container rule must say is derived
// from node 0's argv alone (and what is on this machine's disk); preflight on this machine as
// node 0 must say exactly that; and within each pair the verdict flips.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { planDryRun } from '../../src/launch/index.js';
import { runPreflight } from '../../src/preflight/index.js';
import type { Finding } from '../../src/preflight-api/types.js';
import { parseDockerSize } from '../../src/recipes/index.js';
import { edit, quietIo, world, write, type World } from '../helpers/preflight.js';
import { seedYaml } from '../helpers/sparkrun.js';
import { tempDir } from '../helpers/tmp.js';

/** The rules that judge the container's settings. */
const CONTAINER_RULES = [
  'docker.shm-size',
  'mounts.host-path',
  'mounts.file-is-directory',
  'sparkrun.not-run',
  'args.launcher-owned',
];

interface Said {
  rule: string;
  severity: 'error' | 'warn';
  /** Text the finding's message holds. */
  says: string;
}

/** What a recipe writes for the settings docker's argv cannot show by itself. */
interface Asks {
  privileged?: boolean;
  ipc?: string;
  /** Variables the recipe's environment sets that the launcher sets per node. */
  launcherEnv?: Record<string, string>;
}

interface DockerRun {
  /** Every option before the image, as (flag, value): each of the plan's flags takes one. */
  options: [string, string][];
  /** The words after the image. */
  command: string[];
}

function dockerRun(argv: readonly string[], image: string): DockerRun {
  assert.deepEqual(argv.slice(1, 4), ['run', '-d', '--name']);
  const options: [string, string][] = [];
  let i = 5;
  for (; argv[i] !== image; i += 2) {
    assert.ok(i < argv.length && argv[i]!.startsWith('-'), `not a flag before the image: ${argv[i]}`);
    options.push([argv[i]!, argv[i + 1]!]);
  }
  return { options, command: argv.slice(i + 1) };
}

const valuesOf = (run: DockerRun, flag: string) => run.options.filter(([f]) => f === flag).map(([, v]) => v);

/** `-v SRC:DST[:ro]` or `--mount type=bind,source=…,target=…[,readonly]` (no quoting in these cases). */
function bindOf(flag: string, value: string): { source: string; target: string; readOnly: boolean } {
  if (flag === '-v') {
    const [source, target, mode] = value.split(':');
    return { source: source!, target: target!, readOnly: mode === 'ro' };
  }
  const fields = value.split(',');
  const field = (k: string) => fields.find((f) => f.startsWith(`${k}=`))?.slice(k.length + 1);
  return { source: field('source')!, target: field('target')!, readOnly: fields.includes('readonly') };
}

/** What the container rules must say about node 0, from the argv the launch runs. */
function verdictOf(run: DockerRun, runs: DockerRun[], asks: Asks): Said[] {
  const out: Said[] = [];
  // /dev/shm: the host's (--ipc host), or a private one of --shm-size; never both.
  const shm = valuesOf(run, '--shm-size');
  const hostIpc = valuesOf(run, '--ipc').includes('host');
  assert.ok(hostIpc !== (shm.length === 1), `exactly one of --ipc host and --shm-size: ${JSON.stringify(run.options)}`);
  if (shm.length === 1) {
    const bytes = parseDockerSize(shm[0]!)!;
    if (bytes <= 64 * 2 ** 20) out.push({ rule: 'docker.shm-size', severity: 'error', says: 'no larger than docker' });
    else if (bytes < 2 ** 30) out.push({ rule: 'docker.shm-size', severity: 'warn', says: 'below 1.00 GiB' });
  }
  // The program: --entrypoint and the words after the image; the script it runs, if any.
  const entrypoint = valuesOf(run, '--entrypoint')[0];
  const script =
    entrypoint === undefined
      ? undefined
      : /(^|\/)(sh|bash|dash)$/.test(entrypoint) && !run.command[0]!.startsWith('-')
        ? run.command[0]
        : entrypoint.endsWith('.sh')
          ? entrypoint
          : undefined;
  const words = [...(entrypoint !== undefined ? [entrypoint] : []), ...run.command, ...valuesOf(run, '-e')];
  for (const [flag, value] of run.options) {
    if (flag !== '-v' && flag !== '--mount') continue;
    const b = bindOf(flag, value);
    const inside = (w: string) => w === b.target || w.startsWith(`${b.target}/`);
    if (!existsSync(b.source)) {
      // --mount: docker refuses to start; -v: docker creates it, which matters when something uses it.
      const used = words.some((w) => w.split(/[=,:\s]/).some(inside));
      out.push({
        rule: 'mounts.host-path',
        severity: flag === '--mount' || used ? 'error' : 'warn',
        says: `(${b.source}) does not exist on node 0 (spark1): ${flag === '--mount' ? 'docker refuses to start the container' : 'docker would create it as an empty root-owned directory'}`,
      });
    } else if (
      b.readOnly &&
      statSync(b.source).isDirectory() &&
      (b.target === script || /\.(sh|bash|py|json|toml|ya?ml|conf|cfg|txt|env)$/.test(b.target))
    ) {
      out.push({
        rule: 'mounts.file-is-directory',
        severity: 'error',
        says: `the container uses ${b.target} as a file`,
      });
    }
  }
  // What docker is not told: never --privileged; the IPC namespace is the host's only with --ipc host.
  const privileged = run.options.some(([f]) => f === '--privileged');
  assert.equal(privileged, false);
  if (asks.privileged !== undefined && asks.privileged !== privileged)
    out.push({ rule: 'sparkrun.not-run', severity: 'warn', says: 'executor_config.privileged' });
  if (asks.ipc !== undefined && (asks.ipc === 'host') !== hostIpc)
    out.push({ rule: 'sparkrun.not-run', severity: 'warn', says: 'executor_config.ipc' });
  // A variable the launcher sets per node replaces the recipe's on some node.
  for (const [key, value] of Object.entries(asks.launcherEnv ?? {})) {
    const given = runs.map((r) =>
      valuesOf(r, '-e')
        .find((e) => e.startsWith(`${key}=`))!
        .slice(key.length + 1),
    );
    if (given.some((g) => g !== value))
      out.push({
        rule: 'args.launcher-owned',
        severity: 'warn',
        says: `sets ${key}=${value}, which the launcher sets per node`,
      });
  }
  return out;
}

interface Variant {
  name: string;
  recipe: (w: World) => string;
  cluster?: (w: World) => string;
  asks?: Asks;
}

interface Pair {
  setting: string;
  a: Variant;
  b: Variant;
  /** The setting is one spark does not pass to docker (the argv is the same; the account of it is what flips). */
  argvSame?: boolean;
}

const toml = (w: World, name: string, text: string) => w.recipe(text, `plan-${name}`);
const yaml = (w: World, name: string, text: string) => write(join(w.root, `plan-${name}.yaml`), text);
const withExecutor = (w: World, extra: string, shm = true) =>
  edit(
    seedYaml(w, 'dsv41-flash-4x-sglang-aiden16'),
    'executor_config:\n  shm_size: 32gb\n',
    `executor_config:\n${shm ? '  shm_size: 32gb\n' : ''}${extra}`,
  );
const WRAPPER = (w: World) => join(w.root, 'aiden4x-launch.sh');

const PAIRS: Pair[] = [
  {
    setting: "no shm_size (the host's /dev/shm) / shm_size 64m",
    a: { name: 'shm-none', recipe: (w) => toml(w, 'shm-none', edit(w.dsv41Text, 'shm_size = "32gb"\n', '')) },
    b: {
      name: 'shm-64m',
      recipe: (w) => toml(w, 'shm-64m', edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "64m"')),
    },
  },
  {
    setting: 'shm_size 32gb / 512m',
    a: { name: 'shm-32gb', recipe: (w) => toml(w, 'shm-32gb', w.dsv41Text) },
    b: {
      name: 'shm-512m',
      recipe: (w) => toml(w, 'shm-512m', edit(w.dsv41Text, 'shm_size = "32gb"', 'shm_size = "512m"')),
    },
  },
  {
    setting: 'a missing wrapper script mounted read-only / writable',
    a: {
      name: 'gone-ro',
      recipe: (w) => toml(w, 'gone-ro', edit(w.dsv41Text, WRAPPER(w), join(w.root, 'gone', 'aiden4x-launch.sh'))),
    },
    b: {
      name: 'gone-rw',
      recipe: (w) =>
        toml(
          w,
          'gone-rw',
          edit(
            edit(w.dsv41Text, WRAPPER(w), join(w.root, 'gone', 'aiden4x-launch.sh')),
            'read_only = true',
            'read_only = false',
          ),
        ),
    },
  },
  {
    setting: 'a missing cache nothing names, writable / read-only',
    a: {
      name: 'cache-rw',
      recipe: (w) =>
        toml(
          w,
          'cache-rw',
          edit(
            w.dsv41Text,
            /^\[env\]$/m,
            `[[extra_mounts]]\nhost = "${join(w.root, 'gone-cache')}"\ncontainer = "/cache"\n\n[env]`,
          ),
        ),
    },
    b: {
      name: 'cache-ro',
      recipe: (w) =>
        toml(
          w,
          'cache-ro',
          edit(
            w.dsv41Text,
            /^\[env\]$/m,
            `[[extra_mounts]]\nhost = "${join(w.root, 'gone-cache')}"\ncontainer = "/cache"\nread_only = true\n\n[env]`,
          ),
        ),
    },
  },
  {
    setting: "the cluster's hf_cache missing / present",
    a: {
      name: 'hf-gone',
      recipe: (w) => toml(w, 'hf-gone', w.dsv41Text),
      cluster: (w) =>
        write(
          join(w.root, 'plan-hf-gone.toml'),
          edit(readFileSync(w.cluster, 'utf8'), `hf_cache = "${w.hfCache}"`, `hf_cache = "${join(w.root, 'gone-hf')}"`),
        ),
    },
    b: { name: 'hf-here', recipe: (w) => toml(w, 'hf-here', w.dsv41Text) },
  },
  {
    setting: "a directory mounted read-only where the entrypoint's script belongs / no entrypoint",
    a: {
      name: 'dir-script',
      recipe: (w) => {
        mkdirSync(join(w.root, 'launch-dir'), { recursive: true });
        return toml(
          w,
          'dir-script',
          edit(
            edit(
              edit(w.dsv41Text, WRAPPER(w), join(w.root, 'launch-dir')),
              'container = "/aiden4x-launch.sh"',
              'container = "/opt/launch"',
            ),
            'entrypoint = ["sh", "/aiden4x-launch.sh"]',
            'entrypoint = ["sh", "/opt/launch"]',
          ),
        );
      },
    },
    b: {
      name: 'dir-no-entrypoint',
      recipe: (w) => {
        mkdirSync(join(w.root, 'launch-dir'), { recursive: true });
        return toml(
          w,
          'dir-no-entrypoint',
          edit(
            edit(
              edit(w.dsv41Text, WRAPPER(w), join(w.root, 'launch-dir')),
              'container = "/aiden4x-launch.sh"',
              'container = "/opt/launch"',
            ),
            'entrypoint = ["sh", "/aiden4x-launch.sh"]\n',
            '',
          ),
        );
      },
    },
  },
  {
    setting: 'sparkrun executor_config.privileged true / false',
    argvSame: true,
    a: {
      name: 'privileged',
      recipe: (w) => yaml(w, 'privileged', withExecutor(w, '  privileged: true\n')),
      asks: { privileged: true },
    },
    b: {
      name: 'unprivileged',
      recipe: (w) => yaml(w, 'unprivileged', withExecutor(w, '  privileged: false\n')),
      asks: { privileged: false },
    },
  },
  {
    setting: 'sparkrun executor_config.ipc host, with shm_size / without',
    a: {
      name: 'ipc-host-shm',
      recipe: (w) => yaml(w, 'ipc-host-shm', withExecutor(w, '  ipc: host\n')),
      asks: { ipc: 'host' },
    },
    b: {
      name: 'ipc-host',
      recipe: (w) => yaml(w, 'ipc-host', withExecutor(w, '  ipc: host\n', false)),
      asks: { ipc: 'host' },
    },
  },
  {
    setting: "NODE_RANK in the recipe's [env] / not",
    a: {
      name: 'env-rank',
      recipe: (w) => toml(w, 'env-rank', edit(w.dsv41Text, /^\[env\]$/m, '[env]\nNODE_RANK = "7"')),
      asks: { launcherEnv: { NODE_RANK: '7' } },
    },
    b: { name: 'env-none', recipe: (w) => toml(w, 'env-none', w.dsv41Text) },
  },
];

const key = (s: Pick<Said, 'rule' | 'severity'>) => `${s.rule} ${s.severity}`;

/** Node 0's argv, the verdict derived from it, and what preflight said. */
async function judge(w: World, v: Variant) {
  const env = { HOME: tempDir('spark-plan-home-') };
  const recipe = v.recipe(w);
  const cluster = v.cluster?.(w) ?? w.cluster;
  const plan = await planDryRun({ recipe, cluster }, quietIo(env));
  const runs = plan.nodes.map((n) => dockerRun(n.argv, plan.image));
  const expected = verdictOf(runs[0]!, runs, v.asks ?? {}).sort((x, y) => key(x).localeCompare(key(y)));
  const report = await runPreflight(w.options(recipe, { cluster, only: CONTAINER_RULES }), quietIo(env));
  const said = report.findings
    .filter((f): f is Finding & { severity: Said['severity'] } => f.severity !== 'info')
    .sort((x, y) => key(x).localeCompare(key(y)));
  assert.deepEqual(
    said.map(key),
    expected.map(key),
    `${v.name}: argv ${JSON.stringify(runs[0]!.options)}\npreflight: ${JSON.stringify(said, null, 1)}`,
  );
  expected.forEach((e, i) =>
    assert.ok(said[i]!.message.includes(e.says), `${v.name}: "${said[i]!.message}" lacks "${e.says}"`),
  );
  return { argv: plan.nodes[0]!.argv, expected };
}

for (const pair of PAIRS) {
  test(`preflight says what the launch plan does: ${pair.setting}`, async () => {
    const w = await world();
    const a = await judge(w, pair.a);
    const b = await judge(w, pair.b);
    // The setting changes what the launch runs (or, for what docker is never told, only the account of it)…
    if (pair.argvSame) assert.deepEqual(a.argv, b.argv);
    else assert.notDeepEqual(a.argv, b.argv);
    // …and the verdict with it.
    assert.notDeepEqual(a.expected, b.expected, 'the pair does not flip the verdict');
  });
}
