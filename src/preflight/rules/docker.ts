// Container settings.
import { parseDockerSize } from '../../recipes/index.js';
import { formatBytes } from '../../format.js';
import { defineRule, finding, whereField } from '../rule.js';

export const MIN_SHM_BYTES = 2 ** 30;
/** What docker gives a container without --shm-size ("64m"): a shm_size this small is no shm_size at all. */
export const DOCKER_DEFAULT_SHM_BYTES = 64 * 2 ** 20;

export const shmSize = defineRule({
  id: 'docker.shm-size',
  title: 'the container gets a /dev/shm large enough for NCCL and the engine',
  severity: 'error',
  also: "warn below 1 GiB (an error at or below docker's default 64 MB, the same as no shm_size)",
  scope: 'files',
  evidence:
    "Docker's default /dev/shm is 64 MB; torch multiprocessing and NCCL's shared-memory transport need far more " +
    '(every recipe in recipes/ sets shm_size = "32gb"; docs/failures.md 8: /dev/shm too small).',
  fix: 'set shm_size = "32gb"',
  check(ctx) {
    const text = ctx.recipe.shmSize;
    if (text === undefined) {
      return [
        finding(this, {
          message: "no shm_size: the container gets docker's default 64 MB /dev/shm",
          where: ctx.recipe.file,
        }),
      ];
    }
    const bytes = parseDockerSize(text);
    if (bytes === undefined) {
      return [
        finding(this, {
          message: `shm_size "${text}" is not a docker size (like 32gb, 16g, 512m)`,
          where: whereField(ctx, 'shmSize'),
        }),
      ];
    }
    if (bytes <= DOCKER_DEFAULT_SHM_BYTES) {
      return [
        finding(this, {
          message: `shm_size "${text}" (${formatBytes(bytes)}) is no more than docker's default 64 MB /dev/shm, the same as no shm_size`,
          where: whereField(ctx, 'shmSize'),
        }),
      ];
    }
    if (bytes < MIN_SHM_BYTES) {
      return [
        finding(this, {
          severity: 'warn',
          message: `shm_size "${text}" (${formatBytes(bytes)}) is below ${formatBytes(MIN_SHM_BYTES)}`,
          where: whereField(ctx, 'shmSize'),
        }),
      ];
    }
    return [];
  },
});
