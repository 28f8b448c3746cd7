#!/bin/sh
# One node's part of `spark fanout install` (install.ts fills the values): the bundle arrives on
# stdin through ssh. Nothing the node runs changes until every check passed: the bytes and their
# sha256, every file against the manifest, the new tree's `spark --version`, its addon loading
# and the engine libraries staged beside the lib directory's and checked. Only then the
# `current` link is replaced (a new link renamed over it) and spark put on PATH, and, once that
# spark runs, the staged libraries renamed over the old ones, so the libraries never run ahead
# of the version. A copy cut short, a bad file or a failed check leaves the previous version in
# place and says why on stderr (exit 1).
# Progress goes to stderr; the result is `key value` lines on stdout.
set -eu
umask 022
want_sha=@SHA256@
want_bytes=@BYTES@
name=@NAME@
want_version=@VERSION@
prefix=@PREFIX@
bin_dir=@BIN_DIR@
lib_dir=@LIB_DIR@
libs=@LIBS@
[ -n "$prefix" ] || prefix=$HOME/.local/share/spark
[ -n "$bin_dir" ] || bin_dir=$HOME/.local/bin

fail() {
  printf 'install failed: %s; the previous version stays\n' "$*" >&2
  exit 1
}
say() { printf '%s\n' "$*" >&2; }

command -v node >/dev/null 2>&1 || fail 'node not found on PATH (spark needs Node >= 20)'
major=$(node -p 'process.versions.node.split(".")[0]') || fail 'node does not run'
[ "$major" -ge 20 ] || fail "Node $(node --version) is too old: spark needs Node >= 20"
mkdir -p "$prefix/versions" || fail "cannot create $prefix/versions"
incoming=$(mktemp -d "$prefix/.incoming.XXXXXX") || fail "cannot write in $prefix"
staged=
# The staged libraries' names, one word each (paths without spaces), split on purpose.
# shellcheck disable=SC2086
trap 'rm -rf "$incoming"; [ -z "$staged" ] || rm -f $staged' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 141' PIPE

cat >"$incoming/bundle.tgz" || fail 'the copy was cut'
got_bytes=$(wc -c <"$incoming/bundle.tgz" | tr -d ' ')
[ "$got_bytes" = "$want_bytes" ] || fail "received $got_bytes of $want_bytes bytes (the copy was cut)"
got_sha=$(sha256sum "$incoming/bundle.tgz" | cut -d ' ' -f 1)
[ "$got_sha" = "$want_sha" ] || fail "sha256 of what arrived is $got_sha, not $want_sha"
say "received $got_bytes bytes, sha256 ok"

tree=$incoming/tree
mkdir "$tree"
tar -xzf "$incoming/bundle.tgz" -C "$tree" --no-same-owner || fail 'tar could not unpack the bundle'
rm -f "$incoming/bundle.tgz"
check_files() {
  (cd "$1" && node -e 'for (const f of require(process.argv[1]).files) console.log(f.sha256 + "  " + f.path)' "$1/bundle.json" |
    sha256sum -c --quiet --strict -) >&2
}
check_files "$tree" || fail 'a file does not match the manifest'

got_version=$(node "$tree/dist/src/bin.js" --version) || fail 'the new spark does not run'
[ "$got_version" = "$want_version" ] || fail "the new spark says $got_version, not $want_version"
addon=$(cd "$tree" && node -e 'const g = require("node-gyp-build"); const p = g.resolve("."); if (!g(".").errorCodes) process.exit(1); console.log(p)') ||
  fail "the addon does not load on this node (Node $(node --version), $(uname -m))"
say "spark $got_version runs; addon loads ($addon)"

dest=$prefix/versions/$name
if [ -d "$dest" ] && check_files "$dest" 2>/dev/null; then
  say "$dest is already installed and intact: kept"
else
  rm -rf "$dest"
  mv "$tree" "$dest" || fail "cannot move the tree to $dest"
fi

mkdir -p "$lib_dir" || fail "cannot create $lib_dir"
# The libraries and their digests, one word each (paths without spaces).
# shellcheck disable=SC2086
set -- $libs
while [ $# -ge 2 ]; do
  lib=$1 sha=$2
  shift 2
  base=${lib##*/}
  staged="$staged $lib_dir/.$base.$$.partial"
  cp "$dest/$lib" "$lib_dir/.$base.$$.partial" || fail "cannot write $lib_dir/$base"
  got=$(sha256sum "$lib_dir/.$base.$$.partial" | cut -d ' ' -f 1)
  [ "$got" = "$sha" ] || fail "$lib_dir/$base would be $got, not $sha"
done
say "engine libraries staged in $lib_dir"

previous=$(readlink "$prefix/current" 2>/dev/null || true)
# After the switch a failure points current back at the previous version.
switch_to() {
  ln -sfn "$1" "$prefix/.current.$$" && mv -T "$prefix/.current.$$" "$prefix/current"
}
undo() {
  if [ -n "$previous" ]; then switch_to "$previous" || true; fi
  fail "$@"
}
switch_to "versions/$name" || fail "cannot switch $prefix/current"
mkdir -p "$bin_dir" || undo "cannot create $bin_dir"
ln -sfn "$prefix/current/dist/src/bin.js" "$bin_dir/.spark.$$" || undo "cannot write in $bin_dir"
mv -T "$bin_dir/.spark.$$" "$bin_dir/spark" || undo "cannot link $bin_dir/spark"
now=$("$bin_dir/spark" --version) || undo "$bin_dir/spark does not run"
[ "$now" = "$want_version" ] || undo "$bin_dir/spark says $now (another spark earlier on PATH?)"
# The libraries and their digests again, one word each: the staged copies renamed into place.
# shellcheck disable=SC2086
set -- $libs
while [ $# -ge 2 ]; do
  base=${1##*/}
  shift 2
  mv -f "$lib_dir/.$base.$$.partial" "$lib_dir/$base" || undo "cannot replace $lib_dir/$base"
done
staged=
say "engine libraries copied to $lib_dir"
say "current -> versions/$name (was ${previous:-none}); $bin_dir/spark is spark $now"
printf 'version %s\nprevious %s\npath %s\naddon %s\nlibdir %s\n' "$now" "${previous##*/}" "$bin_dir/spark" "$addon" "$lib_dir"
