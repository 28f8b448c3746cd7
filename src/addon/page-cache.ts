// Typed wrapper over the addon's page-cache advice (native/binding/page_cache_binding.cc):
// dropping the pages behind a reader that streams a large file once.
import { addon } from './index.js';

interface PageCacheAddon {
  dropCache(fd: number, offset: number, length: number): void;
}

function native(): PageCacheAddon {
  return addon() as unknown as PageCacheAddon;
}

/** Drops the pages of [offset, offset + length) of an open file from the page cache (advice only). */
export function dropCache(fd: number, offset: number, length: number): void {
  native().dropCache(fd, offset, length);
}
