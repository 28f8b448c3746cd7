// The ssh destinations a cluster names: each node's host (`spark1`, `user@10.0.0.1`) and a
// cluster's user. Every cluster reader (spark's TOML cluster file, sparkrun's cluster YAML and
// its config.yaml's ssh.user) checks them here, so the rule is the same whichever file named
// the node. A value that starts with '-' would reach ssh as an option (`-oProxyCommand=…`
// runs a command on this machine); whitespace, control characters and shell syntax in a name
// would reach the shell that runs a ProxyCommand from ~/.ssh/config (`%h`, `%r`). ssh is also
// always given the destination after `--` (remote/ssh.ts): this check is the one that names
// the file and the key.

/** A host name, an IPv4 address, or an IPv6 address (with a `%zone`). */
const HOST_CHAR = /[A-Za-z0-9._:%-]/;
const HOST_CHARS = "letters, digits, '.', '-', '_', ':' and '%'";
/** A login name as useradd and ssh take one. */
const USER_CHAR = /[A-Za-z0-9._-]/;
const USER_CHARS = "letters, digits, '.', '-' and '_'";

const isWhitespaceOrControl = (c: string) => /\s/.test(c) || c.charCodeAt(0) < 0x20 || c === '\x7f';

/** Why a name cannot reach ssh, or undefined: the checks a host and a user share. */
function nameProblem(name: string, allowed: RegExp, allowedText: string, what: string): string | undefined {
  if (name.startsWith('-')) return "starts with '-', which ssh would read as an option";
  const chars = [...name];
  if (chars.some(isWhitespaceOrControl)) return 'contains whitespace or a control character';
  const bad = chars.find((c) => !allowed.test(c));
  if (bad !== undefined) return `contains ${JSON.stringify(bad)}, which is not part of ${what} (${allowedText})`;
  return undefined;
}

/** Why `user` cannot be the user ssh logs in as, or undefined. */
export function sshUserProblem(user: string): string | undefined {
  if (user === '') return 'is empty: it must name the user ssh logs in as';
  return nameProblem(user, USER_CHAR, USER_CHARS, 'a user name');
}

/** Why `target` (`host` or `user@host`) cannot be an ssh destination, or undefined. */
export function sshHostProblem(target: string): string | undefined {
  if (target === '') return 'is empty: it must name the node to ssh to';
  if (target.startsWith('-')) return "starts with '-', which ssh would read as an option";
  const at = target.lastIndexOf('@');
  const host = target.slice(at + 1);
  if (host === '' || host.startsWith('-')) return `has no host name after '${target.slice(0, at + 1)}'`;
  if ([...target].some(isWhitespaceOrControl)) return 'contains whitespace or a control character';
  if (at === 0) return "has no user name before '@'";
  if (at > 0) {
    const user = sshUserProblem(target.slice(0, at));
    if (user !== undefined) return `has a user that ${user}`;
  }
  return nameProblem(host, HOST_CHAR, HOST_CHARS, 'a host name or address');
}

/** The ssh destination of `host` as `user`'s, unless the host names its own user. */
export function withUser(host: string, user: string | undefined): string {
  return user !== undefined && !host.includes('@') ? `${user}@${host}` : host;
}
