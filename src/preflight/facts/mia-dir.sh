# shellcheck shell=sh
# A fragment of probe.sh: what a node holds in the Mia stack's packed directory (mia-dir.ts
# says what and why, and gathers the same facts in-process). Output: `mdir KIND DIRHEX`, then
# per candidate `mfile NAMEHEX KIND SIZE DIRECT xHEADHEX` (`-` for what a non-file lacks),
# then `mident HEX` when the identity receipt is a small regular file. The header is one dd
# read of the first 4 KiB block, of which od keeps the header's bytes (dd asks for a
# page-aligned buffer of `bs` bytes, and strict allocators, AddressSanitizer's among them,
# refuse one whose size is not a multiple of the page); O_DIRECT is tried by dd on one aligned
# 4 KiB block; each only on a regular file. The directory is a list of none or one.
mia_max_files=@MIA_MAX_FILES@
mia_header_bytes=@MIA_HEADER_BYTES@
mia_identity=@MIA_IDENTITY_NAME@
mia_identity_max=@MIA_IDENTITY_MAX_BYTES@
set -- @MIA_DIRS@
for d in "$@"; do
  kind "$d"; printf 'mdir %s ' "$k"; printf '%s' "$d" | hx
  [ "$k" = dir ] || continue
  n=0
  for f in "$d"/engram-l*-r*of*.bin; do
    { [ -e "$f" ] || [ -L "$f" ]; } || continue
    [ "$n" -ge "$mia_max_files" ] && break
    n=$((n+1))
    kind "$f"; s=-; o=-; h=-
    if [ "$k" = file ]; then
      s=$(wc -c < "$f" | tr -d ' ')
      [ -r "$f" ] && h=x$(dd if="$f" bs=4096 count=1 2>/dev/null | od -An -v -N "$mia_header_bytes" -tx1 | tr -d ' \n')
      if dd if="$f" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then o=1; else o=0; fi
    fi
    printf 'mfile '; printf '%s' "${f##*/}" | od -An -v -tx1 | tr -d ' \n'; printf ' %s %s %s %s\n' "$k" "$s" "$o" "$h"
  done
  i=$d/$mia_identity
  if [ -f "$i" ] && [ -r "$i" ] && [ "$(wc -c < "$i" | tr -d ' ')" -le "$mia_identity_max" ]; then printf 'mident '; hx < "$i"; fi
done
