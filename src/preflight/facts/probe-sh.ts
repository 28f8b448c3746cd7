// The facts of a node without spark, gathered by a self-contained POSIX sh script sent over
// ssh (like `spark wrapper --emit-sh`): only sh builtins and the base tools of every Linux
// (od, dd, tr, wc, df, tail, head, uname, date), plus docker and nvidia-smi when present. Every
// value of arbitrary content travels hex-encoded (od), keyed by its index in the request, so
// the answer parses the same whatever the paths or files hold.
import { shQuote } from '../../remote/shell.js';
import { parseAddresses, parseListeners, parseNvidiaSmi, parseRoutes } from './parse.js';
import { imageFailure } from './collect.js';
import { miaDirScript, parseMiaDirLine } from './mia-dir.js';
import { TEXT_LIMIT, type FactsRequest, type MiaDirFact, type NodeFacts, type NodeHello, type PathKind, type SysfsDump } from './types.js';

const PRELUDE = String.raw`LC_ALL=C; export LC_ALL
hx() { od -An -v -tx1 | tr -d ' \n'; echo; }
kind() { if [ -d "$1" ]; then k=dir; elif [ -f "$1" ]; then k=file; elif [ -e "$1" ]; then k=other; else k=missing; fi; }
`;

/** The first answer: the node's name, home, clock, kernel and spark version. */
export function helloScript(spark: string): string {
  const s = shQuote(spark);
  return `${PRELUDE}printf 'spark-hello 1\\n'
t=$(date +%s%N 2>/dev/null); case $t in *[!0-9]*|'') t=$(date +%s)000 ;; *) t=\${t%??????} ;; esac
printf 'clock %s\\n' "$t"
printf 'home '; printf '%s' "$HOME" | hx
printf 'hostname '; { hostname 2>/dev/null || uname -n; } | hx
printf 'kernel '; uname -r | hx
if command -v ${s} >/dev/null 2>&1; then printf 'spark '; ${s} --version 2>/dev/null | hx; fi
printf 'end\\n'
`;
}

function words(list: readonly (string | number)[]): string {
  return list.map((x) => shQuote(String(x))).join(' ');
}

/** The probe for one request. Output: one record per line, `end` last. */
export function probeScript(request: FactsRequest): string {
  const lines = [PRELUDE, "printf 'spark-probe 1\\n'"];
  lines.push(`i=0; for p in ${words(request.paths)}; do kind "$p"; s=; [ $k = file ] && s=$(wc -c < "$p" 2>/dev/null | tr -d ' '); printf 'path %s %s %s\\n' $i $k "$s"; i=$((i+1)); done`);
  lines.push(
    `i=0; for p in ${words(request.texts)}; do if [ -f "$p" ] && [ -r "$p" ] && [ "$(wc -c < "$p" | tr -d ' ')" -le ${TEXT_LIMIT} ]; then printf 'text %s ' $i; hx < "$p"; ` +
      `else printf 'text %s -\\n' $i; fi; i=$((i+1)); done`,
  );
  lines.push(
    `i=0; for p in ${words(request.free)}; do d=$p; while [ ! -e "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done; ` +
      `kb=$(df -Pk "$d" 2>/dev/null | tail -n 1 | { read -r a b c f r; printf '%s' "$f"; }); printf 'free %s %s\\n' $i "\${kb:--}"; i=$((i+1)); done`,
  );
  const procNet = shQuote(request.procNet);
  if (request.ports.length > 0) lines.push(`printf 'listen '; cat ${procNet}/tcp ${procNet}/tcp6 2>/dev/null | hx`);
  if (request.images.length > 0) {
    const docker = shQuote(request.docker);
    lines.push(
      `i=0; for ref in ${words(request.images)}; do if out=$(${docker} image inspect --format '{{.Id}}' "$ref" 2>&1); then printf 'image %s id ' $i; printf '%s' "$out" | hx; ` +
        `else c=$?; printf 'image %s fail %s ' $i $c; printf '%s' "$out" | hx; fi; i=$((i+1)); done`,
    );
    lines.push(`if command -v nvidia-smi >/dev/null 2>&1; then printf 'nvidia '; nvidia-smi 2>/dev/null | head -c 8192 | hx; fi`);
  }
  lines.push(`printf 'routes '; cat ${procNet}/route 2>/dev/null | hx`);
  lines.push(`printf 'addrs '; { ip -o addr show 2>/dev/null || hostname -I 2>/dev/null; } | hx`);
  lines.push(sysfsPart(request.sysfs));
  lines.push(snapshotPart(request));
  if (request.miaDir !== undefined) lines.push(miaDirScript(request.miaDir));
  lines.push("printf 'end\\n'");
  return lines.join('\n') + '\n';
}

