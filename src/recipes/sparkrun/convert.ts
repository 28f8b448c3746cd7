// `spark recipe convert`: a recipe written out in the other format, from the typed Recipe both
// readers give, so the converted file preflights and launches the same. What one format can
// say and the other cannot is written as a comment at the top, never left out without a word.
import { argvForExec } from '../args.js';
import type { FileDiagnostic } from '../fields.js';
import type { LoadedRecipe, Recipe } from '../recipe.js';
import { parallelShape } from '../topology.js';

const BARE_TOML_KEY = /^[A-Za-z0-9_-]+$/;

/** A TOML basic string: JSON's escapes are TOML's (\" \\ \n \t \uXXXX). */
function tomlString(s: string): string {
  return JSON.stringify(s).replace(/\x7f/g, '\\u007f');
}

function tomlKey(k: string): string {
  return BARE_TOML_KEY.test(k) ? k : tomlString(k);
}

function comment(text: string): string[] {
  return text.split('\n').map((l) => `# ${l}`.trimEnd());
}

/** The converted file's header: where it came from, and each thing it could not carry. */
function header(from: string, notes: string[]): string[] {
  const out = [`# Converted by spark recipe convert from ${from}.`];
  if (notes.length > 0) {
    out.push('#', '# Without a counterpart in this format:');
    for (const n of notes) out.push(...comment(`- ${n}`));
  }
  out.push('');
  return out;
}

/** A sparkrun recipe as spark TOML; the reader's findings (mods, pre_exec, …) become comments. */
export function toToml(loaded: LoadedRecipe): string {
  const r = loaded.recipe;
  const notes = loaded.diagnostics
    .filter((d: FileDiagnostic) => d.kind !== 'undefined-variable')
    .map((d) => `${d.line !== undefined ? `line ${d.line}: ` : ''}${d.message} (${d.fix})`);
  const lines = header(r.file, notes);
  const put = (key: string, value: string | number | undefined) => {
    if (value !== undefined) lines.push(`${key} = ${typeof value === 'number' ? String(value) : tomlString(value)}`);
  };
  put('engine', r.engine);
  put('name', r.name);
  put('docker_image', r.dockerImage);
  put('model', r.model);
  put('parent_model', r.parentModel);
  put('port', r.port);
  put('required_nodes', r.requiredNodes);
  put('tensor_parallel_size', r.tensorParallelSize);
  if (r.pipelineParallelSize !== 1) put('pipeline_parallel_size', r.pipelineParallelSize);
  put('distributed_backend', r.distributedBackend);
  put('shm_size', r.shmSize);
  put('docker_image_dir', r.dockerImageDir);
  if (r.entrypoint !== undefined) lines.push(`entrypoint = [${r.entrypoint.map(tomlString).join(', ')}]`);
  lines.push('', 'args = [', ...flagRows(r.args.map(tomlString), ', ').map((row) => `    ${row},`), ']');
  for (const m of r.extraMounts) {
    lines.push('', '[[extra_mounts]]', `host = ${tomlString(m.host)}`, `container = ${tomlString(m.container)}`);
    if (m.readOnly) lines.push('read_only = true');
  }
  lines.push('', '[env]', ...Object.entries(r.env).map(([k, v]) => `${tomlKey(k)} = ${tomlString(v)}`));
  return lines.join('\n') + '\n';
}

