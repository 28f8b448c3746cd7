#!/bin/sh
# The first answer of a node without spark (probe-sh.ts sends it over ssh as sh -c): the node's
# name, home, clock, kernel and, when spark is installed there, its version. spark fills in its
# one placeholder (src/remote/sh-template.ts).
# shellcheck source-path=SCRIPTDIR
. ./node-lib.sh
spark=@SPARK@
printf 'spark-hello 1\n'
t=$(date +%s%N 2>/dev/null); case $t in *[!0-9]*|'') t=$(date +%s)000 ;; *) t=${t%??????} ;; esac
printf 'clock %s\n' "$t"
printf 'home '; printf '%s' "$HOME" | hx
printf 'hostname '; { hostname 2>/dev/null || uname -n; } | hx
printf 'kernel '; uname -r | hx
if command -v "$spark" >/dev/null 2>&1; then printf 'spark '; "$spark" --version 2>/dev/null | hx; fi
printf 'end\n'
