// sparkrun recipes in tests: the users' seed recipes as sparkrun YAML (test/fixtures/sparkrun/,
// translated by hand) with the host paths and port the preflight world gives their TOML
// originals, recipes written into the world, their dry-run plans and their sparkrun findings.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { cli } from './cli.js';
import { edit, preflight, repoFile, REVISION, write, type World } from './preflight.js';

export type SeedName = 'dsv41-flash-4x-sglang-aiden16' | 'deepseek-v4-flash-eugr-agent';

export function seedYaml(w: World, name: SeedName): string {
  const text = repoFile(`test/fixtures/sparkrun/${name}.yaml`);
  if (name === 'deepseek-v4-flash-eugr-agent') return edit(text, '~/.cache/vllm-ds4-eugr', join(w.root, 'vllm-cache'));
  return edit(
    edit(text, '/home/kilork/aiden4x-launch.sh', join(w.root, 'aiden4x-launch.sh')),
    'port: 30000',
    `port: ${w.servingPort}`,
  );
}

/** The world's snapshot as the containers see it. */
export const SNAPSHOT = `/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4.1-Flash/snapshots/${REVISION}`;
export const HOME = '/home/spark';

export interface Plan {
  nodes: { rank: number; argv: string[]; env: Record<string, string> }[];
}

export function yamlRecipe(w: World, name: string, text: string): string {
  return write(join(w.root, 'sparkrun', name, 'recipe.yaml'), text);
}

export async function dryRun(file: string, cluster: string, env: NodeJS.ProcessEnv = {}): Promise<Plan> {
  const r = await cli(['launch', file, '--cluster', cluster, '--dry-run', '--json'], { HOME, ...env });
  assert.equal(r.code, 0, r.stderr);
  return JSON.parse(r.stdout) as Plan;
}

/** The argv after the image: the container command as the engine gets it. */
export function afterImage(argv: string[], image: string): string[] {
  return argv.slice(argv.indexOf(image) + 1);
}

/** The sparkrun findings as rule, severity, where (the recipe as R) and message. */
export async function sparkrunFindings(w: World, file: string, cluster: string, env: NodeJS.ProcessEnv = {}) {
  const r = await preflight(
    w.options(file, { cluster, only: ['sparkrun', 'env.undefined-variable', 'toml.unknown-key'] }),
    env,
  );
  return r.findings.map((f) => ({
    rule: f.rule,
    severity: f.severity,
    where: f.where.replace(file, 'R'),
    message: f.message,
    fix: f.fix,
  }));
}
