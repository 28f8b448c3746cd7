# shellcheck shell=sh
# A fragment of hello.sh and probe.sh: how both answers are written. Every value of
# arbitrary content travels hex-encoded (hx), so the answer parses the same whatever the paths
# or files hold; LC_ALL=C makes globs list in byte order.
LC_ALL=C; export LC_ALL
# hx: stdin as one line of hex
hx() { od -An -v -tx1 | tr -d ' \n'; echo; }
# size_of FILE: its size in bytes -> z, empty (and status 1) when it cannot be read; the trim
# drops the blanks some wc implementations pad the number with.
size_of() { z=$(wc -c < "$1" 2>/dev/null) && z=${z##* }; }
