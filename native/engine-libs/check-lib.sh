#!/usr/bin/env bash
# check-lib.sh FILE STACK [MACHINE]: checks a built engine library is a file the serving
# stack's image can load in place of its own (docs/engine-libs.md):
#   - an ELF shared object for MACHINE (x86-64 or aarch64; default: this machine's);
#   - exports exactly the stack's ABI symbols (defined, global, default visibility);
#   - needs only the C library's own objects (libc, libm, libpthread, libdl, the dynamic
#     loader): the C++ runtime is inside;
#   - imports no glibc symbol version newer than 2.35 (Ubuntu 22.04, the oldest base image);
#   - for the overlay, carries the ABI note (.note.spark.abi) saying version 3.
# The ABI's symbols are the global names of native/engine-libs/STACK/exports.map.
# READELF (default: readelf; aarch64-linux-gnu-readelf reads both) does the reading.
# Prints one line "FILE: ok (...)" or the failures, one a line; exits 0 or 1 (2: bad usage).
set -euo pipefail
file=${1:-}
stack=${2:-}
machine=${3:-$(uname -m)}
readelf=${READELF:-readelf}
here=$(cd "$(dirname "$0")" && pwd)
# A stack is a folder of native/engine-libs with the version script of its ABI.
if [ -z "$stack" ] || [ ! -f "$here/$stack/exports.map" ]; then
  echo "check-lib.sh: usage: check-lib.sh FILE STACK [x86_64|aarch64], STACK a folder of $here with an exports.map" >&2
  exit 2
fi
# The ABI is the version script's global names (the one list; spark engine-lib and preflight read it too).
abi=$(sed -n '/global:/,/local:/s/^ *\([A-Za-z_][A-Za-z0-9_]*\);.*/\1/p' "$here/$stack/exports.map" | sort | tr '\n' ' ' | sed 's/ $//')
case "$machine" in
  x86_64 | x86-64) want_machine='Advanced Micro Devices X86-64' ;;
  aarch64 | arm64) want_machine='AArch64' ;;
  *)
    echo "check-lib.sh: unknown machine '$machine'; use x86_64 or aarch64" >&2
    exit 2
    ;;
esac
[ -f "$file" ] || {
  echo "$file: not a file (build it with npm install or npm run build:native)" >&2
  exit 1
}
fail=()
header=$("$readelf" -h "$file" 2>&1) || {
  echo "$file: not an ELF file: $header" >&2
  exit 1
}
grep -Eq 'Type: +DYN' <<<"$header" || fail+=("not a shared object")
grep -Fq "Machine:                           $want_machine" <<<"$header" || fail+=("not built for $machine: $(grep Machine: <<<"$header" | sed 's/ \+/ /g')")
syms=$("$readelf" --dyn-syms -W "$file")
exported=$(awk '$7 != "UND" && $5 == "GLOBAL" && $6 == "DEFAULT" && $4 != "SECTION" { sub(/@.*/, "", $8); print $8 }' <<<"$syms" | sort -u | tr '\n' ' ' | sed 's/ $//')
missing=$(comm -13 <(tr ' ' '\n' <<<"$exported") <(tr ' ' '\n' <<<"$abi") | tr '\n' ' ')
extra=$(comm -23 <(tr ' ' '\n' <<<"$exported") <(tr ' ' '\n' <<<"$abi") | awk 'NR <= 5' | tr '\n' ' ')
[ -z "$missing" ] || fail+=("does not export ${missing}(the stack looks every ABI symbol up at import)")
[ -z "$extra" ] || fail+=("exports symbols beyond the ABI: ${extra}...")
# The overlay's ABI version, as the ELF note the build writes from the constant the function returns.
if [ "$stack" = overlay ]; then
  note=$("$readelf" -x .note.spark.abi "$file" 2>/dev/null | sed -n 's/^  0x[0-9a-f]* //p' | cut -c1-35 | tr -d ' \n')
  # namesz 6, descsz 4, type 1, "spark\0" padded to 8, then the int32 version 3 (little-endian).
  [ "$note" = 060000000400000001000000737061726b00000003000000 ] || fail+=("carries no ABI note saying version 3 (.note.spark.abi: ${note:-absent})")
fi
needed=$("$readelf" -d "$file" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for lib in $needed; do
  case "$lib" in
    libc.so.6 | libm.so.6 | libpthread.so.0 | libdl.so.2 | ld-linux-x86-64.so.2 | ld-linux-aarch64.so.1) ;;
    *) fail+=("needs $lib (only the C library's objects are allowed)") ;;
  esac
done
versions=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$syms" | sort -u -V || true)
newest=$(tail -n 1 <<<"$versions")
if [ -n "$newest" ] && [ "$(printf '%s\n%s\n' "$newest" GLIBC_2.35 | sort -V | tail -n 1)" != GLIBC_2.35 ]; then
  fail+=("imports $newest symbols: $(awk -v v="$newest" 'index($0, "@" v) { print $8 }' <<<"$syms" | tr '\n' ' ')(newer than Ubuntu 22.04's glibc 2.35)")
fi
if [ ${#fail[@]} -gt 0 ]; then
  for f in "${fail[@]}"; do echo "$file: $f" >&2; done
  exit 1
fi
echo "$file: ok ($machine, $stack ABI, needs $(tr '\n' ' ' <<<"$needed")max ${newest:-no glibc version})"
