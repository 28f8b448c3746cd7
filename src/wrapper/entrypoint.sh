#!/bin/sh
# `spark wrapper --emit-sh`: the container entrypoint as one self-contained POSIX sh script,
# for images without Node: src/wrapper/entrypoint.sh with its two fragments inlined and the
# values of the block below baked in (src/wrapper/emit-sh.ts).
#
# The generated script is the Engram range and RoCE GID entrypoint for the world and split in
# spark_baked_world and spark_split, made from the snapshot or copy in spark_source. It sets
# SPARK_ENGRAM_ROWS for this rank (NODE_RANK, else the engine's --node-rank) in the overlay's
# grammar (layer:lo:hi): the baked value, or, when SPARK_ENGRAM_DIR holds a node-local copy
# (engram-local.json, spark-pack.json), its manifest's ranges, after checking the copy was made
# for this rank and world. A value already set must equal it (either grammar). Then
# B12X_ROCE_GID_INDEX from the HCAs in B12X_ROCE_HCA or NCCL_IB_HCA, by the same rule as
# `spark gid`; logs one line, and replaces itself with the engine:
#   entrypoint = ["sh", "/spark-wrapper.sh", "python3", "-m", "sglang.launch_server"]
# Its behaviour matches `spark wrapper` for the baked snapshot and world. It uses shell builtins
# (read, printf, test, arithmetic; wc -c for a manifest's size when the image has it): any
# POSIX sh (tested under sh, dash and bash).
# Exit codes: 1 a check failed, 2 bad usage or input, 3 environment.
# shellcheck source-path=SCRIPTDIR
set -u
spark_baked_world=@WORLD@
spark_split=@SPLIT@
# Found again by their quotes: always single-quoted, like every rank's rows below.
spark_source=@SOURCE@
spark_tables=@TABLES@
[ $# -gt 0 ] || { printf 'spark wrapper: no engine command: %s python3 -m sglang.launch_server ...\n' "$0" >&2; exit 2; }

spark_say() { printf 'spark wrapper: %s\n' "$*" >&2; }
spark_fail() { spark_code=$1; shift; printf 'spark wrapper: %s\n' "$*" >&2; exit "$spark_code"; }

# spark_flag "FLAG..." ARGS...: the last value of any FLAG as "FLAG N" or "FLAG=N" -> spark_found
spark_flag() {
  spark_flags=$1; shift; spark_found=
  while [ $# -gt 0 ]; do
    for spark_f in $spark_flags; do
      case $1 in
        "$spark_f") [ $# -gt 1 ] && spark_found=$2 ;;
        "$spark_f"=*) spark_found=${1#"$spark_f"=} ;;
      esac
    done
    shift
  done
}

# spark_count NAME VALUE MIN: a whole number >= MIN, leading zeros dropped -> spark_n
spark_count() {
  case $2 in ''|*[!0-9]*) spark_fail 2 "$1 must be a whole number >= $3, got '$2'" ;; esac
  spark_n=${2#"${2%%[!0]*}"}; [ -n "$spark_n" ] || spark_n=0
  [ "${#spark_n}" -le 15 ] || spark_fail 2 "$1 must be a whole number >= $3, got '$2'"
  [ "$spark_n" -ge "$3" ] || spark_fail 2 "$1 must be a whole number >= $3, got '$2'"
}

. ./manifest-reader.sh

spark_flag "--node-rank" "$@"; spark_argv_rank=$spark_found
spark_rank=
if [ -n "${NODE_RANK:-}" ]; then spark_count NODE_RANK "$NODE_RANK" 0; spark_rank=$spark_n; spark_rank_from=NODE_RANK; fi
if [ -n "$spark_argv_rank" ]; then
  spark_count "the engine's --node-rank" "$spark_argv_rank" 0
  if [ -n "$spark_rank" ] && [ "$spark_rank" != "$spark_n" ]; then
    spark_fail 2 "NODE_RANK=$spark_rank but the engine is started with --node-rank $spark_n; they must agree"
  fi
  [ -n "$spark_rank" ] || { spark_rank=$spark_n; spark_rank_from=--node-rank; }
fi
[ -n "$spark_rank" ] || spark_fail 2 "NODE_RANK is not set and the engine has no --node-rank: the wrapper cannot tell which rows this rank owns"

spark_world=
if [ -n "${SPARK_WORLD_SIZE:-}" ]; then
  spark_count SPARK_WORLD_SIZE "$SPARK_WORLD_SIZE" 1; spark_world=$spark_n; spark_world_from=SPARK_WORLD_SIZE
else
  spark_flag "--nnodes" "$@"; spark_nnodes=$spark_found
  spark_flag "--tp --tp-size --tensor-parallel-size -tp" "$@"; spark_tp=$spark_found
  if [ -n "$spark_nnodes" ]; then spark_count "the engine's --nnodes" "$spark_nnodes" 1; spark_nnodes=$spark_n; fi
  if [ -n "$spark_tp" ]; then spark_count "the engine's tensor-parallel size" "$spark_tp" 1; spark_tp=$spark_n; fi
  if [ -n "$spark_nnodes" ] && [ -n "$spark_tp" ] && [ "$spark_nnodes" != "$spark_tp" ]; then
    spark_fail 2 "the engine has --nnodes $spark_nnodes but a tensor-parallel size of $spark_tp: the ranges are per node (NODE_RANK), so set SPARK_WORLD_SIZE to the number of ranks that split the Engram tables"
  fi
  if [ -n "$spark_nnodes" ]; then spark_world=$spark_nnodes; spark_world_from=--nnodes
  elif [ -n "$spark_tp" ]; then spark_world=$spark_tp; spark_world_from=--tp
  fi
fi
[ -n "$spark_world" ] || spark_fail 2 "the world size is unknown: set SPARK_WORLD_SIZE or pass --nnodes (or --tp) to the engine"
[ "$spark_world" = "$spark_baked_world" ] || spark_fail 2 "this script was generated for $spark_baked_world ranks but the world is $spark_world ($spark_world_from): regenerate it with spark wrapper --emit-sh --world $spark_world"
[ "$spark_rank" -lt "$spark_world" ] || spark_fail 2 "rank $spark_rank ($spark_rank_from) is outside the world of $spark_world ranks ($spark_world_from)"

# spark_rank_rows RANK ROWS...: the baked ROWS of rank RANK (one per rank, in rank order) -> spark_rows
spark_rank_rows() {
  [ "$1" -lt $(($# - 1)) ] || spark_fail 2 "rank $1 is outside the world of $spark_baked_world ranks"
  shift $(($1 + 1))
  spark_rows=$1
}
spark_rank_rows "$spark_rank" @RANK_ROWS@

spark_rows_from="$spark_split split of $spark_source"
spark_dir=${SPARK_ENGRAM_DIR:-}
if [ -n "$spark_dir" ]; then
  [ -e "$spark_dir" ] || spark_fail 2 "SPARK_ENGRAM_DIR=$spark_dir does not exist in the container: mount the snapshot or this node's copy there"
  spark_manifest=
  for spark_name in spark-pack.json engram-local.json; do
    if [ -e "$spark_dir/$spark_name" ]; then spark_manifest=$spark_dir/$spark_name; break; fi
  done
  if [ -n "$spark_manifest" ]; then
    { [ -f "$spark_manifest" ] && [ -r "$spark_manifest" ]; } || spark_fail 2 "$spark_manifest is not a readable regular file"
    spark_read_copy
    if [ -n "$spark_m_rank" ] && [ "$spark_m_rank/$spark_m_world" != "$spark_rank/$spark_world" ]; then
      case $spark_m_what in pack) spark_kind=pack ;; *) spark_kind=copy ;; esac
      spark_fail 2 "$spark_dir holds the rows of $spark_m_who, not rank $spark_rank of $spark_world's: mount this node's $spark_kind, or make it with spark pack --rank $spark_rank --world $spark_world"
    fi
    spark_rows=$spark_m_rows
    spark_rows_from="from the manifest of the $spark_m_what $spark_dir, $spark_m_who"
  fi
fi

# spark_norm VALUE: a SPARK_ENGRAM_ROWS value read in either grammar (L:lo:hi, or the older
# L:lo-hi) and written in the overlay's -> spark_normed; malformed is exit 2
spark_norm() {
  spark_bad="SPARK_ENGRAM_ROWS='$1' is not layer:lo:hi per layer, comma-separated, layers ascending (e.g. 1:0:96001542,14:0:96004170)"
  case $1 in ''|,*|*,|*,,*) spark_fail 2 "$spark_bad" ;; esac
  spark_oldifs=$IFS; IFS=,; set -f
  # Split on purpose, at the IFS set just above, with globbing off (set -f).
  # shellcheck disable=SC2086
  set -- $1
  set +f; IFS=$spark_oldifs
  spark_normed=; spark_prev=
  for spark_e in "$@"; do
    case $spark_e in *[!0-9:-]*|*:*:*:*|*-*-*|*:*-*:*|*-*:*) spark_fail 2 "$spark_bad" ;; [0-9]*:[0-9]*[:-][0-9]*) ;; *) spark_fail 2 "$spark_bad" ;; esac
    spark_r=${spark_e#*:}
    case ${spark_e%%:*}/${spark_r%%[:-]*}/${spark_r#*[:-]} in *//*|/*|*/) spark_fail 2 "$spark_bad" ;; esac
    spark_count SPARK_ENGRAM_ROWS "${spark_e%%:*}" 0; spark_l=$spark_n
    spark_count SPARK_ENGRAM_ROWS "${spark_r%%[:-]*}" 0; spark_lo=$spark_n
    spark_count SPARK_ENGRAM_ROWS "${spark_r#*[:-]}" 0; spark_hi=$spark_n
    [ "$spark_lo" -le "$spark_hi" ] || spark_fail 2 "$spark_bad"
    [ -z "$spark_prev" ] || [ "$spark_l" -gt "$spark_prev" ] || spark_fail 2 "$spark_bad"
    spark_prev=$spark_l
    spark_normed="$spark_normed${spark_normed:+,}$spark_l:$spark_lo:$spark_hi"
  done
}

spark_rows_verb='set'
if [ -n "${SPARK_ENGRAM_ROWS:-}" ]; then
  spark_norm "$SPARK_ENGRAM_ROWS"
  if [ "$spark_normed" != "$spark_rows" ]; then
    if [ -n "${spark_manifest:-}" ]; then
      spark_fail 1 "SPARK_ENGRAM_ROWS='$SPARK_ENGRAM_ROWS' disagrees with $spark_manifest, which gives $spark_rows (only those rows exist in the copy); unset it to let the wrapper set it"
    fi
    spark_fail 1 "SPARK_ENGRAM_ROWS='$SPARK_ENGRAM_ROWS' is not rank $spark_rank of $spark_world's $spark_split range $spark_rows; unset it to let the wrapper set it"
  fi
  spark_rows_verb=checked
  [ "$SPARK_ENGRAM_ROWS" = "$spark_rows" ] || spark_rows_verb="checked and rewritten in the overlay's grammar"
fi
export SPARK_ENGRAM_ROWS="$spark_rows"
. ./gid-scan.sh

# sh's own exec would exit 127 (or 126) with its message, or run a file without a #! line as
# a script; the Node wrapper says E_EXEC and exits 3, and the two promise the same exit codes.
# A failed exec cannot be caught in sh (even `command exec` exits), so the engine is checked
# first as execve would see it: a regular executable file (a name looked up in PATH), whose
# first bytes are an ELF header or a #! line naming an interpreter that is one too.
spark_engine=$1
case $spark_engine in
  */*) ;;
  *) spark_engine=$(command -v "$1" 2>/dev/null) || spark_engine=
     case $spark_engine in /*) ;; *) spark_fail 3 "cannot run the engine '$1' in PATH: not found (PATH=$PATH)" ;; esac ;;
esac
{ [ -f "$spark_engine" ] && [ -x "$spark_engine" ]; } || spark_fail 3 "cannot run the engine $1: not an executable file"
spark_elf=$(printf '\177ELF')
{ IFS= read -r spark_first || [ -n "$spark_first" ]; } < "$spark_engine" 2>/dev/null || spark_first=
case $spark_first in
  "$spark_elf"*) ;;
  '#!'*) spark_interp=${spark_first#??}; spark_interp=${spark_interp#"${spark_interp%%[! 	]*}"}; spark_interp=${spark_interp%%[ 	]*}
     { [ -f "$spark_interp" ] && [ -x "$spark_interp" ]; } || spark_fail 3 "cannot run the engine $1: its interpreter ${spark_interp:-(none)} is not an executable file" ;;
  *) spark_fail 3 "cannot run the engine $1: neither an ELF executable nor a #! script" ;;
esac
spark_say "rank $spark_rank of $spark_world ($spark_rank_from, $spark_world_from): SPARK_ENGRAM_ROWS=$spark_rows $spark_rows_verb ($spark_rows_from); $spark_gid_note; exec $*"
exec "$@"
