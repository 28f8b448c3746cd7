// What reading a sparkrun recipe (or cluster) found (src/recipes/sparkrun/): steps of the recipe spark does
// not take, and what became of its defaults and placeholders on the way to the engine. Each
// diagnostic is one finding, at the severity the reader gave it.
import { diagnosticRule } from './files.js';

export const notRun = diagnosticRule('sparkrun-not-run', {
  id: 'sparkrun.not-run',
  title:
    'a sparkrun recipe asks for a step spark does not take (mods, pre_exec, Ray, per-machine images, building images, …)',
  severity: 'error',
  also: 'a warning for steps serving does not depend on (post_exec, post_commands, build_args, distribution_config, privileged)',
  evidence:
    "sparkrun runs mods and pre_exec in every container before the serve command; the registry's DeepSeek-V4.1 recipe packs " +
    'its Engram rows in a mod (dsv41-native-prepare), so without the mod the engine starts without its rows (docs/sparkrun.md). ' +
    'Each mod is its own finding, on its own line.',
  fix: 'do the step another way (bake it into the image; for dsv41-native-prepare, spark fanout pack --layout dense --env, which the finding spells out) and remove the key',
});

export const defaultsReach = diagnosticRule('sparkrun-defaults', {
  id: 'sparkrun.defaults',
  title: "what a sparkrun recipe's defaults, command placeholders and env references became on the way to the engine",
  severity: 'warn',
  also:
    'an error for a placeholder nothing answers ({x} in a default or the command, naming no default, model or model_revision) ' +
    'and for an env reference spark cannot resolve ({launch.model_path} without a snapshot, an unknown {config.x})',
  evidence:
    'sparkrun 0.2 builds the SGLang command from a fixed flag table and drops every other defaults key without a word ' +
    "(15 keys of the registry's DSV4.1 recipe: backends, speculative settings, parsers); recipes written for 0.4 expect them to reach the engine. " +
    "spark passes such a key only as the engine's own flag (data_parallel as --dp-size, not --data-parallel), never a key " +
    'sparkrun reads itself (model_type), and says which.',
  fix: 'write the flag in a command: template, or correct the key',
});
