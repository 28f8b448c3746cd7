// The container's /dev/shm, as the launch gives it (plannedContainer, recipes/container.ts).
import { parseDockerSize } from '../../recipes/index.js';
import { formatBytes } from '../../terminal/format.js';
import { plannedContainer } from '../../preflight-api/node-paths.js';
import { defineRule, finding, whereField } from '../../preflight-api/rule.js';

export const MIN_SHM_BYTES = 2 ** 30;
/** What docker gives a container with neither --shm-size nor --ipc host ("64m"). */
export const DOCKER_DEFAULT_SHM_BYTES = 64 * 2 ** 20;

export const shmSize = defineRule({
  id: 'docker.shm-size',
  title: 'the container gets a /dev/shm large enough for NCCL and the engine',
  severity: 'error',
  also: "warn below 1 GiB (an error at or below docker's default 64 MB)",
  scope: 'files',
  evidence:
    "torch multiprocessing and NCCL's shared-memory transport need far more than docker's default 64 MB /dev/shm " +
    "(docs/failures.md 8: /dev/shm too small). The launch shares the host's IPC namespace and /dev/shm (--ipc host) " +
    'unless the recipe sets shm_size, which gives the container a private /dev/shm of that size (--shm-size): only that size can be too small.',
  fix: 'set shm_size = "32gb", or remove shm_size to share the host\'s /dev/shm',
  check(ctx) {
    // The launch's own choice (recipes/container.ts): without shm_size, --ipc host.
    const shm = plannedContainer(ctx).shm;
    if (shm.kind === 'host') return [];
    const text = shm.size;
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
          message: `shm_size "${text}" (${formatBytes(bytes)}) gives the container a private /dev/shm no larger than docker's default 64 MB`,
          where: whereField(ctx, 'shmSize'),
        }),
      ];
    }
    if (bytes < MIN_SHM_BYTES) {
      return [
        finding(this, {
          severity: 'warn',
          message: `shm_size "${text}" (${formatBytes(bytes)}) gives the container a private /dev/shm below ${formatBytes(MIN_SHM_BYTES)}`,
          where: whereField(ctx, 'shmSize'),
        }),
      ];
    }
    return [];
  },
});
