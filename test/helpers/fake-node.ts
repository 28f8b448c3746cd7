// Fake `ssh`, `docker` and `spark` executables for launch tests (POSIX sh, so a 4-node launch
// costs milliseconds). They go first on PATH, record every call (argv NUL-separated, byte-exact,
// with the host it ran "on" and its pid) into one file per call, numbered in the order the
// calls began, and behave as the test says.
// The fake ssh does what real ssh does with its command: joins the arguments after the host
// with spaces and has `sh -c` parse the result, so quoting is exercised for real.
//
// Hosts can differ (fake-cluster.ts builds on this): a command "on" host H runs with
// FAKE_DIR/hosts/H/bin first on PATH (its own nvidia-smi, uname, df, ip, spark...), with every
// occurrence of FAKE_ROOT in the command replaced by FAKE_DIR/hosts/H/root (its own files under
// the same absolute paths), and /proc/net by FAKE_DIR/hosts/H/proc/net when that exists; its
// $HOME is the path in FAKE_DIR/hosts/H/home when that file exists.
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './tmp.js';

/** What one fake program does: print, then exit with a code, or sleep until killed. */
export interface Act {
  exit?: number;
  stdout?: string;
  stderr?: string;
  sleep?: boolean;
}

/**
 * Keyed `"<host> <prog> <subcommand>"`, `"* <prog> <subcommand>"` or `"<host> ssh"`; the host
 * of a local (non-ssh) run is `local`.
 */
export type Behavior = Record<string, Act>;

export interface FakeCall {
  prog: 'ssh' | 'docker' | 'spark';
  argv: string[];
  host: string;
  pid: number;
}

