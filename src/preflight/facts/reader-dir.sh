# shellcheck shell=sh
# A fragment of probe.sh: what a node holds in a serving stack's reader directory (reader-dir.ts
# says what and why, and gathers the same facts in-process). Output: `rdir KIND DIRHEX`, then
# per file the glob names `rfile NAMEHEX KIND SIZE DIRECT xHEADHEX` (`-` for what a non-file
# lacks), then `rreceipt HEX` when the receipt is a small regular file. The header is one dd
# read of the first 4 KiB block, of which od keeps the header's bytes (dd asks for a
# page-aligned buffer of `bs` bytes, and strict allocators, AddressSanitizer's among them,
# refuse one whose size is not a multiple of the page); O_DIRECT is tried by dd on one aligned
# 4 KiB block; each only on a regular file. The directory is a list of none or one; the glob
# holds no blank or quote (reader-dir.ts checks), so it expands unquoted.
reader_glob=@READER_GLOB@
reader_max_files=@READER_MAX_FILES@
reader_head_bytes=@READER_HEAD_BYTES@
reader_receipt=@READER_RECEIPT@
reader_receipt_max=@READER_RECEIPT_MAX_BYTES@
set -- @READER_DIRS@
for d in "$@"; do
  kind "$d"; printf 'rdir %s ' "$k"; printf '%s' "$d" | hx
  [ "$k" = dir ] || continue
  n=0
  # The glob is meant to expand here.
  # shellcheck disable=SC2086
  for f in "$d"/$reader_glob; do
    { [ -e "$f" ] || [ -L "$f" ]; } || continue
    [ "$n" -ge "$reader_max_files" ] && break
    n=$((n+1))
    kind "$f"; s=-; o=-; h=-
    if [ "$k" = file ]; then
      size_of "$f"; s=$z
      [ -r "$f" ] && h=x$(dd if="$f" bs=4096 count=1 2>/dev/null | od -An -v -N "$reader_head_bytes" -tx1 | tr -d ' \n')
      if dd if="$f" of=/dev/null bs=4096 count=1 iflag=direct 2>/dev/null; then o=1; else o=0; fi
    fi
    printf 'rfile '; printf '%s' "${f##*/}" | od -An -v -tx1 | tr -d ' \n'; printf ' %s %s %s %s\n' "$k" "$s" "$o" "$h"
  done
  [ -n "$reader_receipt" ] || continue
  i=$d/$reader_receipt
  if [ -f "$i" ] && [ -r "$i" ] && size_of "$i" && [ "$z" -le "$reader_receipt_max" ]; then printf 'rreceipt '; hx < "$i"; fi
done
