// POSIX sh quoting. ssh joins its remote arguments with spaces and the node's login shell parses
// the result again, so every argument vector sent to a node is quoted exactly once, here.

/**
 * Words that never need quoting in sh, bash or zsh (the login shells of the nodes and of the
 * people who paste spark's commands): no globbing, no expansion, no word splitting. `=` is bare
 * only after the first character: zsh expands a word that starts with it (`=ls` becomes
 * `/usr/bin/ls`), as every shell expands a leading `~` (never bare).
 */
const SAFE = /^[A-Za-z0-9_@%+:,./-][A-Za-z0-9_@%+=:,./-]*$/;

/**
 * One argument as a sh word that the shell turns back into exactly these bytes: single quotes
 * (inside which nothing is special), with each `'` written as `'\''`. Safe words stay bare so
 * the lines people read stay readable.
 */
export function shQuote(arg: string): string {
  return SAFE.test(arg) ? arg : shSingleQuote(arg);
}

/**
 * Always single-quoted, even where a bare word would do: for generated scripts whose values are
 * found again by their quotes (preflight reads a wrapper script's SPARK_ENGRAM_ROWS that way).
 */
export function shSingleQuote(arg: string): string {
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** An argument vector as one sh command line. */
export function shJoin(argv: readonly string[]): string {
  return argv.map(shQuote).join(' ');
}

/**
 * An argument vector as a multi-line command for people: one option (with its value) per line,
 * joined by ` \` continuations, so the line is still valid sh when pasted.
 */
export function shLines(argv: readonly string[], firstLine = 1, indent = '  '): string {
  const groups: string[][] = [argv.slice(0, firstLine) as string[]];
  for (let i = firstLine; i < argv.length; i++) {
    const a = argv[i]!;
    if (a.startsWith('-') && !/^-\d/.test(a)) groups.push([a]);
    else groups.at(-1)!.push(a);
  }
  return groups.map((g, i) => (i === 0 ? '' : indent) + shJoin(g)).join(' \\\n');
}
