# shellcheck shell=sh
# A fragment of entrypoint.sh: the RoCE GID index, chosen by the rule of src/net/gid.ts (which
# `spark gid` and `spark wrapper` run) against sysfs, IPv4 ranges only; the two are held
# together by the cases of test/fixtures/gid-choice.json. Sets and exports
# B12X_ROCE_GID_INDEX, and spark_gid_note for the log line.
# --- RoCE GID index: NCCL's rule (zero and fe80::/64 entries skipped; NCCL_IB_ADDR_FAMILY,
# NCCL_IB_ROCE_VERSION_NUM and NCCL_IB_ADDR_RANGE honoured; lowest usable index wins) ---
spark_sysfs=${SPARK_SYSFS:-/sys}
spark_family=AF_INET
[ "${NCCL_IB_ADDR_FAMILY:-}" = AF_INET6 ] && spark_family=AF_INET6
spark_version=2
case ${NCCL_IB_ROCE_VERSION_NUM:-} in ''|*[!0-9]*) ;; *) spark_version=$NCCL_IB_ROCE_VERSION_NUM ;; esac
# spark_ipv4 TEXT: dotted quad (no leading zeros, as inet_pton) -> spark_ip, else status 1
spark_ipv4() {
  case $1 in ''|*[!0-9.]*|*..*|.*|*.) return 1 ;; esac
  spark_oldifs=$IFS; IFS=.; set -f
  # Split on purpose, at the IFS set just above, with globbing off (set -f).
  # shellcheck disable=SC2086
  set -- $1
  set +f; IFS=$spark_oldifs
  [ $# -eq 4 ] || return 1
  for spark_o in "$@"; do
    case $spark_o in 0?*) return 1 ;; esac
    [ "${#spark_o}" -le 3 ] && [ "$spark_o" -le 255 ] || return 1
  done
  spark_ip=$(( ($1 << 24) | ($2 << 16) | ($3 << 8) | $4 ))
}
spark_range=${NCCL_IB_ADDR_RANGE:-}; spark_mask=; spark_base=
if [ -n "$spark_range" ]; then
  [ "$spark_family" = AF_INET ] || spark_fail 2 "NCCL_IB_ADDR_RANGE with AF_INET6 needs 'spark wrapper' (the sh wrapper checks IPv4 ranges only)"
  spark_bits=${spark_range#*/}; spark_bits=${spark_bits#"${spark_bits%%[!0]*}"}; [ -n "$spark_bits" ] || spark_bits=0
  spark_ok=0
  case $spark_range in
    */*/*) ;;
    */*) case ${spark_range#*/} in ''|*[!0-9]*|????*) ;; *) [ "$spark_bits" -le 32 ] && spark_ipv4 "${spark_range%/*}" && spark_ok=1 ;; esac ;;
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
    spark_g7=${spark_gid#*:*:*:*:*:*:}; spark_g8=${spark_g7#*:}; spark_g7=${spark_g7%%:*}
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
      spark_list="$spark_list${spark_list:+; }$spark_i $spark_gid ${spark_type:-type unreadable}${spark_reason:+ ($spark_reason)}"
    fi
    spark_i=$((spark_i + 1))
  done
  [ -n "$spark_list" ] || spark_list="no configured entries"
}

# spark_match DEV PORT: whether NCCL_IB_HCA syntax in spark_hca_items selects it (exit status)
spark_item_matches() {  # ITEM DEV PORT
  case $1 in *:*) spark_name=${1%%:*}; spark_p=${1#*:}; spark_p=${spark_p%%[!0-9]*}; [ -n "$spark_p" ] || spark_p=0 ;;
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

spark_problem() { spark_problems="$spark_problems${spark_problems:+; }$*"; }

# spark_unmatched: every item of an include list must select some present port
spark_unmatched() {
  spark_oldifs=$IFS; IFS=,; set -f
  # Split on purpose, at the IFS set just above, with globbing off (set -f).
  # shellcheck disable=SC2086
  set -- $spark_hca_items
  set +f; IFS=$spark_oldifs
  for spark_want in "$@"; do
    [ -n "$spark_want" ] || continue
    spark_found_any=0
    for spark_pd in "$spark_cls"/*/ports/*; do
      [ -d "$spark_pd" ] || continue
      spark_dev=${spark_pd%/ports/*}
      if spark_item_matches "$spark_want" "${spark_dev##*/}" "${spark_pd##*/}"; then spark_found_any=1; fi
    done
    [ "$spark_found_any" = 1 ] || spark_problem "HCA '$spark_want' not found"
  done
}

spark_gid_note=
spark_hcas=${B12X_ROCE_HCA:-${NCCL_IB_HCA:-}}
spark_hca_var=NCCL_IB_HCA; [ -n "${B12X_ROCE_HCA:-}" ] && spark_hca_var=B12X_ROCE_HCA
if [ "${SPARK_SKIP_GID:-}" = 1 ]; then
  spark_gid_note="GID detection skipped (SPARK_SKIP_GID=1)"
elif [ -z "$spark_hcas" ]; then
  spark_gid_note="no B12X_ROCE_HCA or NCCL_IB_HCA: B12X_ROCE_GID_INDEX not set"
else
  spark_pinned=${B12X_ROCE_GID_INDEX:-}
  if [ -n "$spark_pinned" ]; then spark_count B12X_ROCE_GID_INDEX "$spark_pinned" 0; spark_pinned=$spark_n; fi
  spark_cls=$spark_sysfs/class/infiniband
  [ -d "$spark_cls" ] || spark_fail 3 "$spark_cls does not exist: no RDMA devices visible (load the mlx5_ib driver, or run the container with /sys mounted and --device /dev/infiniband)"
  spark_hca_items=$spark_hcas; spark_hca_exclude=0; spark_hca_exact=0
  case $spark_hca_items in ^*) spark_hca_exclude=1; spark_hca_items=${spark_hca_items#^} ;; esac
  case $spark_hca_items in =*) spark_hca_exact=1; spark_hca_items=${spark_hca_items#=} ;; esac
  spark_problems=; spark_ports=; spark_index=; spark_disagree=0; spark_each=
  [ "$spark_hca_exclude" = 1 ] || spark_unmatched
  for spark_dev in "$spark_cls"/*; do
    for spark_pd in "$spark_dev"/ports/*; do
      [ -d "$spark_pd" ] || continue
      spark_hca=${spark_dev##*/}; spark_port=${spark_pd##*/}
      spark_match "$spark_hca" "$spark_port" || continue
      spark_ports="$spark_ports${spark_ports:+, }$spark_hca:$spark_port"
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
          spark_problem "$spark_name: no $spark_family RoCE v$spark_version GID entry${spark_mask:+ in $spark_range}; candidates: $spark_list"
          continue
        fi
      fi
      spark_each="$spark_each${spark_each:+, }$spark_hca:$spark_port -> $spark_pick"
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
  if [ -n "$spark_pinned" ]; then spark_verb=checked; else spark_verb='set'; fi
  export B12X_ROCE_GID_INDEX="$spark_index"
  spark_gid_note="B12X_ROCE_GID_INDEX=$spark_index $spark_verb ($spark_ports)"
fi
