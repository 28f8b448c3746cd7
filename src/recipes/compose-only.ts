// Variables an env file holds for the docker compose file or start script that builds the
// deployment (hosts, image, ports, parallelism, engine flags), not for any process inside the
// container. `spark launch --env` passes every key into every container, where these do
// nothing: the value the user meant to set never reaches the engine. Each is warned about,
// with the place spark reads that setting from. The names come from the users' env files
// (recipes/docker-images/mia-tp4/.env.example); a name a container does read (NCCL_*, DSV41_*,
// SGLANG_*, PYTORCH_*) is never listed here.
import type { FileDiagnostic } from './fields.js';

const CLUSTER_FILE = 'the cluster file ([[nodes]] host and fabric_addr)';
const ARGS = "the recipe's args";

/** Variable -> where spark takes that setting from instead. */
const COMPOSE_ONLY: Record<string, string> = {
  HEAD_IP: CLUSTER_FILE,
  WORKER1_IP: CLUSTER_FILE,
  WORKER2_IP: CLUSTER_FILE,
  WORKER3_IP: CLUSTER_FILE,
  WORKER1_HOST: CLUSTER_FILE,
  WORKER2_HOST: CLUSTER_FILE,
  WORKER3_HOST: CLUSTER_FILE,
  WORKER_USER: "the cluster file's host (user@host) or ~/.ssh/config",
  SSH_IDENTITY: '~/.ssh/config (IdentityFile) or SPARK_SSH',
  FABRIC_IFACE: 'NCCL_SOCKET_IFNAME / GLOO_SOCKET_IFNAME',
  IB_HCA: 'NCCL_IB_HCA',
  MODEL_DIR: "the cluster file's hf_cache",
  COMMON_MODEL: "the cluster file's hf_cache",
  BASE_IMAGE: "the recipe's docker_image",
  IMAGE: "the recipe's docker_image",
  PORT: "the recipe's port",
  NNODES: "the recipe's required_nodes",
  TP_SIZE: "the recipe's tensor_parallel_size",
  EP_SIZE: ARGS,
  DIST_PORT: "the cluster file's dist_port",
  NFS_SHARE: 'the host mounts (outside spark)',
  NFS_VOLUME: 'the host mounts (outside spark)',
  NFS_EXPORT_NAME: 'the host mounts (outside spark)',
  NFS_SERVER_IP_1: 'the host mounts (outside spark)',
  NFS_SERVER_IP_2: 'the host mounts (outside spark)',
  NFS_CLIENTS: 'the host mounts (outside spark)',
  CONTEXT_LENGTH: ARGS,
  MEM_FRACTION_STATIC: ARGS,
  HEAD_MEM_FRACTION_STATIC: ARGS,
  MAX_RUNNING_REQUESTS: ARGS,
  CHUNKED_PREFILL_SIZE: ARGS,
  MAX_TOTAL_TOKENS: ARGS,
  SPEC_ALGO: ARGS,
  DSPARK_BLOCK_SIZE: ARGS,
  EXTRA_SGLANG_ARGS: ARGS,
  ENGRAM_DIR: 'spark pack --out (and the mount SPARK_ENGRAM_DIR names)',
  SKIP_PREPARE: 'the start script (spark launch has no such step)',
  SKIP_VERIFY: 'spark verify, run before the launch',
  SKIP_SMOKE: 'the start script (spark launch has no such step)',
  SMOKE_QUICK: 'the start script (spark launch has no such step)',
};

export function isComposeOnly(key: string): boolean {
  return Object.hasOwn(COMPOSE_ONLY, key);
}

/** The warning for one env-file key, or undefined when containers do read it. */
export function composeOnlyDiagnostic(file: string, key: string, line: number): FileDiagnostic | undefined {
  if (!isComposeOnly(key)) return undefined;
  return {
    kind: 'compose-only',
    severity: 'warn',
    file,
    line,
    key,
    message: `${key} is read by the compose file or start script that builds a deployment, not inside the container; spark passes it into every container, where it does nothing`,
    fix: `set it in ${COMPOSE_ONLY[key]}, and drop it from this file`,
  };
}
