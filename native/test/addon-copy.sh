# Sourced by asan-node.sh and arm64.sh.
# build_addon_copy ROOT WORK [node-gyp args...]: builds the addon from ROOT's binding.gyp in
# WORK, a scratch copy of the package (node_modules symlinked), so ROOT/build/Release stays the
# normal build. The compiler and build switches come from the environment (CXX, CC, AR, ...).
# The result is WORK/build/Release/spark.node; on failure the build log goes to stderr.
build_addon_copy() {
  local root=$1 work=$2
  shift 2
  mkdir -p "$work/native"
  cp "$root/binding.gyp" "$root/package.json" "$work/"
  cp -r "$root/native/core" "$root/native/binding" "$root/native/engine-libs" "$work/native/"
  mkdir -p "$work/bench"
  cp -r "$root/bench/baselines" "$work/bench/"  # binding.gyp builds the bench baselines too
  ln -s "$root/node_modules" "$work/node_modules"
  echo "building the addon in $work"
  # `npm run` puts npm's own node-gyp on PATH, as for `npm run build:native`.
  (cd "$work" && npm run build:native -- "$@" >"$work/build.log" 2>&1) || {
    cat "$work/build.log" >&2
    return 1
  }
}
