// `spark preflight --json` as a process, for test/preflight/preflight-cli.test.ts and
// test/long/preflight-cli-variants.test.ts: its argv for a world, its report, and a run that must
// fail one rule naming a key.
import assert from 'node:assert/strict';
import type { Finding, PreflightReport } from '../../src/preflight/index.js';
import { cli } from './cli.js';
import type { World } from './preflight.js';

export function args(w: World, recipe: string, extra: string[] = []): string[] {
  return ['preflight', recipe, '--cluster', w.cluster, '--node-rank', '0', '--sysfs', w.sysfs, ...extra];
}

export async function json(
  argv: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; report: PreflightReport; stderr: string }> {
  const r = await cli([...argv, '--json'], env);
  assert.equal(r.stdout.trim().split('\n').length > 0, true);
  return { code: r.code, report: JSON.parse(r.stdout) as PreflightReport, stderr: r.stderr };
}

export const errors = (r: PreflightReport): Finding[] => r.findings.filter((f) => f.severity === 'error');

export async function mustFail(
  argv: string[],
  rule: string,
  key: string,
  where?: RegExp,
  env: NodeJS.ProcessEnv = {},
): Promise<Finding> {
  const { code, report } = await json(argv, env);
  assert.equal(code, 1, JSON.stringify(report.findings, null, 1));
  const f = errors(report).find((x) => x.rule === rule);
  assert.ok(f, `no ${rule} error in ${JSON.stringify(report.findings, null, 1)}`);
  assert.ok(f.message.includes(key), `${f.message} names ${key}`);
  if (where) assert.match(f.where, where);
  return f;
}

export const lineOf = (text: string, needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;
