// What preflight asks of a node and what the node answers. The launching machine computes one
// request per node (the paths its mounts, caches and packs name, the ports, the image); the
// node answers with facts, through spark when it is installed there, else through a POSIX sh
// probe sent over ssh, or in-process for this machine. Node rules read only these facts, so a
// node gets the same verdict whichever way its facts were gathered.
import type { LocalCopy } from '../engram/layer-source.js';
import type { SnapshotFacts } from './types.js';
import type { ElfSummary } from '../files/elf.js';

// 2: the Mia stack's packed directory (miaDir) joined the request. 3: it became any stack's
// reader directory (readerDir, with the names and header size its room asks for). A node
// answering another version is refused and the sh probe answers instead.
export const FACTS_VERSION = 3;
/** Texts larger than this are cut (config.json, an index, a wrapper script, a manifest). */
export const TEXT_LIMIT = 4 * 1024 * 1024;

/**
 * Where a node's snapshot may be: a checkpoint directory (or file), or a model in a Hugging Face
 * cache (`modelDir` = hub/models--org--name: refs/main, else its only snapshot).
 */
export type SnapshotCandidate =
  { dir: string; notCopy?: boolean } | { hfCache: string; model: string; modelDir: string };

export interface FactsRequest {
  version: typeof FACTS_VERSION;
  /** Host paths to stat, following links. */
  paths: string[];
  /** Small files to read whole. */
  texts: string[];
  /** Paths whose free space (for an unprivileged writer) to report, at the nearest existing ancestor. */
  free: string[];
  /** TCP ports to check for a listener. */
  ports: number[];
  /** Docker images whose id to report. */
  images: string[];
  /** The docker program on the node. */
  docker: string;
  /** The sysfs root on the node. */
  sysfs: string;
  /** Where the node's /proc/net is (routes, listening sockets). */
  procNet: string;
  /** Snapshot candidates, in order: the first that holds a checkpoint is checked. */
  snapshot: SnapshotCandidate[];
  /** Where the node's copy of its Engram rows is (or will be written). */
  copyDir?: string;
  /** The directory a serving stack's reader opens its files from on the node, as its room asks. */
  readerDir?: ReaderDirRequest;
  /**
   * Host files mounted over a serving stack's row library (engine-lib.ts). A node whose spark
   * predates this field answers without it; the short sh command then reads them (remote.ts).
   */
  engineLibs?: string[];
}

export type PathKind = 'file' | 'dir' | 'other' | 'missing';
export interface PathFact {
  kind: PathKind;
  /** Bytes, for a file. */
  size?: number;
}

export type PortState = 'free' | 'in-use' | 'denied';

export type ImageFact = { id: string } | { missing: true } | { error: string };

/** An IPv4 route as /proc/net/route lists it. */
export interface RouteFact {
  iface: string;
  destination: string;
  gateway: string;
  prefix: number;
}

/** The RDMA and network-interface part of a node's sysfs, for nodes read over ssh. */
export interface SysfsDump {
  /** Directories relative to the sysfs root (`class/infiniband/rocep1s0f0/ports/1`, `class/net/eth0`). */
  dirs: string[];
  /** One-line files relative to the sysfs root, with their text (without the newline). */
  files: Record<string, string>;
}

/** The node's snapshot, validated by the same reader preflight uses locally. */
export interface SnapshotFact {
  /** Index into FactsRequest.snapshot of the candidate that held it. */
  candidate: number;
  dir: string;
  /** config.json, when present. */
  config?: string;
  /** The validated headers, or why they do not validate. */
  result: { facts: SnapshotFacts } | { error: ErrorFact };
}

/** An error as it travels between machines. */
export interface ErrorFact {
  code: string;
  message: string;
  path?: string;
}

/** The node's copy of its Engram rows, read by the same readers as the wrapper's. */
export interface CopyFact {
  dir: string;
  result: { copy: LocalCopy; manifestProblems: string[] } | { error: ErrorFact };
}

/**
 * A directory a serving stack's reader opens files from by name (facts/reader-dir.ts gathers
 * it): the host directory, the names the reader may open, and how much of each file to report.
 */
export interface ReaderDirRequest {
  dir: string;
  /** The shell glob of the names the reader opens: letters, digits, `.`, `_`, `-` and `*` only. */
  glob: string;
  /** How many leading bytes of each file to report: the reader's header. */
  headBytes: number;
  /** A small receipt beside the files to report whole, if the stack's tools write one. */
  receipt?: string;
}

/** A file a stack's reader may open, in its reader directory. */
export interface ReaderFileFact {
  name: string;
  kind: PathKind;
  /** For a regular file. */
  size?: number;
  /** For a regular file: its first `headBytes` bytes, in hex (fewer when the file is shorter). */
  head?: string;
  /** For a regular file: whether it opened with O_DIRECT. */
  direct?: boolean;
}

/** A stack's reader directory on the node. */
export interface ReaderDirFact {
  dir: string;
  kind: PathKind;
  /** The files the glob names, by name in byte order (at most READER_DIR_MAX_FILES). */
  files: ReaderFileFact[];
  /** The receipt's text, when it is a regular file of at most 64 KiB. */
  receipt?: string;
}

/** A host file mounted over a stack's row library (see engine-lib.ts). */
export interface EngineLibFileFact {
  path: string;
  kind: PathKind;
  /** The path is a symbolic link (kind is what it points at: `missing` when it dangles). */
  link?: true;
  /** For a regular file. */
  size?: number;
  /** Why a regular file was not read (permissions, too large), or why the node's answer about it was lost. */
  unread?: string;
  sha256?: string;
  elf?: ElfSummary;
  /** For a regular file that was read but is no ELF this reader takes: why. */
  elfError?: string;
}

/** The node's machine (uname -m) and its library files, by request index. */
export interface EngineLibsFact {
  machine: string;
  files: EngineLibFileFact[];
}

/** Answered first, before the request is built: who the node is and what it runs. */
export interface NodeHello {
  hostname: string;
  home: string;
  /** The node's clock (ms since the epoch) when it answered. */
  clockMs: number;
  /** This machine's clock when it asked and when the answer arrived. */
  sentMs: number;
  receivedMs: number;
  kernel?: string;
  /** `spark --version` on the node; undefined when spark is not installed there. */
  spark?: string;
}

export interface NodeFacts extends NodeHello {
  via: 'local' | 'spark' | 'probe';
  driver?: string;
  cuda?: string;
  /** By request index. */
  paths: PathFact[];
  texts: (string | null)[];
  free: (number | null)[];
  ports: PortState[];
  images: ImageFact[];
  /** The node's IP addresses. */
  addresses: string[];
  routes: RouteFact[];
  /** Present for nodes read over ssh; this machine's rules read its sysfs directly. */
  sysfs?: SysfsDump;
  snapshot?: SnapshotFact;
  copy?: CopyFact;
  readerDir?: ReaderDirFact;
  engineLibs?: EngineLibsFact;
}
