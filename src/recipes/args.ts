// The engine argument vector as flags, so a rule can ask "what is --max-num-seqs". Handles
// `--flag value`, `--flag=value`, boolean flags, dotted flags
// (`--default-chat-template-kwargs.thinking=true`) and JSON values wrapped in shell quotes the
// way recipes write them (`'{"method":"dspark",...}'`).

export interface ArgFlag {
  /** `--max-num-seqs` (always with the leading dashes). */
  name: string;
  /** The value as written (quotes kept), or true for a boolean flag. */
  raw: string | true;
  /** The value with one level of wrapping shell quotes removed, or true. */
  value: string | true;
  /** Index of the flag in the argument vector (the value, if separate, is index + 1). */
  index: number;
  /** Set when the value looks like JSON ({…} or […]): the parsed value, or the parse error. */
  json?: { ok: true; value: unknown } | { ok: false; error: string };
}

export interface ParsedArgs {
  flags: ArgFlag[];
  /** Arguments that are neither flags nor flag values (e.g. a model path). */
  positionals: { value: string; index: number }[];
  /** The last occurrence of a flag (engines' argparse keeps the last). */
  get(name: string): ArgFlag | undefined;
  /** Every occurrence, in order. */
  all(name: string): ArgFlag[];
  has(name: string): boolean;
  /** The value as a string; undefined when absent or boolean. */
  string(name: string): string | undefined;
  /** The value as a finite number; undefined when absent or not numeric. */
  number(name: string): number | undefined;
  /** The parsed JSON value of a JSON-valued flag. */
  json(name: string): unknown;
  /** Dotted flags under a prefix: `--a.b=1 --a.c=x` → { b: '1', c: 'x' }. */
  dotted(prefix: string): Record<string, string | true>;
}

/**
 * Flags that never take a value. A flag not listed here takes the next argument as its value
 * when that argument does not start with '-' (negative numbers do count as values).
 */
export const BOOLEAN_FLAGS: ReadonlySet<string> = new Set([
  '--trust-remote-code',
  '--enable-prefix-caching',
  '--no-enable-prefix-caching',
  '--enable-auto-tool-choice',
  '--disable-custom-all-reduce',
  '--enforce-eager',
  '--enable-decoder-swa-bounded-replay',
  '--sleep-on-idle',
  '--disable-radix-cache',
  '--disable-cuda-graph',
  '--enable-metrics',
  '--skip-server-warmup',
  '--enable-chunked-prefill',
  '--async-scheduling',
]);

/** Removes one level of matching wrapping quotes: `'{"a":1}'` → `{"a":1}`. */
export function unquote(value: string): string {
  const v = value.trim();
  if (v.length >= 2 && (v[0] === "'" || v[0] === '"') && v[v.length - 1] === v[0]) return v.slice(1, -1);
  return value;
}

export function parseArgs(args: readonly string[]): ParsedArgs {
  const flags: ArgFlag[] = [];
  const positionals: ParsedArgs['positionals'] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (!/^--?[A-Za-z]/.test(a)) {
      positionals.push({ value: a, index: i });
      continue;
    }
    const at = i;
    const eq = a.indexOf('=');
    let name: string;
    let raw: string | true;
    if (eq > 0) {
      name = a.slice(0, eq);
      raw = a.slice(eq + 1);
    } else {
      name = a;
      const next = args[i + 1];
      const takesValue = !BOOLEAN_FLAGS.has(name) && next !== undefined && (!next.startsWith('-') || /^-\d/.test(next));
      raw = takesValue ? next : true;
      if (takesValue) i++;
    }
    const flag: ArgFlag = { name, raw, value: raw === true ? true : unquote(raw), index: at };
    if (typeof flag.value === 'string' && /^\s*[{[]/.test(flag.value)) {
      try {
        flag.json = { ok: true, value: JSON.parse(flag.value) as unknown };
      } catch (err) {
        flag.json = { ok: false, error: (err as Error).message };
      }
    }
    flags.push(flag);
  }
  const all = (name: string) => flags.filter((f) => f.name === name);
  const get = (name: string) => all(name).at(-1);
  return {
    flags,
    positionals,
    get,
    all,
    has: (name) => get(name) !== undefined,
    string: (name) => {
      const v = get(name)?.value;
      return typeof v === 'string' ? v : undefined;
    },
    number: (name) => {
      const v = get(name)?.value;
      if (typeof v !== 'string' || v.trim() === '') return undefined;
      const n = Number(v);
      return Number.isFinite(n) ? n : undefined;
    },
    json: (name) => {
      const j = get(name)?.json;
      return j?.ok ? j.value : undefined;
    },
    dotted: (prefix) => {
      const out: Record<string, string | true> = {};
      for (const f of flags) if (f.name.startsWith(prefix + '.')) out[f.name.slice(prefix.length + 1)] = f.value;
      return out;
    },
  };
}

/**
 * The argument vector as the engine should receive it when no shell is involved: values wrapped
 * in shell quotes around JSON are unwrapped (a recipe written for a shell-quoting launcher
 * writes `'{"a":1}'`; passed verbatim as argv, the engine would see the quotes).
 */
export function argvForExec(args: readonly string[]): string[] {
  return args.map((a) => {
    const eq = a.startsWith('--') ? a.indexOf('=') : -1;
    const head = eq > 0 ? a.slice(0, eq + 1) : '';
    const value = eq > 0 ? a.slice(eq + 1) : a;
    const inner = unquote(value);
    if (inner === value || !/^\s*[{[]/.test(inner)) return a;
    try {
      JSON.parse(inner);
      return head + inner;
    } catch {
      return a;
    }
  });
}