function sysfsPart(root: string): string {
  return String.raw`sys=${shQuote(root)}
if [ -d "$sys/class/infiniband" ]; then
  printf 'sysdir class/infiniband\n'
  for h in "$sys"/class/infiniband/*; do
    for p in "$h"/ports/*; do
      [ -d "$p" ] || continue
      printf 'sysdir %s\n' "${'$'}{p#"$sys"/}"
      for f in "$p"/link_layer "$p"/state "$p"/gids/* "$p"/gid_attrs/types/* "$p"/gid_attrs/ndevs/*; do
        [ -f "$f" ] || continue
        if IFS= read -r v 2>/dev/null < "$f"; then printf 'sys %s ' "${'$'}{f#"$sys"/}"; printf '%s' "$v" | hx; fi
      done
    done
  done
fi
for n in "$sys"/class/net/*; do [ -e "$n" ] && printf 'sysdir class/net/%s\n' "${'$'}{n##*/}"; done
`;
}

function snapshotPart(request: FactsRequest): string {
  const tries = request.snapshot.map((c, i) =>
    'dir' in c
      ? `[ -z "$snap" ] && snap_dir ${i} ${shQuote(c.dir)} ${c.notCopy ? 1 : 0}`
      : `[ -z "$snap" ] && snap_model ${i} ${shQuote(c.modelDir)}`,
  );
  const copy = request.copyDir === undefined ? '' : `c=${shQuote(request.copyDir)}
if [ -f "$c/engram-local.json" ] || [ -f "$c/spark-pack.json" ]; then printf 'copy '; printf '%s' "$c" | hx; dump_files "$c" "$c"/*.safetensors; fi`;
  return String.raw`# dump_files DIR SHARD...: the small files a reader needs, and each shard's size and header.
dump_files() {
  d=$1; shift
  for m in config.json model.safetensors.index.json engram-local.json spark-pack.json; do
    [ -f "$d/$m" ] && { printf 'sfile %s ' $m; head -c ${TEXT_LIMIT} "$d/$m" | hx; }
  done
  for f in "$@"; do
    [ -f "$f" ] || continue
    size=$(wc -c < "$f" | tr -d ' ')
    b=$(od -An -v -tx1 -N8 "$f" | tr -d ' 
')
    n=-1
    if [ ${'$'}{#b} = 16 ]; then
      n=$((0x$(printf '%s' "$b" | sed 's/\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)\(..\)/\8\7\6\5\4\3\2\1/')))
    fi
    printf 'shard %s %s ' "$size" "$n"; printf '%s' "${'$'}{f##*/}" | tr -d '
' | hx
    if [ "$n" -ge 0 ] && [ "$n" -le 100000000 ] && [ $((n + 8)) -le "$size" ]; then printf 'header '; tail -c +9 "$f" | head -c "$n" | hx; fi
  done
}
snap=
# snap_dir CANDIDATE DIR NOTCOPY: a checkpoint directory or file (with NOTCOPY=1, not a node-local copy).
snap_dir() { if [ -f "$2" ]; then case $2 in *.safetensors) snap=$2; cand=$1 ;; esac
  elif [ -f "$2/model.safetensors.index.json" ] || [ -f "$2/model.safetensors" ]; then
    if [ "$3" = 1 ] && { [ -f "$2/engram-local.json" ] || [ -f "$2/spark-pack.json" ]; }; then return; fi
    snap=$2; cand=$1
  fi; }
# snap_model CANDIDATE MODELDIR: refs/main (a 40-hex commit), else the only snapshot, as huggingface_hub.
commit() { case $1 in *[!0-9a-f]*) return 1 ;; esac; [ ${'$'}{#1} = 40 ]; }
snap_model() { d=
  if [ -f "$2/refs/main" ]; then r=$(cat "$2/refs/main"); commit "$r" && d=$2/snapshots/$r
  else n=0; for x in "$2"/snapshots/*; do [ -d "$x" ] && commit "${'$'}{x##*/}" && { d=$x; n=$((n+1)); }; done; [ $n = 1 ] || d=; fi
  [ -n "$d" ] && snap_dir "$1" "$d" 0; }
${tries.join('\n')}
if [ -n "$snap" ]; then
  printf 'snapshot %s ' $cand; printf '%s' "$snap" | hx
  if [ -d "$snap" ]; then dump_files "$snap" "$snap"/*.safetensors; else dump_files "${'$'}{snap%/*}" "$snap"; fi
fi
${copy}
`;
}

/** Hex (od's output, spaces removed) back to bytes. */
function unhex(hex: string): Buffer {
  if (!/^[0-9a-f]*$/i.test(hex) || hex.length % 2 !== 0) throw new Error(`bad hex field (${hex.slice(0, 20)}…)`);
  return Buffer.from(hex, 'hex');
}

const text = (hex: string) => unhex(hex).toString('utf8');

