// Rules about the files themselves: keys a table header swallowed, unknown keys, variables an
// env file expands without a definition.
import { at, type FileDiagnostic } from '../../recipes/index.js';
import { defineRule, finding, type RuleInput } from '../../preflight-api/rule.js';
import type { Rule } from '../../preflight-api/types.js';

/**
 * A rule that reports, one finding each, the diagnostics of `kind` the file readers made, at the
 * severity a diagnostic gives (else the rule's).
 */
export function diagnosticRule(kind: FileDiagnostic['kind'], meta: Omit<RuleInput, 'scope' | 'check'>): Rule {
  return defineRule({
    ...meta,
    scope: 'files',
    check(ctx) {
      return [...ctx.recipeDiagnostics, ...ctx.clusterDiagnostics]
        .filter((d) => d.kind === kind)
        .map((d) => finding(this, { message: d.message, where: at(d.file, d.line), fix: d.fix, severity: d.severity }));
    },
  });
}

export const swallowedKey = diagnosticRule('swallowed-key', {
  id: 'toml.swallowed-key',
  title: 'a top-level key written below a table header belongs to that table (recipe and cluster files)',
  severity: 'error',
  evidence:
    'TOML puts every bare key after `[table]` or `[[array]]` into that table; the dsv41 recipe warns that ' +
    '`args`/`[env]` would parse into `[[extra_mounts]]` if written after it (recipes/dsv41-flash-4x-sglang-aiden16).',
  fix: 'move the key above the first table header',
});

export const unknownKey = diagnosticRule('unknown-key', {
  id: 'toml.unknown-key',
  title: 'keys the recipe and cluster formats do not define',
  severity: 'warn',
  evidence: 'A misspelt key (`tensor_paralel_size`) is silently ignored by TOML readers and the default applies.',
  fix: 'correct the spelling or remove the key',
});

export const undefinedVariable = diagnosticRule('undefined-variable', {
  id: 'env.undefined-variable',
  title: 'an env file expands a variable defined neither above it nor in the environment',
  severity: 'warn',
  evidence:
    'docker compose and dotenv expand an undefined $VAR to an empty string without a word (recipes/docker-images/mia-tp4/.env.example uses $HOME).',
  fix: 'define the variable above its use, or use ${VAR:-default}',
});

export const composeOnly = diagnosticRule('compose-only', {
  id: 'env.compose-only',
  title: 'an env file sets variables only a compose file or start script reads',
  severity: 'warn',
  evidence:
    'The mia-tp4 env file configures its start script (TP_SIZE, NNODES, PORT, SSH_IDENTITY, …) as well as the ' +
    'containers (recipes/docker-images/mia-tp4/.env.example); spark launch passes every key into every container, where those do nothing.',
  fix: 'set the value where spark reads it (the recipe or the cluster file) and drop it from the env file',
});
