// `spark wrapper --emit-sh`: the entrypoint as a self-contained POSIX sh script, for images
// without Node. Every rank's SPARK_ENGRAM_ROWS is computed here and baked in; a node-local copy
// in SPARK_ENGRAM_DIR is read at start (sh-manifest.ts) and its manifest's ranges win; the RoCE
// GID scan runs in the script against sysfs with the same rule as `spark gid` (IPv4 ranges
// only). It uses shell builtins (read, printf, test, arithmetic; wc -c for a manifest's size
// when the image has it): any POSIX sh (tested under sh, dash and bash).
import type { RankLayerRange } from '../engram/ranges.js';
import { formatEngramRows } from '../engram/ranges.js';
import type { SplitRule } from '../domain/split-rule.js';
import { bakedTables, MANIFEST_SH, ROWS_SH } from './sh-manifest.js';
import { shSingleQuote } from '../remote/shell.js';

// What a user passes (the snapshot path) reaches the script only as one single-quoted word of
// an assignment, never in a comment or bare: a newline in a comment ends it, and the next line
// runs.
export interface EmitShInput {
  world: number;
  split: SplitRule;
  /** What the ranges were computed from (shown in the log line and the header). */
  source: string;
  /** ranks[r]: rank r's ranges. */
  ranks: RankLayerRange[][];
}


const PRELUDE = String.raw`
spark_say() { printf 'spark wrapper: %s\n' "$*" >&2; }
spark_fail() { spark_code=$1; shift; printf 'spark wrapper: %s\n' "$*" >&2; exit "$spark_code"; }

# spark_flag "FLAG..." ARGS...: the last value of any FLAG as "FLAG N" or "FLAG=N" -> spark_found
spark_flag() {
  spark_flags=$1; shift; spark_found=
  while [ $# -gt 0 ]; do
    for spark_f in $spark_flags; do
      case $1 in
        "$spark_f") [ $# -gt 1 ] && spark_found=$2 ;;
        "$spark_f"=*) spark_found=${'$'}{1#"$spark_f"=} ;;
      esac
    done
    shift
  done
}

# spark_count NAME VALUE MIN: a whole number >= MIN, leading zeros dropped -> spark_n
spark_count() {
  case $2 in ''|*[!0-9]*) spark_fail 2 "$1 must be a whole number >= $3, got '$2'" ;; esac
  spark_n=${'$'}{2#"${'$'}{2%%[!0]*}"}; [ -n "$spark_n" ] || spark_n=0
  [ "${'$'}{#spark_n}" -le 15 ] || spark_fail 2 "$1 must be a whole number >= $3, got '$2'"
  [ "$spark_n" -ge "$3" ] || spark_fail 2 "$1 must be a whole number >= $3, got '$2'"
}
`;

const RANK_AND_WORLD = String.raw`
spark_flag "--node-rank" "$@"; spark_argv_rank=$spark_found
spark_rank=
if [ -n "${'$'}{NODE_RANK:-}" ]; then spark_count NODE_RANK "$NODE_RANK" 0; spark_rank=$spark_n; spark_rank_from=NODE_RANK; fi
if [ -n "$spark_argv_rank" ]; then
  spark_count "the engine's --node-rank" "$spark_argv_rank" 0
  if [ -n "$spark_rank" ] && [ "$spark_rank" != "$spark_n" ]; then
    spark_fail 2 "NODE_RANK=$spark_rank but the engine is started with --node-rank $spark_n; they must agree"
  fi
  [ -n "$spark_rank" ] || { spark_rank=$spark_n; spark_rank_from=--node-rank; }
fi
[ -n "$spark_rank" ] || spark_fail 2 "NODE_RANK is not set and the engine has no --node-rank: the wrapper cannot tell which rows this rank owns"

spark_world=
if [ -n "${'$'}{SPARK_WORLD_SIZE:-}" ]; then
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
`;

