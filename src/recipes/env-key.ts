// The one rule for environment variable names, wherever spark reads them: a .env file, a
// recipe's [env], a cluster's [nccl] and [nodes.env]. Each becomes `-e KEY=value` of docker run,
// so a key with `=` would set another variable (`"PATH=/evil" = "x"` is PATH), and an empty key
// or one with a space is refused by docker, minutes into a launch. The grammar is the one docker
// compose and dotenv read in .env files: a letter or `_`, then letters, digits, `_` and `.`.

/** The start of a line of a .env file that is a key (the .env reader matches it as a prefix). */
export const ENV_KEY_PREFIX = /^[A-Za-z_][A-Za-z0-9_.]*/;

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_.]*$/;

/** Why `key` cannot be an environment variable name, or undefined when it can. */
export function envKeyProblem(key: string): string | undefined {
  if (ENV_KEY.test(key)) return undefined;
  return `${JSON.stringify(key)} is not an environment variable name (a letter or _, then letters, digits, _ or .)`;
}

/** Why `value` cannot be an environment variable's value (execve ends a string at NUL). */
export function envValueProblem(value: string): string | undefined {
  return value.includes('\0') ? 'contains a NUL byte, which no environment variable can hold' : undefined;
}
