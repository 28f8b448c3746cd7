#!/bin/sh
# The facts of a node without spark, for one request (types.ts, FactsRequest), sent over ssh as
# sh -c like `spark wrapper --emit-sh` (probe-sh.ts fills in its placeholders, each value quoted by
# src/remote/sh-template.ts, and parses the answer): only sh builtins and the base tools of
# every Linux (od, dd, tr, wc, df, tail, head, uname, date), plus docker and nvidia-smi when
# present. Output: one record per line, keyed by each value's index in the request, `end` last.
# Each list of the request is read with set --; an optional part is a list of none or one.
# shellcheck source-path=SCRIPTDIR
. ./node-lib.sh
# kind PATH: dir, file, other or missing (following links) -> k
kind() { if [ -d "$1" ]; then k='dir'; elif [ -f "$1" ]; then k='file'; elif [ -e "$1" ]; then k='other'; else k='missing'; fi; }
proc_net=@PROC_NET@
sys=@SYSFS@
docker=@DOCKER@
text_limit=@TEXT_LIMIT@
listen=@LISTEN@
# The manifests that make a directory a node-local copy (the registry's COPY_MANIFESTS).
copy_manifests=@COPY_MANIFESTS@
printf 'spark-probe 1\n'
set -- @PATHS@
i=0; for p in "$@"; do kind "$p"; s=; [ "$k" = file ] && size_of "$p" && s=$z; printf 'path %s %s %s\n' "$i" "$k" "$s"; i=$((i+1)); done
set -- @TEXTS@
i=0; for p in "$@"; do
  if [ -f "$p" ] && [ -r "$p" ] && size_of "$p" && [ "$z" -le "$text_limit" ]; then printf 'text %s ' "$i"; hx < "$p"
  else printf 'text %s -\n' "$i"; fi; i=$((i+1))
done
set -- @FREE@
i=0; for p in "$@"; do
  d=$p; while [ ! -e "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done
  # df's fourth column: the space an unprivileged writer has
  kb=$(df -Pk "$d" 2>/dev/null | tail -n 1 | { read -r _ _ _ f _; printf '%s' "$f"; }); printf 'free %s %s\n' "$i" "${kb:--}"; i=$((i+1))
done
[ "$listen" = 1 ] && { printf 'listen '; cat "$proc_net"/tcp "$proc_net"/tcp6 2>/dev/null | hx; }
set -- @IMAGES@
i=0; for ref in "$@"; do
  if out=$("$docker" image inspect --format '{{.Id}}' "$ref" 2>&1); then printf 'image %s id ' "$i"; printf '%s' "$out" | hx
  else c=$?; printf 'image %s fail %s ' "$i" "$c"; printf '%s' "$out" | hx; fi; i=$((i+1))
done
# The GPU, asked only when the request has images (a node that runs containers).
if [ "$i" -gt 0 ] && command -v nvidia-smi >/dev/null 2>&1; then printf 'nvidia '; nvidia-smi 2>/dev/null | head -c 8192 | hx; fi
printf 'routes '
# cat, not a redirection: a missing file still gives hx its empty input, and the record its newline.
# shellcheck disable=SC2002
cat "$proc_net"/route 2>/dev/null | hx
printf 'addrs '; { ip -o addr show 2>/dev/null || hostname -I 2>/dev/null; } | hx

# The RDMA part of sysfs, for the GID rules that run on the machine asking: its directories, then
# every file's first line in one record (a port has hundreds of GID files; one hx for them all),
# `NAME<tab>LINE` a line each.
if [ -d "$sys/class/infiniband" ]; then
  printf 'sysdir class/infiniband\n'
  for p in "$sys"/class/infiniband/*/ports/*; do [ -d "$p" ] && printf 'sysdir %s\n' "${p#"$sys"/}"; done
  printf 'sysfiles '
  for p in "$sys"/class/infiniband/*/ports/*; do
    [ -d "$p" ] || continue
    for f in "$p"/link_layer "$p"/state "$p"/gids/* "$p"/gid_attrs/types/* "$p"/gid_attrs/ndevs/*; do
      [ -f "$f" ] || continue
      if IFS= read -r v 2>/dev/null < "$f"; then printf '%s\t%s\n' "${f#"$sys"/}" "$v"; fi
    done
  done | hx
fi
for n in "$sys"/class/net/*; do [ -e "$n" ] && printf 'sysdir class/net/%s\n' "${n##*/}"; done