const GID_SCAN = String.raw`
# --- RoCE GID index: NCCL's rule (zero and fe80::/64 entries skipped; NCCL_IB_ADDR_FAMILY,
# NCCL_IB_ROCE_VERSION_NUM and NCCL_IB_ADDR_RANGE honoured; lowest usable index wins) ---
spark_sysfs=${'$'}{SPARK_SYSFS:-/sys}
spark_family=AF_INET
[ "${'$'}{NCCL_IB_ADDR_FAMILY:-}" = AF_INET6 ] && spark_family=AF_INET6
spark_version=2
case ${'$'}{NCCL_IB_ROCE_VERSION_NUM:-} in ''|*[!0-9]*) ;; *) spark_version=$NCCL_IB_ROCE_VERSION_NUM ;; esac
# spark_ipv4 TEXT: dotted quad (no leading zeros, as inet_pton) -> spark_ip, else status 1
spark_ipv4() {
  case $1 in ''|*[!0-9.]*|*..*|.*|*.) return 1 ;; esac
  spark_oldifs=$IFS; IFS=.; set -f
  # shellcheck disable=SC2086
  set -- $1
  set +f; IFS=$spark_oldifs
  [ $# -eq 4 ] || return 1
  for spark_o in "$@"; do
    case $spark_o in 0?*) return 1 ;; esac
    [ "${'$'}{#spark_o}" -le 3 ] && [ "$spark_o" -le 255 ] || return 1
  done
  spark_ip=$(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 ))
}
spark_range=${'$'}{NCCL_IB_ADDR_RANGE:-}; spark_mask=; spark_base=
if [ -n "$spark_range" ]; then
  [ "$spark_family" = AF_INET ] || spark_fail 2 "NCCL_IB_ADDR_RANGE with AF_INET6 needs 'spark wrapper' (the sh wrapper checks IPv4 ranges only)"
  spark_bits=${'$'}{spark_range#*/}; spark_bits=${'$'}{spark_bits#"${'$'}{spark_bits%%[!0]*}"}; [ -n "$spark_bits" ] || spark_bits=0
  spark_ok=0
  case $spark_range in
    */*/*) ;;
    */*) case ${'$'}{spark_range#*/} in ''|*[!0-9]*|????*) ;; *) [ "$spark_bits" -le 32 ] && spark_ipv4 "${'$'}{spark_range%/*}" && spark_ok=1 ;; esac ;;
  esac
  if [ "$spark_ok" = 1 ]; then
    spark_base=$spark_ip
    if [ "$spark_bits" -eq 0 ]; then spark_mask=0; else spark_mask=$(( (0xffffffff << (32 - spark_bits)) & 0xffffffff )); fi
  else
    spark_say "warning: NCCL_IB_ADDR_RANGE='$spark_range' is not a valid AF_INET CIDR; NCCL ignores it"
  fi
fi

# spark_judge PORTDIR INDEX: spark_usable=1|0, spark_reason, spark_gid (empty when unconfigured)
spark_judge() {
  spark_gid=; spark_usable=0; spark_type=
  { read -r spark_gid < "$1/gids/$2"; } 2>/dev/null || { spark_gid=; return; }
  case $spark_gid in 0000:0000:0000:0000:0000:0000:0000:0000) spark_gid=; return ;; esac
  { read -r spark_type < "$1/gid_attrs/types/$2"; } 2>/dev/null || spark_type=
  case $spark_gid in
    0000:0000:0000:0000:0000:ffff:*|ff0e:0000:0000:0000:0000:ffff:*) spark_fam=AF_INET ;;
    *) spark_fam=AF_INET6 ;;
  esac
  case $spark_type in "IB/RoCE v1"*) spark_v=1 ;; "RoCE v2"*) spark_v=2 ;; *) spark_v= ;; esac
  case $spark_gid in fe80:0000:0000:0000:*) spark_reason="link-local"; return ;; esac
  [ "$spark_fam" = "$spark_family" ] || { spark_reason="$spark_fam, wanted $spark_family"; return; }
  [ -n "$spark_v" ] || { spark_reason="type '$spark_type'"; return; }
  [ "$spark_v" = "$spark_version" ] || { spark_reason="RoCE v$spark_v, wanted v$spark_version"; return; }
  if [ -n "$spark_mask" ]; then
    spark_g7=${'$'}{spark_gid#*:*:*:*:*:*:}; spark_g8=${'$'}{spark_g7#*:}; spark_g7=${'$'}{spark_g7%%:*}
    spark_ip=$(( (0x$spark_g7 << 16) | 0x$spark_g8 ))
    [ $(( (spark_ip ^ spark_base) & spark_mask )) -eq 0 ] || { spark_reason="outside $spark_range"; return; }
  fi
  spark_usable=1; spark_reason=
}

# spark_candidates PORTDIR: every configured entry with why it is not usable -> spark_list
spark_candidates() {
  spark_list=; spark_i=0
  while [ -e "$1/gids/$spark_i" ]; do
    spark_judge "$1" "$spark_i"
    if [ -n "$spark_gid" ]; then
      spark_list="$spark_list${'$'}{spark_list:+; }$spark_i $spark_gid ${'$'}{spark_type:-type unreadable}${'$'}{spark_reason:+ ($spark_reason)}"
    fi
    spark_i=$((spark_i + 1))
  done
  [ -n "$spark_list" ] || spark_list="no configured entries"
}

# spark_match DEV PORT: whether NCCL_IB_HCA syntax in spark_hca_items selects it (exit status)
spark_item_matches() {  # ITEM DEV PORT
  case $1 in *:*) spark_name=${'$'}{1%%:*}; spark_p=${'$'}{1#*:}; spark_p=${'$'}{spark_p%%[!0-9]*}; [ -n "$spark_p" ] || spark_p=0 ;;
    *) spark_name=$1; spark_p= ;; esac
  [ -n "$spark_name" ] || return 1
  if [ "$spark_hca_exact" = 1 ]; then [ "$2" = "$spark_name" ] || return 1
  else case $2 in "$spark_name"*) ;; *) return 1 ;; esac
  fi
  [ -z "$spark_p" ] || [ "$spark_p" = "$3" ]
}
spark_match() {
  spark_hit=0; spark_any=0
  spark_oldifs=$IFS; IFS=,; set -f
  for spark_item in $spark_hca_items; do
    [ -n "$spark_item" ] || continue
    spark_any=1
    if spark_item_matches "$spark_item" "$1" "$2"; then spark_hit=1; fi
  done
  set +f; IFS=$spark_oldifs
  [ "$spark_any" = 1 ] || spark_hit=1
  [ "$spark_hit" != "$spark_hca_exclude" ]
}

spark_problem() { spark_problems="$spark_problems${'$'}{spark_problems:+; }$*"; }

# spark_unmatched: every item of an include list must select some present port
spark_unmatched() {
  spark_oldifs=$IFS; IFS=,; set -f
  # shellcheck disable=SC2086
  set -- $spark_hca_items
  set +f; IFS=$spark_oldifs
  for spark_want in "$@"; do
    [ -n "$spark_want" ] || continue
    spark_found_any=0
    for spark_pd in "$spark_cls"/*/ports/*; do
      [ -d "$spark_pd" ] || continue
      spark_dev=${'$'}{spark_pd%/ports/*}
      if spark_item_matches "$spark_want" "${'$'}{spark_dev##*/}" "${'$'}{spark_pd##*/}"; then spark_found_any=1; fi
    done
    [ "$spark_found_any" = 1 ] || spark_problem "HCA '$spark_want' not found"
  done
}

spark_gid_note=
spark_hcas=${'$'}{B12X_ROCE_HCA:-${'$'}{NCCL_IB_HCA:-}}
spark_hca_var=NCCL_IB_HCA; [ -n "${'$'}{B12X_ROCE_HCA:-}" ] && spark_hca_var=B12X_ROCE_HCA
if [ "${'$'}{SPARK_SKIP_GID:-}" = 1 ]; then
  spark_gid_note="GID detection skipped (SPARK_SKIP_GID=1)"
elif [ -z "$spark_hcas" ]; then
  spark_gid_note="no B12X_ROCE_HCA or NCCL_IB_HCA: B12X_ROCE_GID_INDEX not set"
else
  spark_pinned=${'$'}{B12X_ROCE_GID_INDEX:-}
  if [ -n "$spark_pinned" ]; then spark_count B12X_ROCE_GID_INDEX "$spark_pinned" 0; spark_pinned=$spark_n; fi
  spark_cls=$spark_sysfs/class/infiniband
  [ -d "$spark_cls" ] || spark_fail 3 "$spark_cls does not exist: no RDMA devices visible (load the mlx5_ib driver, or run the container with /sys mounted and --device /dev/infiniband)"
  spark_hca_items=$spark_hcas; spark_hca_exclude=0; spark_hca_exact=0
  case $spark_hca_items in ^*) spark_hca_exclude=1; spark_hca_items=${'$'}{spark_hca_items#^} ;; esac
  case $spark_hca_items in =*) spark_hca_exact=1; spark_hca_items=${'$'}{spark_hca_items#=} ;; esac
  spark_problems=; spark_ports=; spark_index=; spark_disagree=0; spark_each=
  [ "$spark_hca_exclude" = 1 ] || spark_unmatched
  for spark_dev in "$spark_cls"/*; do
    for spark_pd in "$spark_dev"/ports/*; do
      [ -d "$spark_pd" ] || continue
      spark_hca=${'$'}{spark_dev##*/}; spark_port=${'$'}{spark_pd##*/}
      spark_match "$spark_hca" "$spark_port" || continue
      spark_ports="$spark_ports${'$'}{spark_ports:+, }$spark_hca:$spark_port"
      spark_name="$spark_hca port $spark_port"
      if [ -e "$spark_pd/link_layer" ]; then
        read -r spark_ll < "$spark_pd/link_layer" || spark_ll=
        [ "$spark_ll" = Ethernet ] || { spark_problem "$spark_name: link layer is $spark_ll, not RoCE (Ethernet)"; continue; }
      fi
      if [ -e "$spark_pd/state" ]; then
        read -r spark_st < "$spark_pd/state" || spark_st=
        case $spark_st in *ACTIVE*) ;; *) spark_problem "$spark_name: port state is '$spark_st', not ACTIVE"; continue ;; esac
      fi
      spark_pick=
      if [ -n "$spark_pinned" ]; then
        spark_judge "$spark_pd" "$spark_pinned"
        if [ "$spark_usable" = 1 ]; then spark_pick=$spark_pinned; else
          spark_candidates "$spark_pd"; spark_problem "$spark_name: pinned GID index $spark_pinned is not usable; candidates: $spark_list"; continue
        fi
      else
        spark_i=0
        while [ -e "$spark_pd/gids/$spark_i" ]; do
          spark_judge "$spark_pd" "$spark_i"
          if [ "$spark_usable" = 1 ]; then spark_pick=$spark_i; break; fi
          spark_i=$((spark_i + 1))
        done
        if [ -z "$spark_pick" ]; then
          spark_candidates "$spark_pd"
          spark_problem "$spark_name: no $spark_family RoCE v$spark_version GID entry${'$'}{spark_mask:+ in $spark_range}; candidates: $spark_list"
          continue
        fi
      fi
      spark_each="$spark_each${'$'}{spark_each:+, }$spark_hca:$spark_port -> $spark_pick"
      if [ -z "$spark_index" ]; then spark_index=$spark_pick; elif [ "$spark_index" != "$spark_pick" ]; then spark_disagree=1; fi
    done
  done
  [ -n "$spark_ports" ] || [ -n "$spark_problems" ] || spark_problem "no HCA port matches '$spark_hcas'"
  if [ -z "$spark_problems" ] && [ "$spark_disagree" = 1 ]; then
    spark_problem "the HCAs disagree ($spark_each); one GID index must be valid on every HCA of the node"
  fi
  if [ -n "$spark_problems" ]; then
    if [ -n "$spark_pinned" ]; then spark_fail 1 "B12X_ROCE_GID_INDEX=$spark_pinned is not usable for $spark_hca_var=$spark_hcas: $spark_problems"; fi
    spark_fail 1 "no single RoCE GID index for $spark_hca_var=$spark_hcas: $spark_problems"
  fi
  if [ -n "$spark_pinned" ]; then spark_verb=checked; else spark_verb=set; fi
  export B12X_ROCE_GID_INDEX="$spark_index"
  spark_gid_note="B12X_ROCE_GID_INDEX=$spark_index $spark_verb ($spark_ports)"
fi
`;

