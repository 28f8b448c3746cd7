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

/**
 * Whether a YAML reader takes this code point as it is inside a scalar: YAML's printable set,
 * less the characters YAML 1.1 (sparkrun's PyYAML) reads as line breaks (NEL, U+2028, U+2029)
 * and the byte order mark. Everything else is written as an escape.
 */
function yamlPrintable(c: number): boolean {
  return (
    c === 0x09 ||
    (c >= 0x20 && c <= 0x7e) ||
    (c >= 0xa0 && c <= 0xd7ff && c !== 0x2028 && c !== 0x2029) ||
    (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff) ||
    c >= 0x10000
  );
}

function hexEscape(c: number): string {
  const hex = c.toString(16).toUpperCase();
  return c <= 0xff
    ? `\\x${hex.padStart(2, '0')}`
    : c <= 0xffff
      ? `\\u${hex.padStart(4, '0')}`
      : `\\U${hex.padStart(8, '0')}`;
}

/** A string's characters as they go between YAML's double quotes (no line breaks). */
function yamlEscaped(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else out += yamlPrintable(c) ? ch : hexEscape(c);
  }
  return out;
}

/** A YAML double-quoted scalar: every character comes back exactly (any of them: see yamlPrintable). */
function yamlString(s: string): string {
  return `"${yamlEscaped(s)}"`;
}

/**
 * A text as a double-quoted scalar that keeps its lines: each line break is written `\n`
 * followed by an escaped break, so the file's lines are the text's lines (messages about the
 * text name the right file line); a blank leading a continuation is escaped, as YAML strips it.
 */
function yamlLines(text: string, indent: string): string {
  const lines = text.split('\n');
  const written = lines.map((line, i) => {
    const body = i > 0 && line.startsWith(' ') ? `\\x20${yamlEscaped(line.slice(1))}` : yamlEscaped(line);
    return i < lines.length - 1 ? `${body}\\n\\` : body;
  });
  return `"${written.join(`\n${indent}`)}"`;
}

/** Whether a text can be a block scalar as it is: every character printable (line breaks aside). */
function blockSafe(text: string): boolean {
  return [...text].every((ch) => ch === '\n' || yamlPrintable(ch.codePointAt(0)!));
}

/** A comment's text, with what a comment cannot hold (control characters, YAML 1.1's line breaks) escaped. */
function comment(text: string): string[] {
  return [...text]
    .map((ch) => (ch === '\n' || yamlPrintable(ch.codePointAt(0)!) ? ch : hexEscape(ch.codePointAt(0)!)))
    .join('')
    .split('\n')
    .map((l) => `# ${l}`.trimEnd());
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
  const notes = loaded.diagnostics.map(
    (d: FileDiagnostic) => `${d.line !== undefined ? `line ${d.line}: ` : ''}${d.message} (${d.fix})`,
  );
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
  if (r.engine !== 'vllm' && r.distributedBackend !== undefined)
    notes.push(
      `distributed_backend = "${r.distributedBackend}" (a vLLM setting; sparkrun's ${r.engine} runtime has no executor backend)`,
    );
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
  // A block scalar (indented by an explicit 2, so a word's own line breaks and blanks stay
  // its own) when every character can stand in one as it is; else a quoted scalar with the
  // same lines (its indentation is the file's, not the text's), whose escapes carry any character.
  const text = (indent: string) => [first, ...rows.map((row) => `${indent}${row}`)].join(' \\\n');
  if (blockSafe(text('')))
    lines.push(
      'command: |2',
      ...text('  ')
        .split('\n')
        .map((l) => `  ${l}`),
    );
  else lines.push(`command: ${yamlLines(text(''), '    ')}`);
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
