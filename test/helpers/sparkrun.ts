// The users' seed recipes as sparkrun YAML (test/fixtures/sparkrun/, translated by hand), with
// the host paths and port the preflight world gives their TOML originals.
import { join } from 'node:path';
import { edit, repoFile, type World } from './preflight.js';

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
