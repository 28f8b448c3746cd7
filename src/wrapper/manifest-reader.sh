# shellcheck shell=sh
# A fragment of entrypoint.sh: the reader of a node-local copy in SPARK_ENGRAM_DIR, in shell
# builtins. The overlay serves only the rows a sparse copy holds and parses SPARK_ENGRAM_ROWS
# too (hostnode mode warns on disagreement, staged mode raises), so the script exports the
# manifest's ranges, and refuses a copy made for another rank or world, as `spark wrapper` does.
#
# The JSON reader checks the whole text against JSON's grammar and the manifest grammar every
# reader of a copy shares (docs/packed-format.md, "The manifest grammar": the same verdict as
# the Node and Python readers, held together by test/fixtures/manifest-grammar.json), and keeps
# only what it needs: `layers` ({"L": [lo, hi]} of a sparse copy, or [{layer, start, end}] of a
# dense/page pack) and rank/world (under `spark` in a sparse copy, at the top of a pack).
# A JSON string never spans a line, so each line split at '"' leaves the structure in the even
# fields and the strings in the odd ones (an escaped quote, one after an odd run of
# backslashes, rejoins its string); keys are matched by depth, so no string or nested object
# can pass for them. It reads pretty-printed and one-line JSON alike. Its cost is linear in the
# file, which may hold at most spark_j_max_bytes: the text between strings is split at commas
# in one pass, a layer must be one of the snapshot's tables (so the ranges to sort are at most
# the tables), and depth and keys per object are bounded (the limits of
# src/engram/manifest-lexicon.ts, baked in).
# Without spark's metadata the rank and world are inferred like `spark engram-ranges` infers
# them (floor and front; the row counts are the snapshot's, in spark_tables), else left unknown.
spark_j_max_bytes=@MAX_MANIFEST_BYTES@
spark_j_max_depth=@MAX_DEPTH@
spark_j_max_keys=@MAX_OBJECT_KEYS@
# --- A node-local copy in SPARK_ENGRAM_DIR: its manifest's ranges are what the overlay serves ---
spark_cr=$(printf '\r')
spark_bom=$(printf '\357\273\277')
spark_delims="[]}[{:, 	$spark_cr]"
spark_nl='
'
spark_json_fail() { spark_fail 2 "$spark_manifest: $*; re-make the copy (spark pack)"; }
spark_j_unexpected() { spark_json_fail "unexpected $1 on line $spark_j_line_no (not JSON)"; }