/** Parses the hello answer; throws on anything that is not one. */
export function parseHello(out: string, sentMs: number, receivedMs: number): NodeHello {
  const lines = out.split('\n');
  const start = lines.indexOf('spark-hello 1');
  if (start < 0 || !lines.includes('end')) throw new Error(`not a hello answer: ${out.trim().split('\n').at(-1) ?? 'no output'}`);
  const hello: NodeHello = { hostname: '', home: '', clockMs: 0, sentMs, receivedMs };
  for (const line of lines.slice(start + 1)) {
    const [tag, value = ''] = line.split(' ');
    if (tag === 'clock') hello.clockMs = Number(value);
    else if (tag === 'home') hello.home = text(value);
    else if (tag === 'hostname') hello.hostname = text(value).trim();
    else if (tag === 'kernel') hello.kernel = text(value).trim();
    else if (tag === 'spark') hello.spark = text(value).trim();
  }
  if (!hello.home.startsWith('/')) throw new Error(`the node reported no home directory ("${hello.home}")`);
  return hello;
}

/** A directory as the probe dumped it: small files whole, shards by size and header bytes. */
export interface ProbedDir {
  path: string;
  files: Record<string, string>;
  shards: { name: string; size: number; headerLength: number; header?: Buffer }[];
}

/** The raw snapshot answer of the probe; preflight validates it like a local one (see rebuild.ts). */
export interface ProbedSnapshot extends ProbedDir {
  candidate: number;
}

export interface ProbeAnswer {
  facts: NodeFacts;
  snapshot?: ProbedSnapshot;
  copy?: ProbedDir;
}

/** Parses the probe's answer into facts (the snapshot and copy still raw). */
export function parseProbe(out: string, request: FactsRequest, hello: NodeHello): ProbeAnswer {
  const lines = out.split('\n');
  const start = lines.indexOf('spark-probe 1');
  if (start < 0 || !lines.includes('end')) throw new Error(`the probe did not finish: ${out.trim().split('\n').at(-1) ?? 'no output'}`);
  const facts: NodeFacts = {
    ...hello,
    via: 'probe',
    paths: request.paths.map(() => ({ kind: 'missing' as PathKind })),
    texts: request.texts.map(() => null),
    free: request.free.map(() => null),
    ports: request.ports.map(() => 'free' as const),
    images: request.images.map(() => ({ error: 'no answer' })),
    addresses: [],
    routes: [],
  };
  const sysfs: SysfsDump = { dirs: [], files: {} };
  let snapshot: ProbedSnapshot | undefined;
  let copy: ProbedDir | undefined;
  let dump: ProbedDir | undefined;
  let listeners = new Set<number>();
  let mia: MiaDirFact | undefined;
  for (const line of lines.slice(start + 1)) {
    const f = line.split(' ');
    const tag = f[0];
    const i = Number(f[1]);
    if (tag === 'path' && i < facts.paths.length) {
      const kind = f[2] as PathKind;
      facts.paths[i] = kind === 'file' && /^\d+$/.test(f[3] ?? '') ? { kind, size: Number(f[3]) } : { kind };
    } else if (tag === 'text' && i < facts.texts.length) facts.texts[i] = f[2] === '-' ? null : text(f[2] ?? '');
    else if (tag === 'free' && i < facts.free.length) facts.free[i] = /^\d+$/.test(f[2] ?? '') ? Number(f[2]) * 1024 : null;
    else if (tag === 'listen') listeners = parseListeners(text(f[1] ?? ''));
    else if (tag === 'image' && i < facts.images.length) {
      facts.images[i] = f[2] === 'id' ? { id: text(f[3] ?? '').trim() } : imageFailure(Number(f[3]), text(f[4] ?? ''));
    } else if (tag === 'nvidia') Object.assign(facts, parseNvidiaSmi(text(f[1] ?? '')));
    else if (tag === 'routes') facts.routes = parseRoutes(text(f[1] ?? ''));
    else if (tag === 'addrs') facts.addresses = parseAddresses(text(f[1] ?? ''));
    else if (tag === 'sysdir') sysfs.dirs.push(f.slice(1).join(' '));
    else if (tag === 'sys') sysfs.files[f[1] ?? ''] = text(f[2] ?? '');
    else if (tag === 'snapshot') {
      snapshot = { candidate: i, path: text(f[2] ?? ''), files: {}, shards: [] };
      dump = snapshot;
    } else if (tag === 'copy') {
      copy = { path: text(f[1] ?? ''), files: {}, shards: [] };
      dump = copy;
    }
    else if (tag === 'sfile' && dump) dump.files[f[1] ?? ''] = text(f[2] ?? '');
    else if (tag === 'shard' && dump) dump.shards.push({ name: text(f[3] ?? ''), size: Number(f[1]), headerLength: Number(f[2]) });
    else if (tag === 'header' && dump?.shards.length) dump.shards.at(-1)!.header = unhex(f[1] ?? '');
    else if (tag === 'mdir' || tag === 'mfile' || tag === 'mident') mia = parseMiaDirLine(f, mia, unhex);
  }
  if (mia) facts.miaDir = mia;
  facts.ports = request.ports.map((p) => (listeners.has(p) ? 'in-use' : 'free'));
  facts.sysfs = sysfs;
  return { facts, ...(snapshot ? { snapshot } : {}), ...(copy ? { copy } : {}) };
}
