// Rules about the files themselves: keys a table header swallowed, unknown keys, variables an
// env file expands without a definition.
import { at, ENGINES } from '../../recipes/index.js';
import { defineRule, finding } from '../rule.js';

export const swallowedKey = defineRule({
  id: 'toml.swallowed-key',
  title: 'a top-level key written below a table header belongs to that table (recipe and cluster files)',
  engines: ENGINES,
  severity: 'error',
  scope: 'files',
  evidence:
    'TOML puts every bare key after `[table]` or `[[array]]` into that table; the dsv41 recipe warns that ' +
    '`args`/`[env]` would parse into `[[extra_mounts]]` if written after it (seed: dsv41 recipe).',
  fix: 'move the key above the first table header',
  check(ctx) {
    return [...ctx.recipeDiagnostics, ...ctx.clusterDiagnostics]
      .filter((d) => d.kind === 'swallowed-key')
      .map((d) => finding(this, { message: d.message, where: at(d.file, d.line), fix: d.fix }));
  },
});

export const unknownKey = defineRule({
  id: 'toml.unknown-key',
  title: 'keys the recipe and cluster formats do not define',
  engines: ENGINES,
  severity: 'warn',
  scope: 'files',
  evidence: 'A misspelt key (`tensor_paralel_size`) is silently ignored by TOML readers and the default applies.',
  fix: 'correct the spelling or remove the key',
  check(ctx) {
    return [...ctx.recipeDiagnostics, ...ctx.clusterDiagnostics]
      .filter((d) => d.kind === 'unknown-key')
      .map((d) => finding(this, { message: d.message, where: at(d.file, d.line), fix: d.fix }));
  },
});

export const undefinedVariable = defineRule({
  id: 'env.undefined-variable',
  title: 'an env file expands a variable defined neither above it nor in the environment',
  engines: ENGINES,
  severity: 'warn',
  scope: 'files',
  evidence: 'docker compose and dotenv expand an undefined $VAR to an empty string without a word (seed: mia-tp4 env uses $HOME).',
  fix: 'define the variable above its use, or use ${VAR:-default}',
  check(ctx) {
    return ctx.clusterDiagnostics
      .filter((d) => d.kind === 'undefined-variable')
      .map((d) => finding(this, { message: d.message, where: at(d.file, d.line), fix: d.fix }));
  },
});

export const composeOnly = defineRule({
  id: 'env.compose-only',
  title: 'an env file sets variables only a compose file or start script reads',
  engines: ENGINES,
  severity: 'warn',
  scope: 'files',
  evidence:
    'The mia-tp4 env file configures its start script (TP_SIZE, NNODES, PORT, SSH_IDENTITY, …) as well as the ' +
    'containers (seed: mia-tp4 env); spark launch passes every key into every container, where those do nothing.',
  fix: 'set the value where spark reads it (the recipe or the cluster file) and drop it from the env file',
  check(ctx) {
    return ctx.clusterDiagnostics
      .filter((d) => d.kind === 'compose-only')
      .map((d) => finding(this, { message: d.message, where: at(d.file, d.line), fix: d.fix }));
  },
});