export interface FakeNodes {
  bin: string;
  env(behavior?: Behavior, extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  /** Gives the host its own $HOME (what `printf %s "$HOME"` over ssh answers there). */
  setHome(host: string, home: string): void;
  calls(): FakeCall[];
  /** The hosts whose `docker logs` has printed its line (written before, not after, the mark). */
  logsPrinted(): string[];
}

const COMMON = `
# rec PROG HOST ARG...: the call, as call N (the first number free: taken by noclobber's
# O_EXCL create, so calls at once never share one, and in the order they began); N.rec holds
# it whole once N.done exists. No program runs: a fake called hundreds of times stays cheap.
rec() {
  set -C
  n=0
  until { true > "$FAKE_DIR/calls/$n"; } 2>/dev/null; do n=$((n + 1)); done
  set +C
  f=$FAKE_DIR/calls/$n
  { printf '%s\\0' "$1" "$2" "$$"; shift 2; printf '%s\\0' "$@"; } > "$f.rec" && true > "$f.done"
}
# act KEY: behave as the test's files for KEY say; returns 1 when there are none. The file's
# name is KEY with each blank a dot and each * an underscore (spelled out in sh: a fake called
# hundreds of times in a test runs no program it can do without).
act() {
  k=$1; b=
  while [ -n "$k" ]; do
    c=\${k%"\${k#?}"}; k=\${k#?}
    case $c in ' ') c=. ;; '*') c=_ ;; esac
    b=$b$c
  done
  b=$FAKE_DIR/behavior/$b
  [ -e "$b.exit" ] || return 1
  [ -e "$b.out" ] && cat "$b.out"
  [ -e "$b.err" ] && cat "$b.err" >&2
  IFS= read -r code < "$b.exit" || :
  [ "$code" = sleep ] && exec sleep 100000
  exit "$code"
}
`;

const SSH = `
# Reads its arguments as OpenSSH does: options (-o takes the next argument, -oKEY=VALUE is one)
# up to \`--\` or the first other word, which is the destination; the rest is the command. A
# ProxyCommand among the options runs here, as ssh runs it. spark always puts \`--\` before the
# destination (an option-like host is then a host): a call without it is refused.
parse() {
  proxy= ; dashdash=0
  while [ $# -gt 0 ]; do
    o=
    case $1 in
      --) dashdash=1; shift; break ;;
      -o) o=\${2-}; shift; [ $# -gt 0 ] && shift ;;
      -o*) o=\${1#-o}; shift ;;
      -*) shift ;;
      *) break ;;
    esac
    case $o in [Pp]roxy[Cc]ommand=*) proxy=\${o#*=} ;; esac
  done
  host=\${1-}; left=$#
}
parse "$@"
rec ssh "$host" "$@"
shift $(($# - left)); [ $# -gt 0 ] && shift
if [ -n "$proxy" ]; then
  sh -c "$proxy" </dev/null
  echo 'kex_exchange_identification: Connection closed by remote host' >&2; exit 255
fi
[ $dashdash = 1 ] || { echo "fake ssh: the destination $host does not follow --" >&2; exit 255; }
act "$host ssh"
FAKE_HOST=$host; export FAKE_HOST
cmd=$*
hd=$FAKE_DIR/hosts/$host
[ -d "$hd/bin" ] && { PATH=$hd/bin:$PATH; export PATH; }
[ -f "$hd/home" ] && { IFS= read -r HOME < "$hd/home" || :; export HOME; }
# One sed for both rewrites, and none for a command that names neither path.
set --
if [ -n "\${FAKE_ROOT:-}" ] && [ -d "$hd/root" ]; then
  case $cmd in *"$FAKE_ROOT"*) set -- -e "s#$FAKE_ROOT#$hd/root#g" ;; esac
fi
if [ -d "$hd/proc/net" ]; then
  case $cmd in */proc/net*) set -- "$@" -e "s#/proc/net#$hd/proc/net#g" ;; esac
fi
[ $# -gt 0 ] && cmd=$(printf '%s\n' "$cmd" | sed "$@")
exec /bin/sh -c "$cmd"
`;

const DOCKER = `
host=\${FAKE_HOST:-local}
rec docker "$host" "$@"
act "$host docker $1" || act "* docker $1"
case $1 in
  run) echo 4f0c1e0000000000000000000000000000000000000000000000000000000000 ;;
  image) echo "sha256:\${FAKE_IMAGE_ID:-1111111111111111111111111111111111111111111111111111111111111111}" ;;
  logs) echo 'server booting'; : > "$FAKE_DIR/printed/$host"; exec sleep 100000 ;;
  inspect) echo 'exited 1 false' ;;
  stop) echo "$2" ;;
  rm) echo "Error response from daemon: No such container: $2" >&2; exit 1 ;;
esac
`;

const SPARK = `
host=\${FAKE_HOST:-local}
rec spark "$host" "$@"
act "$host spark $1" || act "* spark $1"
rank=-1; prev=
for a in "$@"; do [ "$prev" = --rank ] && rank=$a; prev=$a; done
case $1 in
  --version) echo 0.1.0 ;;
  preflight) echo 'spark: this fake answers no facts' >&2; exit 2 ;;
  gid) echo 3 ;;
  pack) echo 'packing layer 1' >&2; echo "{\\"bytes\\":$((1000 + rank)),\\"seconds\\":1,\\"layers\\":[1,14],\\"rank\\":$rank}" ;;
  verify) echo '{"ok":true}' ;;
esac
`;

export function fakeNodes(): FakeNodes {
  const dir = tempDir('spark-fake-');
  const bin = join(dir, 'bin');
  for (const d of [bin, join(dir, 'calls'), join(dir, 'behavior'), join(dir, 'printed')]) mkdirSync(d);
  const write = (name: string, body: string) => {
    const file = join(bin, name);
    writeFileSync(file, `#!/bin/sh\n${COMMON}\n${body}`);
    chmodSync(file, 0o755);
  };
  write('ssh', SSH);
  write('docker', DOCKER);
  write('spark', SPARK);
  const setBehavior = (behavior: Behavior) => {
    const bdir = join(dir, 'behavior');
    for (const [key, a] of Object.entries(behavior)) {
      const base = join(bdir, key.replace(/ /g, '.').replace(/\*/g, '_'));
      writeFileSync(`${base}.exit`, a.sleep ? 'sleep' : String(a.exit ?? 0));
      if (a.stdout !== undefined) writeFileSync(`${base}.out`, a.stdout);
      if (a.stderr !== undefined) writeFileSync(`${base}.err`, a.stderr);
    }
  };
  return {
    bin,
    env: (behavior = {}, extra = {}) => {
      setBehavior(behavior);
      return {
        ...process.env,
        PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        FAKE_DIR: dir,
        SPARK_SSH: '',
        SPARK_DOCKER: '',
        SPARK_REMOTE_BIN: '',
        ...extra,
      };
    },
    setHome: (host, home) => {
      mkdirSync(join(dir, 'hosts', host), { recursive: true });
      writeFileSync(join(dir, 'hosts', host, 'home'), home);
    },
    logsPrinted: () => readdirSync(join(dir, 'printed')),
    calls: () => {
      const cdir = join(dir, 'calls');
      if (!existsSync(cdir)) return [];
      return readdirSync(cdir)
        .filter((f) => f.endsWith('.done'))
        .map((f) => Number(f.slice(0, -'.done'.length)))
        .sort((a, b) => a - b)
        .map((n) => {
          const fields = readFileSync(join(cdir, `${n}.rec`), 'utf8').split('\0');
          fields.pop();
          const [prog, host, pid, ...argv] = fields;
          return { prog: prog as FakeCall['prog'], host: host!, pid: Number(pid), argv };
        });
    },
  };
}

/** Whether a process is still running (a zombie waiting to be reaped counts as ended). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** Polls until `check` returns a value (or throws after `ms`). */
export async function waitFor<T>(check: () => T | undefined, ms = 60_000): Promise<T> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`condition not met within ${ms} ms`);
}