/** The whole script. Its behaviour matches `spark wrapper` for the baked snapshot and world. */
export function emitWrapperSh(input: EmitShInput): string {
  const cases = input.ranks
    .map((ranges, rank) => `  ${rank}) spark_rows=${shSingleQuote(formatEngramRows(ranges))} ;;`)
    .join('\n');
  const tables = bakedTables(input.ranks[0]?.map(({ layer, rows }) => ({ layer, rows })) ?? []);
  const header = `#!/bin/sh
# The Engram range and RoCE GID entrypoint for ${input.world} ranks (${input.split} split),
# generated by 'spark wrapper --emit-sh' from the snapshot or copy in spark_source below.
# Sets SPARK_ENGRAM_ROWS for this rank (NODE_RANK, else the engine's --node-rank) in the
# overlay's grammar (layer:lo:hi): the baked value below, or, when SPARK_ENGRAM_DIR holds a
# node-local copy (engram-local.json, spark-pack.json), its manifest's ranges, after checking
# the copy was made for this rank and world. A value already set must equal it (either
# grammar). Then B12X_ROCE_GID_INDEX from the HCAs in B12X_ROCE_HCA or NCCL_IB_HCA; logs one
# line, and replaces itself with the engine:
#   entrypoint = ["sh", "/spark-wrapper.sh", "python3", "-m", "sglang.launch_server"]
# Exit codes: 1 a check failed, 2 bad usage or input, 3 environment.
set -u
spark_baked_world=${input.world}
spark_split=${input.split}
spark_source=${shSingleQuote(input.source)}
spark_tables=${shSingleQuote(tables)}
[ $# -gt 0 ] || { printf 'spark wrapper: no engine command: %s python3 -m sglang.launch_server ...\\n' "$0" >&2; exit 2; }
`;
  const rows = `
case $spark_rank in
${cases}
  *) spark_fail 2 "rank $spark_rank is outside the world of $spark_baked_world ranks" ;;
esac
`;
  // sh's own exec would exit 127 (or 126) with its message, or run a file without a #! line as
  // a script; the Node wrapper says E_EXEC and exits 3, and the two promise the same exit codes.
  // A failed exec cannot be caught in sh (even \`command exec\` exits), so the engine is checked
  // first as execve would see it: a regular executable file (a name looked up in PATH), whose
  // first bytes are an ELF header or a #! line naming an interpreter that is one too.
  const tail = `
spark_engine=$1
case $spark_engine in
  */*) ;;
  *) spark_engine=$(command -v "$1" 2>/dev/null) || spark_engine=
     case $spark_engine in /*) ;; *) spark_fail 3 "cannot run the engine '$1' in PATH: not found (PATH=$PATH)" ;; esac ;;
esac
[ -f "$spark_engine" ] && [ -x "$spark_engine" ] || spark_fail 3 "cannot run the engine $1: not an executable file"
spark_elf=$(printf '\\177ELF')
{ IFS= read -r spark_first || [ -n "$spark_first" ]; } < "$spark_engine" 2>/dev/null || spark_first=
case $spark_first in
  "$spark_elf"*) ;;
  '#!'*) spark_interp=\${spark_first#??}; spark_interp=\${spark_interp#"\${spark_interp%%[! 	]*}"}; spark_interp=\${spark_interp%%[ 	]*}
     [ -f "$spark_interp" ] && [ -x "$spark_interp" ] || spark_fail 3 "cannot run the engine $1: its interpreter \${spark_interp:-(none)} is not an executable file" ;;
  *) spark_fail 3 "cannot run the engine $1: neither an ELF executable nor a #! script" ;;
esac
spark_say "rank $spark_rank of $spark_world ($spark_rank_from, $spark_world_from): SPARK_ENGRAM_ROWS=$spark_rows $spark_rows_verb ($spark_rows_from); $spark_gid_note; exec $*"
exec "$@"
`;
  return header + PRELUDE + MANIFEST_SH + RANK_AND_WORLD + rows + ROWS_SH + GID_SCAN + tail;
}
