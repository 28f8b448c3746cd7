#!/bin/sh
# The addon and both engine libraries built for another architecture with the cross compiler
# (spark bundle --arch arm64 on x86-64), in a scratch copy of the package so that the checkout's
# own build/Release stays this machine's build. Filled by build.ts: the checkout, the scratch
# directory, node-gyp's --arch and the compiler prefix. Prints the build's log on failure.
set -eu
root=@ROOT@
work=@WORK@
arch=@ARCH@
prefix=@PREFIX@
for tool in "${prefix}gcc" "${prefix}g++" "${prefix}ar"; do
  command -v "$tool" >/dev/null || {
    echo "$tool not found: install the cross compiler (apt-get install g++-aarch64-linux-gnu)" >&2
    exit 3
  }
done
mkdir -p "$work/native" "$work/bench"
cp "$root/binding.gyp" "$root/package.json" "$work/"
cp -r "$root/native/core" "$root/native/binding" "$root/native/engine-libs" "$work/native/"
# binding.gyp builds the Mia bench baseline too
cp -r "$root/bench/baselines" "$work/bench/"
ln -s "$root/node_modules" "$work/node_modules"
cd "$work"
# npm run puts npm's own node-gyp on PATH, as for npm run build:native.
CC="${prefix}gcc" CXX="${prefix}g++" LINK="${prefix}g++" AR="${prefix}ar" \
  npm run build:native -- "--arch=$arch" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  exit 1
}
