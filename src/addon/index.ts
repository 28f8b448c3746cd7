// The only module that loads or calls the native addon. Loading is lazy: `spark --help`
// and `spark --version` never reach it, and a failed load says how to fix it.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SparkError } from '../errors/errors.js';

/** The addon's surface, as TypeScript sees it. */
export interface NativeAddon {
  errorCodes: Record<string, number>;
}

let cached: NativeAddon | undefined;

/** The package root: the nearest directory above this file holding binding.gyp. */
export function packageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'binding.gyp'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new SparkError('E_ADDON_LOAD', 'cannot find the package root (binding.gyp)');
    dir = parent;
  }
  return dir;
}

export function addon(): NativeAddon {
  if (cached) return cached;
  const require = createRequire(import.meta.url);
  const root = packageRoot();
  // SPARK_ADDON_PATH names a .node file to load instead of the package's own build. It exists
  // for native/test/asan-node.sh, which runs the node tests against a sanitized copy of the
  // addon built elsewhere so that build/Release is never clobbered.
  const override = process.env.SPARK_ADDON_PATH;
  try {
    if (override) {
      cached = require(override) as NativeAddon;
    } else {
      const load = require('node-gyp-build') as (dir: string) => NativeAddon;
      cached = load(root);
    }
  } catch (err) {
    const why = err instanceof Error ? err.message.split('\n')[0] : String(err);
    throw new SparkError(
      'E_ADDON_LOAD',
      `the native addon could not be loaded (${why}); build it with 'npm run build:native' in ${root} ` +
        '(needs python3, make and a C++20 compiler: g++ >= 10 or clang >= 12)',
    );
  }
  return cached;
}