/** One flag and its value per row, as recipes are written (`words` already quoted for the format). */
function flagRows(words: string[], separator: string): string[] {
  const rows: string[][] = [];
  for (const w of words) {
    const last = rows.at(-1);
    if (last !== undefined && last.length === 1 && /^["']?-/.test(last[0]!) && !/^["']?-/.test(w)) last.push(w);
    else rows.push([w]);
  }
  return rows.map((row) => row.join(separator));
}

/** A word as bash -c reads it back: bare when safe, else single-quoted. */
function shellWord(word: string): string {
  if (/^[A-Za-z0-9_./:=@,+^%-]+$/.test(word)) return word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A YAML scalar: JSON's double-quoted strings are YAML's. */
function yamlString(s: string): string {
  return JSON.stringify(s);
}

/**
 * A spark TOML recipe as a sparkrun recipe (a command template, so every flag is written
 * out). `$` in env values is escaped: a sparkrun reader expands `$VAR`.
 */
export function toSparkrunYaml(loaded: LoadedRecipe): string {
  const r: Recipe = loaded.recipe;
  const shape = parallelShape(r);
  const notes: string[] = [];
  if (r.parentModel !== undefined)
    notes.push(`parent_model = "${r.parentModel}" (spark reads it to tell the model family; sparkrun has no such key)`);
  if (r.dockerImageDir !== undefined)
    notes.push(`docker_image_dir = "${r.dockerImageDir}" (where spark's image sources live; sparkrun has no such key)`);
  if (r.requiredNodes !== shape.tp * shape.pp)
    notes.push(`required_nodes = ${r.requiredNodes} (sparkrun runs tensor_parallel × pipeline_parallel nodes)`);
  if (r.entrypoint === undefined) {
    notes.push(
      "no entrypoint (the image's own ran the args); sparkrun needs the program in command, so the engine's usual one is written: check it against the image",
    );
  }
  if (Object.values(r.env).some((v) => v.includes('/root/.cache/huggingface'))) {
    notes.push(
      "env values under /root/.cache/huggingface name spark's mount of the Hugging Face cache; sparkrun mounts it at /cache/huggingface ({launch.model_path} names the snapshot in either)",
    );
  }
  for (const d of loaded.diagnostics) notes.push(`${d.line !== undefined ? `line ${d.line}: ` : ''}${d.message}`);
  const lines = header(r.file, notes);
  lines.push(
    'recipe_version: "2"',
    `runtime: ${r.engine}`,
    `model: ${yamlString(r.model)}`,
    `container: ${yamlString(r.dockerImage)}`,
  );
  if (r.name !== undefined) lines.push('metadata:', `  description: ${yamlString(r.name)}`);
  lines.push('defaults:');
  if (r.port !== undefined) lines.push(`  port: ${r.port}`);
  lines.push(`  tensor_parallel: ${shape.tp}`);
  if (shape.pp !== 1) lines.push(`  pipeline_parallel: ${shape.pp}`);
  if (r.engine === 'vllm' && r.distributedBackend !== undefined)
    lines.push(`  distributed_executor_backend: ${yamlString(r.distributedBackend)}`);
  if (r.shmSize !== undefined || r.extraMounts.length > 0) {
    lines.push('executor_config:');
    if (r.shmSize !== undefined) lines.push(`  shm_size: ${yamlString(r.shmSize)}`);
    if (r.extraMounts.length > 0) {
      lines.push(
        '  volumes:',
        ...r.extraMounts.map((m) => `    - ${yamlString(`${m.host}:${m.container}${m.readOnly ? ':ro' : ''}`)}`),
      );
    }
  }
  const program = r.entrypoint ?? (r.engine === 'vllm' ? ['vllm', 'serve'] : ['python3', '-m', 'sglang.launch_server']);
  const first = [
    ...program.map(shellWord),
    ...(r.engine === 'vllm' && program.at(-1) === 'serve' ? ['{model}'] : []),
  ].join(' ');
  const rows = flagRows(argvForExec(r.args).map(shellWord), ' ');
  lines.push(
    'command: |',
    `  ${first}${rows.length > 0 ? ' \\' : ''}`,
    ...rows.map((row, i) => `    ${row}${i < rows.length - 1 ? ' \\' : ''}`),
  );
  const env = Object.entries(r.env);
  if (env.length > 0)
    lines.push(
      'env:',
      ...env.map(
        ([k, v]) =>
          `  ${/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? k : yamlString(k)}: ${yamlString(v.replace(/\$/g, '\\$'))}`,
      ),
    );
  return lines.join('\n') + '\n';
}
