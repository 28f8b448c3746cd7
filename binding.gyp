{
  # Two targets: spark_core, the C++ core as a static library (native/core, knows nothing of
  # Node), and the addon (native/binding, the only code that includes napi.h) linked against
  # it. native/test/run.sh builds the same library for the C++ unit tests and checks that
  # every native/core/*.cc is listed here.
  "variables": {
    # `node-gyp rebuild -- -Dsanitize=1` (or npm_config_sanitize) builds with ASan + UBSan.
    "sanitize%": "<!(node -p \"process.env.npm_config_sanitize || process.env.SPARK_SANITIZE || 0\")",
    "mia_row_store_sources": [
      "bench/baselines/mia-row-store/io_pool.cc",
      "bench/baselines/mia-row-store/row_cache.cc",
      "bench/baselines/mia-row-store/row_store.cc"
    ],
    # What the engine libraries take from native/core, compiled into each (position-independent,
    # hidden) rather than linked from spark_core.
    "engine_core_sources": [
      "native/core/io/random_read.cc",
      "native/core/row_store/row_plan.cc",
      "native/core/base/status.cc",
      "native/engine-libs/common/aio_reader.cc",
      "native/engine-libs/common/call_log.cc",
      "native/engine-libs/common/env.cc",
      "native/engine-libs/common/freq_sketch.cc",
      "native/engine-libs/common/gatherer.cc",
      "native/engine-libs/common/glibc_floor.cc",
      "native/engine-libs/common/row_cache.cc",
      "native/engine-libs/common/row_source.cc",
      "native/engine-libs/common/stderr_line.cc",
      "native/engine-libs/common/worker_team.cc"
    ]
  },
  "target_defaults": {
    "include_dirs": ["native"],
    "defines": ["_FILE_OFFSET_BITS=64"],
    "cflags!": ["-fno-exceptions"],
    "cflags_cc!": ["-fno-exceptions", "-std=gnu++17"],
    "cflags_cc": ["-std=c++20", "-fexceptions", "-Wall", "-Wextra", "-Wno-unused-parameter", "-O2"],
    "ldflags": ["-pthread"],
    "conditions": [
      ["sanitize==1", {
        "cflags_cc": ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined", "-O1", "-g"],
        "ldflags": ["-fsanitize=address,undefined"]
      }]
    ]
  },
  "targets": [
    {
      "target_name": "spark_core",
      "type": "static_library",
      "sources": [
        "native/core/format/json.cc",
        "native/core/format/json_key_set.cc",
        "native/core/format/json_parser.cc",
        "native/core/format/safetensors.cc",
        "native/core/format/safetensors_check.cc",
        "native/core/format/shard_set.cc",
        "native/core/base/status.cc",
        "native/core/threads/thread_pool.cc",
        "native/core/base/crc32.cc",
        "native/core/pack/pack.cc",
        "native/core/pack/pack_chunks.cc",
        "native/core/pack/pack_dir.cc",
        "native/core/pack/pack_engine.cc",
        "native/core/pack/span_io.cc",
        "native/core/threads/background.cc",
        "native/core/pack/pack_rate.cc",
        "native/core/pack/pack_sparse.cc",
        "native/core/pack/pack_format.cc",
        "native/core/io/durable_file.cc",
        "native/core/pack/pack_journal.cc",
        "native/core/pack/verify.cc",
        "native/core/format/tiling.cc",
        "native/core/base/utf8.cc",
        "native/core/io/random_read.cc",
        "native/core/threads/parallel.cc",
        "native/core/row_store/row_plan.cc",
        "native/core/row_store/row_store.cc",
        "native/core/row_store/row_gather.cc",
        "native/core/row_store/row_gather_mapped.cc",
        "native/core/io/cached_map.cc",
        "native/core/io/fault_guard.cc",
        "native/core/io/holes.cc",
        "native/core/io/uring.cc",
        "native/core/row_store/uring_reader.cc",
        "native/core/row_store/uring_reader_complete.cc",
        "native/core/row_store/row_store_engine.cc"
      ]
    },
    # The engine libraries (docs/engine-libs.md): drop-in replacements for the serving stacks'
    # own row libraries, built from native/core with no Node in them. They must load in the
    # stacks' images: the C++ runtime linked in statically, only the ABI's symbols exported
    # (exports.map), never built with the sanitizers (a sanitized library needs its runtime
    # preloaded); native/engine-libs/check-lib.sh checks the built files.
    {
      "target_name": "engram_rows",
      "type": "shared_library",
      "product_prefix": "lib",
      "sources": [
        "<@(engine_core_sources)",
        "native/engine-libs/overlay/overlay_abi.cc",
        "native/engine-libs/overlay/overlay_store.cc"
      ],
      "cflags_cc": ["-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden"],
      "ldflags": ["-static-libstdc++", "-static-libgcc", "-Wl,--exclude-libs,ALL", "-Wl,-z,defs",
                  "-Wl,--version-script=<(module_root_dir)/native/engine-libs/overlay/exports.map"],
      "conditions": [["sanitize==1", {
        "cflags_cc!": ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
        "ldflags!": ["-fsanitize=address,undefined"]
      }]]
    },
    {
      "target_name": "row_store",
      "type": "shared_library",
      "product_prefix": "lib",
      "sources": [
        "<@(engine_core_sources)",
        "native/engine-libs/mia/drm_cache.cc",
        "native/engine-libs/mia/mia_pack.cc",
        "native/engine-libs/mia/mia_store.cc",
        "native/engine-libs/mia/mia_abi.cc"
      ],
      "cflags_cc": ["-fPIC", "-fvisibility=hidden", "-fvisibility-inlines-hidden"],
      "ldflags": ["-static-libstdc++", "-static-libgcc", "-Wl,--exclude-libs,ALL", "-Wl,-z,defs",
                  "-Wl,--version-script=<(module_root_dir)/native/engine-libs/mia/exports.map"],
      "conditions": [["sanitize==1", {
        "cflags_cc!": ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined"],
        "ldflags!": ["-fsanitize=address,undefined"]
      }]]
    },
    {
      "target_name": "spark",
      "dependencies": ["spark_core"],
      "sources": [
        "native/binding/addon.cc",
        "native/binding/addon_env.cc",
        "native/binding/args.cc",
        "native/binding/async.cc",
        "native/binding/errors.cc",
        "native/binding/exec_binding.cc",
        "native/binding/safetensors_binding.cc",
        "native/binding/tiling_binding.cc",
        "native/binding/row_store_binding.cc",
        "native/binding/row_store_args.cc",
        "native/binding/pack_binding.cc",
        "native/binding/holes_binding.cc",
        "native/binding/page_cache_binding.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
    },
    # A benchmark baseline, not part of spark: the serving overlay's read path (one mmap per
    # shard, a WILLNEED pass, memcpy workers) that `spark bench gather --variants overlay`
    # measures beside the row store (bench/baselines/overlay-mmap/mmap_gather.h). A Node addon
    # of its own, build/Release/overlay_mmap_baseline.so, that the bench loads by path only when
    # it runs the overlay variant; spark's addon neither contains nor links it. Not named .node:
    # node-gyp-build loads the first .node file it finds in build/Release. It compiles
    # native/binding's argument, error and async helpers in again (nothing in native/ includes
    # from bench/; test/repo/no-bench-in-product.test.ts holds that).
    {
      "target_name": "overlay_mmap_baseline",
      "type": "shared_library",
      "product_prefix": "",
      "product_dir": "<(PRODUCT_DIR)",
      "dependencies": ["spark_core"],
      "sources": [
        "bench/baselines/overlay-mmap/mmap_gather.cc",
        "bench/baselines/overlay-mmap/addon/overlay_baseline_addon.cc",
        "native/binding/addon_env.cc",
        "native/binding/args.cc",
        "native/binding/async.cc",
        "native/binding/errors.cc"
      ],
      # "." for the baseline's own header (bench/baselines/overlay-mmap/mmap_gather.h).
      "include_dirs": [".", "<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NODE_ADDON_API_DISABLE_DEPRECATED", "NAPI_CPP_EXCEPTIONS"]
    },
    # A benchmark baseline, not part of spark: the Mia stack's row reader re-implemented from
    # its documented behaviour (bench/baselines/mia-row-store/README.md). Plain C++ (no Node):
    # the library as its engine loads it with ctypes, build/Release/libmia_row_store_baseline.so,
    # and the driver `spark bench gather --variants mia` spawns, build/Release/mia_row_store_bench
    # (the same sources linked in, so it needs no library path).
    {
      "target_name": "mia_row_store_baseline",
      "type": "shared_library",
      "product_prefix": "lib",
      "product_dir": "<(PRODUCT_DIR)",
      "sources": ["<@(mia_row_store_sources)"]
    },
    {
      "target_name": "mia_row_store_bench",
      "type": "executable",
      "sources": ["<@(mia_row_store_sources)", "bench/baselines/mia-row-store/driver.cc"]
    }
  ]
}