# dump_files DIR SHARD...: the small files a reader needs, and each shard's size and header.
dump_files() {
  d=$1; shift
  # The names are plain words (no blanks): they split as meant.
  # shellcheck disable=SC2086
  for m in config.json model.safetensors.index.json $copy_manifests; do
    [ -f "$d/$m" ] && { printf 'sfile %s ' $m; head -c "$text_limit" "$d/$m" | hx; }
  done
  for f in "$@"; do
    [ -f "$f" ] || continue
    size_of "$f"; size=$z
    # The header's length: 8 bytes little-endian, read as decimals (the loop's list is already expanded).
    # shellcheck disable=SC2046
    set -- $(od -An -v -tu1 -N8 "$f")
    n=-1
    [ $# = 8 ] && n=$(( $1 | $2 << 8 | $3 << 16 | $4 << 24 | $5 << 32 | $6 << 40 | $7 << 48 | $8 << 56 ))
    name=${f##*/}
    printf 'shard %s %s ' "$size" "$n"
    case $name in *'
'*) printf '%s' "$name" | tr -d '\n' | hx ;; *) printf '%s' "$name" | hx ;; esac
    if [ "$n" -ge 0 ] && [ "$n" -le 100000000 ] && [ $((n + 8)) -le "$size" ]; then printf 'header '; od -An -v -tx1 -j8 -N"$n" "$f" | tr -d ' \n'; echo; fi
  done
}
# has_copy DIR: whether DIR holds a copy's manifest.
has_copy() {
  # Plain words, as above.
  # shellcheck disable=SC2086
  for m in $copy_manifests; do [ -f "$1/$m" ] && return 0; done
  return 1
}
snap=
# snap_dir CANDIDATE DIR NOTCOPY: a checkpoint directory or file (with NOTCOPY=1, not a node-local copy).
snap_dir() { if [ -f "$2" ]; then case $2 in *.safetensors) snap=$2; cand=$1 ;; esac
  elif [ -f "$2/model.safetensors.index.json" ] || [ -f "$2/model.safetensors" ]; then
    if [ "$3" = 1 ] && has_copy "$2"; then return; fi
    snap=$2; cand=$1
  fi; }
# snap_model CANDIDATE MODELDIR: refs/main (a 40-hex commit), else the only snapshot, as huggingface_hub.
commit() { case $1 in *[!0-9a-f]*) return 1 ;; esac; [ ${#1} = 40 ]; }
snap_model() { d=
  if [ -f "$2/refs/main" ]; then r=$(cat "$2/refs/main"); commit "$r" && d=$2/snapshots/$r
  else n=0; for x in "$2"/snapshots/*; do [ -d "$x" ] && commit "${x##*/}" && { d=$x; n=$((n+1)); }; done; [ $n = 1 ] || d=; fi
  [ -n "$d" ] && snap_dir "$1" "$d" 0; }
# The candidates in order, three words each: dir DIR NOTCOPY, or model MODELDIR -; the first
# that holds a checkpoint is the snapshot.
set -- @SNAPSHOT_CANDIDATES@
i=0
while [ $# -ge 3 ] && [ -z "$snap" ]; do
  case $1 in dir) snap_dir "$i" "$2" "$3" ;; model) snap_model "$i" "$2" ;; esac
  shift 3; i=$((i+1))
done
if [ -n "$snap" ]; then
  printf 'snapshot %s ' "$cand"; printf '%s' "$snap" | hx
  if [ -d "$snap" ]; then dump_files "$snap" "$snap"/*.safetensors; else dump_files "${snap%/*}" "$snap"; fi
fi
set -- @COPY_DIRS@
for c in "$@"; do
  if has_copy "$c"; then printf 'copy '; printf '%s' "$c" | hx; dump_files "$c" "$c"/*.safetensors; fi
done
. ./reader-dir.sh
printf 'end\n'