# spark_j_key KEY: the key of the object being read; a key twice, or too many, is refused. Each
# open object's keys are in spark_j_keys_DEPTH (eval names the variable only, never a value):
# a search from the last key of one long string would cost dash time quadratic in it.
spark_j_key() {
  case $1 in *\\u003[0-9]*) spark_json_fail "a key spells a digit with an escape (\\u0030-\\u0039)" ;; esac
  spark_j_d=${#spark_j_stack}; spark_j_cur=; spark_j_n=0
  eval "spark_j_cur=\$spark_j_keys_$spark_j_d; spark_j_n=\$spark_j_kc_$spark_j_d"
  case $spark_j_cur in *"$spark_nl$1$spark_nl"*) spark_json_fail "an object has the key \"$1\" twice (readers disagree on which one counts)" ;; esac
  [ "$spark_j_n" -lt "$spark_j_max_keys" ] || spark_json_fail "an object has more than $spark_j_max_keys keys"
  eval "spark_j_keys_$spark_j_d=\$spark_j_cur\$1\$spark_nl; spark_j_kc_$spark_j_d=$((spark_j_n + 1))"
  case $spark_j_d in 1) spark_j_k1=$1; spark_j_k2= ;; 2) spark_j_k2=$1 ;; 3) spark_j_k3=$1 ;; esac
}
# spark_j_value KIND TEXT: a scalar (s string, v anything else) where the reader stands
spark_j_value() {
  case $spark_j_stack in
    o) case $spark_j_k1 in rank) spark_t_rank=$1$2 ;; world) spark_t_world=$1$2 ;; esac ;;
    oo) case $spark_j_k1 in
          spark) case $spark_j_k2 in rank) spark_s_rank=$1$2 ;; world) spark_s_world=$1$2 ;; esac ;;
          layers) [ "$spark_j_layers" != object ] || spark_json_fail "layers.$spark_j_k2 must be [lo, hi]" ;;
        esac ;;
    ooa) [ "$spark_j_k1/$spark_j_layers" != layers/object ] || spark_j_pair="$spark_j_pair $1$2" ;;
    oao) if [ "$spark_j_k1/$spark_j_layers" = layers/array ]; then
           case $spark_j_k3 in layer) spark_j_el_layer=$1$2 ;; start) spark_j_el_lo=$1$2 ;; end) spark_j_el_hi=$1$2 ;; esac
         fi ;;
  esac
}
spark_j_open() {
  [ "${#spark_j_stack}" -lt "$spark_j_max_depth" ] || spark_json_fail "it nests objects and arrays deeper than $spark_j_max_depth"
  if [ "$spark_j_stack" = o ] && [ "$spark_j_k1" = layers ]; then
    spark_j_entries=; if [ "$1" = o ]; then spark_j_layers=object; else spark_j_layers=array; fi
  fi
  case $spark_j_stack$1 in ooa) spark_j_pair= ;; oao) spark_j_el_layer=; spark_j_el_lo=; spark_j_el_hi= ;; esac
  spark_j_stack=$spark_j_stack$1
  if [ "$1" = o ]; then
    spark_j_want=key_or_close
    eval "spark_j_keys_${#spark_j_stack}=\$spark_nl; spark_j_kc_${#spark_j_stack}=0"
  else
    spark_j_want=value_or_close
  fi
}
spark_j_close() {
  case $spark_j_stack in *"$1") ;; *) spark_json_fail "its brackets do not match (line $spark_j_line_no)" ;; esac
  if [ "$spark_j_k1" = layers ]; then
    case $spark_j_stack/$spark_j_layers in
      ooa/object)
        # Split at spaces on purpose: the pair is two scalars the grammar checked (vLO vHI), no glob.
        # shellcheck disable=SC2086
        set -- $spark_j_pair
        [ $# -eq 2 ] || spark_json_fail "layers.$spark_j_k2 must be [lo, hi]"
        spark_j_entry "$spark_j_k2" "$1" "$2" ;;
      oao/array)
        case $spark_j_el_layer in v*) ;; *) spark_json_fail "layers[] needs a layer number" ;; esac
        spark_j_entry "${spark_j_el_layer#v}" "$spark_j_el_lo" "$spark_j_el_hi" ;;
    esac
  fi
  spark_j_stack=${spark_j_stack%?}
  if [ -n "$spark_j_stack" ]; then spark_j_want=after; else spark_j_want=end; fi
}
# spark_j_whole NAME TEXT: TEXT is a whole number as JSON writes it (0, or digits without a
# leading 0) no larger than 2^53 - 1, the largest every reader holds exactly -> spark_n
spark_j_whole() {
  case $2 in 0) ;; [1-9]*) case $2 in *[!0-9]*) spark_json_fail "$1 must be a whole number written as digits, got $2" ;; esac ;;
    *) spark_json_fail "$1 must be a whole number written as digits, got $2" ;; esac
  if [ "${#2}" -gt 16 ] || [ "$2" -gt 9007199254740991 ]; then spark_json_fail "$1 is larger than 2^53 - 1, got $2"; fi
  spark_n=$2
}
spark_j_bad_layer() { spark_json_fail "layers must be keyed by a layer number as digits (\"1\", \"14\"), got \"$1\""; }
# spark_j_entry LAYER vLO vHI: one range of a table of the snapshot this script was made from
spark_j_entry() {
  case $1 in 0) ;; [1-9]*) case $1 in *[!0-9]*|??????????*) spark_j_bad_layer "$1" ;; esac ;; *) spark_j_bad_layer "$1" ;; esac
  spark_j_l=$1
  case " $spark_tables" in *" $spark_j_l:"*) ;; *) spark_json_fail "layers names layer $spark_j_l, but the snapshot this script was made from has no Engram table for it (its tables: $spark_tables)" ;; esac
  case "$spark_j_entries " in *" $spark_j_l:"*) spark_json_fail "layers names layer $spark_j_l twice" ;; esac
  for spark_j_x in "$2" "$3"; do
    case $spark_j_x in v?*) ;; *) spark_json_fail "layers.$1 must be [lo, hi] of whole numbers" ;; esac
  done
  spark_j_whole "layers.$1 lo" "${2#v}"; spark_j_lo=$spark_n
  spark_j_whole "layers.$1 hi" "${3#v}"; spark_j_hi=$spark_n
  [ "$spark_j_lo" -le "$spark_j_hi" ] || spark_json_fail "layers.$1 has lo $spark_j_lo > hi $spark_j_hi"
  spark_j_entries="$spark_j_entries $spark_j_l:$spark_j_lo:$spark_j_hi"
}
# spark_j_scalar TEXT: true, false, null or a JSON number (exit status)
spark_j_scalar() {
  case $1 in true|false|null) return 0 ;; esac
  spark_x=${1#-}
  case $spark_x in 0*) spark_x=${spark_x#0} ;; [1-9]*) spark_x=${spark_x#"${spark_x%%[!0-9]*}"} ;; *) return 1 ;; esac
  case $spark_x in .*) spark_x=${spark_x#.}; case $spark_x in [0-9]*) spark_x=${spark_x#"${spark_x%%[!0-9]*}"} ;; *) return 1 ;; esac ;; esac
  case $spark_x in [eE]*) spark_x=${spark_x#?}; spark_x=${spark_x#[+-]}
    case $spark_x in [0-9]*) spark_x=${spark_x#"${spark_x%%[!0-9]*}"} ;; *) return 1 ;; esac ;; esac
  [ -z "$spark_x" ]
}
# spark_j_string TEXT: a JSON string's body: no control character, each backslash an escape
spark_j_string() {
  case $1 in *[[:cntrl:]]*) spark_json_fail "a string on line $spark_j_line_no holds a control character (not JSON)" ;; esac
  spark_x=$1
  while :; do
    case $spark_x in *\\*) ;; *) return 0 ;; esac
    spark_x=${spark_x#*\\}
    case $spark_x in
      [\"\\/bfnrt]*) spark_x=${spark_x#?} ;;
      u[0-9a-fA-F][0-9a-fA-F][0-9a-fA-F][0-9a-fA-F]*) spark_x=${spark_x#?????} ;;
      *) spark_json_fail "a string on line $spark_j_line_no has an escape JSON does not have" ;;
    esac
  done
}
# spark_j_token TOKEN [TEXT]: one token, in JSON's grammar (spark_j_want: what may come next)
spark_j_token() {
  case $spark_j_want in
    end) spark_json_fail "it has text after its JSON object (line $spark_j_line_no)" ;;
    top) [ "$1" = '{' ] || spark_json_fail "not a JSON object" ;;
  esac
  case $1 in
    '{'|'[') case $spark_j_want in top|value|value_or_close) ;; *) spark_j_unexpected "'$1'" ;; esac
      if [ "$1" = '{' ]; then spark_j_open o; else spark_j_open a; fi ;;
    '}') case $spark_j_want in key_or_close|after) spark_j_close o ;; *) spark_j_unexpected "'}'" ;; esac ;;
    ']') case $spark_j_want in value_or_close|after) spark_j_close a ;; *) spark_j_unexpected "']'" ;; esac ;;
    :) [ "$spark_j_want" = key_done ] || spark_j_unexpected "':'"; spark_j_want=value ;;
    ,) [ "$spark_j_want" = after ] || spark_j_unexpected "','"
       case $spark_j_stack in *o) spark_j_want=key ;; *) spark_j_want=value ;; esac ;;
    s) spark_j_string "$2"
       case $spark_j_want in
         key|key_or_close) spark_j_key "$2"; spark_j_want=key_done ;;
         value|value_or_close) spark_j_value s "$2"; spark_j_want=after ;;
         *) spark_j_unexpected "a string" ;;
       esac ;;
    *) case $spark_j_want in value|value_or_close) ;; *) spark_j_unexpected "'$2'" ;; esac
       spark_j_scalar "$2" || spark_j_unexpected "'$2'"
       spark_j_value v "$2"; spark_j_want=after ;;
  esac
}
# spark_j_struct TEXT: the text between strings, split at commas first (one pass), so that no
# step copies more than one comma-free piece: linear in the line
spark_j_struct() {
  spark_oldifs=$IFS; IFS=,; set -f
  # Split on purpose, at the IFS set just above, with globbing off (set -f).
  # shellcheck disable=SC2086
  set -- $1' '
  set +f; IFS=$spark_oldifs
  spark_j_first=1
  for spark_j_p in "$@"; do
    [ "$spark_j_first" = 1 ] || spark_j_token ,
    spark_j_first=0
    while :; do
      # $spark_cr unquoted on purpose: a character of the class (leading blanks dropped).
      # shellcheck disable=SC2295
      spark_j_p=${spark_j_p#"${spark_j_p%%[! 	$spark_cr]*}"}
      # $spark_delims unquoted on purpose: a character class (a value ends at a delimiter).
      # shellcheck disable=SC2295
      case $spark_j_p in
        '') break ;;
        [][{}:]*) spark_j_c=${spark_j_p%"${spark_j_p#?}"}; spark_j_p=${spark_j_p#?}; spark_j_token "$spark_j_c" ;;
        *) spark_j_v=${spark_j_p%%$spark_delims*}; spark_j_p=${spark_j_p#"$spark_j_v"}; spark_j_token v "$spark_j_v" ;;
      esac
    done
  done
}
spark_j_line() {
  spark_oldifs=$IFS; IFS='"'; set -f
  # Split on purpose, at the IFS set just above, with globbing off (set -f).
  # shellcheck disable=SC2086
  set -- $1' '
  set +f; IFS=$spark_oldifs
  spark_j_in=0; spark_j_str=
  for spark_j_f in "$@"; do
    if [ "$spark_j_in" = 0 ]; then spark_j_struct "$spark_j_f"; spark_j_in=1; continue; fi
    spark_j_t=${spark_j_f##*[!\\]}
    if [ $(( ${#spark_j_t} % 2 )) -eq 1 ]; then spark_j_str="$spark_j_str$spark_j_f\""; continue; fi
    spark_j_token s "$spark_j_str$spark_j_f"; spark_j_str=; spark_j_in=0
  done
  [ "$spark_j_in" = 1 ] || spark_json_fail "a string does not end on its line"
}

# spark_read_copy: spark_manifest's ranges -> spark_m_rows (ascending by layer), spark_m_what,
# and who it is for -> spark_m_rank, spark_m_world, spark_m_who (empty rank: unknown)
spark_read_copy() {
  spark_j_stack=; spark_j_want=top; spark_j_k1=; spark_j_k2=; spark_j_k3=; spark_j_layers=; spark_j_entries=
  spark_t_rank=; spark_t_world=; spark_s_rank=; spark_s_world=
  spark_j_line_no=0; spark_j_bytes=0
  # The size first, with wc where the image has it: sh's read takes a byte per system call,
  # so a huge line would cost minutes before the count below could refuse it.
  if command -v wc >/dev/null 2>&1; then
    spark_j_size=$(wc -c < "$spark_manifest") || spark_fail 3 "cannot read $spark_manifest"
    spark_j_size=${spark_j_size##*[!0-9]}
    [ -z "$spark_j_size" ] || [ "$spark_j_size" -le "$spark_j_max_bytes" ] || spark_json_fail "it is larger than $spark_j_max_bytes bytes, the most a manifest may have"
  fi
  while IFS= read -r spark_line || [ -n "$spark_line" ]; do
    spark_j_line_no=$((spark_j_line_no + 1))
    spark_j_bytes=$((spark_j_bytes + ${#spark_line} + 1))
    [ "$spark_j_bytes" -le "$spark_j_max_bytes" ] || spark_json_fail "it is larger than $spark_j_max_bytes bytes, the most a manifest may have"
    case $spark_j_line_no/$spark_line in 1/"$spark_bom"*) spark_json_fail "it starts with a byte order mark (not JSON)" ;; esac
    spark_j_line "$spark_line"
  done < "$spark_manifest"
  case $spark_j_want in
    end) ;;
    top) spark_json_fail "it is empty" ;;
    *) spark_json_fail "it ends inside an object or array" ;;
  esac
  case $spark_j_layers in
    object) spark_m_what='sparse copy'; spark_m_rank=$spark_s_rank; spark_m_world=$spark_s_world ;;
    array) spark_m_what=pack; spark_m_rank=$spark_t_rank; spark_m_world=$spark_t_world ;;
    *) spark_json_fail 'no layers object of "L": [lo, hi]' ;;
  esac
  [ -n "$spark_j_entries" ] || spark_json_fail "layers is empty"
  spark_sort_entries
  spark_m_file=${spark_manifest##*/}
  if [ -n "$spark_m_rank" ] && [ -n "$spark_m_world" ]; then
    spark_count "$spark_manifest: rank" "${spark_m_rank#v}" 0; spark_m_rank=$spark_n
    spark_count "$spark_manifest: world" "${spark_m_world#v}" 1; spark_m_world=$spark_n
    [ "$spark_m_rank" -lt "$spark_m_world" ] || spark_json_fail "rank $spark_m_rank is outside its world of $spark_m_world"
    spark_m_who="rank $spark_m_rank of $spark_m_world ($spark_m_file)"
  else
    spark_infer
    if [ -n "$spark_m_rank" ]; then spark_m_who="rank $spark_m_rank of $spark_m_world (inferred from the ranges in $spark_m_file)"
    else spark_m_who="an unknown rank ($spark_m_file: $spark_m_unknown)"; fi
  fi
}

# spark_sort_entries: spark_j_entries ("L:lo:hi ...") -> spark_m_rows, ascending; a layer twice fails
spark_sort_entries() {
  spark_left=$spark_j_entries; spark_m_rows=; spark_m_list=; spark_last=
  while [ -n "$spark_left" ]; do
    spark_min=
    for spark_e in $spark_left; do
      if [ -z "$spark_min" ] || [ "${spark_e%%:*}" -lt "$spark_min" ]; then spark_min=${spark_e%%:*}; fi
    done
    spark_rest=
    for spark_e in $spark_left; do
      if [ "${spark_e%%:*}" = "$spark_min" ]; then
        [ "$spark_last" != "$spark_min" ] || spark_json_fail "layers names layer $spark_min twice"
        spark_last=$spark_min
        spark_m_rows="$spark_m_rows${spark_m_rows:+,}$spark_e"; spark_m_list="$spark_m_list $spark_e"
      else
        spark_rest="$spark_rest $spark_e"
      fi
    done
    spark_left=$spark_rest
  done
}

# spark_share SPLIT N W R: rank R of W's share [spark_lo, spark_hi) of a table of N rows
spark_share() {
  if [ "$1" = floor ]; then
    spark_lo=$(( $2 * $4 / $3 )); spark_hi=$(( $2 * ($4 + 1) / $3 ))
  else
    spark_q=$(( $2 / $3 )); spark_m=$(( $2 % $3 ))
    spark_lo=$(( $4 * spark_q + ($4 < spark_m ? $4 : spark_m) ))
    spark_hi=$(( ($4 + 1) * spark_q + ($4 + 1 < spark_m ? $4 + 1 : spark_m) ))
  fi
}

# spark_infer: the one (rank, world) whose floor or front share of every table is exactly the
# copy's ranges, over worlds up to 1024 and up to the smallest table's rows (as spark
# engram-ranges infers it) -> spark_m_rank/world, else spark_m_unknown
spark_infer() {
  spark_m_rank=; spark_m_world=; spark_m_unknown=; spark_others=
  spark_len=0; spark_nmin=; spark_first=
  for spark_e in $spark_m_list; do
    spark_l=${spark_e%%:*}; spark_r=${spark_e#*:}; spark_lo=${spark_r%%:*}; spark_hi=${spark_r#*:}
    spark_n=
    for spark_t in $spark_tables; do [ "${spark_t%%:*}" != "$spark_l" ] || spark_n=${spark_t#*:}; done
    if [ -z "$spark_n" ]; then spark_m_unknown="layer $spark_l is not a table of the snapshot this script was generated from"; return; fi
    [ "$spark_hi" -le "$spark_n" ] || spark_json_fail "layer $spark_l's range [$spark_lo, $spark_hi) is not inside its table's $spark_n rows"
    if [ $((spark_hi - spark_lo)) -gt "$spark_len" ]; then spark_len=$((spark_hi - spark_lo)); spark_ln=$spark_n; fi
    if [ -z "$spark_nmin" ] || [ "$spark_n" -lt "$spark_nmin" ]; then spark_nmin=$spark_n; fi
    spark_first=${spark_first:-$spark_e:$spark_n}
  done
  spark_m_unknown="its ranges $spark_m_rows are no single rank's floor or front share of the tables"
  [ "$spark_len" -gt 0 ] || return 0
  spark_wlo=$(( spark_ln / (spark_len + 1) + 1 ))
  if [ "$spark_len" -gt 1 ]; then spark_whi=$(( (spark_ln + spark_len - 2) / (spark_len - 1) - 1 )); else spark_whi=1024; fi
  [ "$spark_whi" -le 1024 ] || spark_whi=1024
  [ "$spark_whi" -le "$spark_nmin" ] || spark_whi=$spark_nmin
  spark_r=${spark_first#*:}; spark_lo1=${spark_r%%:*}; spark_n1=${spark_first##*:}
  for spark_sp in floor front; do
    spark_w=$spark_wlo
    while [ "$spark_w" -le "$spark_whi" ]; do
      if [ "$spark_sp" = floor ]; then spark_rk=$(( (spark_lo1 * spark_w + spark_n1 - 1) / spark_n1 ))
      else
        spark_q=$(( spark_n1 / spark_w )); spark_m=$(( spark_n1 % spark_w ))
        if [ "$spark_lo1" -lt $(( spark_m * (spark_q + 1) )) ]; then spark_rk=$(( spark_lo1 / (spark_q + 1) ))
        else spark_rk=$(( spark_m + (spark_lo1 - spark_m * (spark_q + 1)) / spark_q )); fi
      fi
      spark_ok=0
      if [ "$spark_rk" -lt "$spark_w" ]; then
        spark_ok=1
        for spark_e in $spark_m_list; do
          spark_l=${spark_e%%:*}
          for spark_t in $spark_tables; do [ "${spark_t%%:*}" != "$spark_l" ] || spark_n=${spark_t#*:}; done
          spark_share "$spark_sp" "$spark_n" "$spark_w" "$spark_rk"
          [ "$spark_l:$spark_lo:$spark_hi" = "$spark_e" ] || { spark_ok=0; break; }
        done
      fi
      if [ "$spark_ok" = 1 ]; then
        if [ -z "$spark_m_rank" ]; then spark_m_rank=$spark_rk; spark_m_world=$spark_w
        elif [ "$spark_rk/$spark_w" != "$spark_m_rank/$spark_m_world" ]; then
          case " $spark_others " in *" rank $spark_rk of $spark_w "*) ;; *) spark_others="$spark_others or rank $spark_rk of $spark_w" ;; esac
        fi
      fi
      spark_w=$((spark_w + 1))
    done
  done
  if [ -n "$spark_others" ]; then
    spark_m_unknown="its ranges $spark_m_rows are the share of rank $spark_m_rank of $spark_m_world$spark_others"
    spark_m_rank=; spark_m_world=
  fi
}
