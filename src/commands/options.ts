// Shared option parsing for commands: integers, lists and environment fallbacks, each failing
// with a usage error (exit 2) that names the flag or variable and what it accepts.
import type { Command } from 'commander';
import { usageError } from '../errors/errors.js';

/** A non-negative decimal integer (no sign, no exponent), exact up to 2^53. */
export function parseCount(text: string, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const trimmed = text.trim();
  if (!/^\d+$/.test(trimmed)) throw usageError(`${what} must be a whole number, got '${text}'`);
  const n = Number(trimmed);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw usageError(`${what} must be between ${min} and ${max}, got ${trimmed}`);
  }
  return n;
}

/** Comma-separated whole numbers, e.g. "1,8,64". An empty item (`0,,5`) is an error, never skipped. */
export function parseCountList(text: string, what: string, min = 0, max = Number.MAX_SAFE_INTEGER): number[] {
  const parts = text.split(',');
  if (parts.every((p) => p.trim() === '')) throw usageError(`${what} needs at least one number, got '${text}'`);
  const empty = parts.findIndex((p) => p.trim() === '');
  if (empty >= 0)
    throw usageError(`${what} has an empty item at position ${empty + 1} in '${text}': remove the extra comma`);
  return parts.map((p) => parseCount(p, what, min, max));
}

/** The flag's value, else the environment variable's (non-empty), else undefined. */
export function fromEnv(value: string | undefined, env: NodeJS.ProcessEnv, variable: string): string | undefined {
  if (value !== undefined) return value;
  const fallback = env[variable];
  return fallback !== undefined && fallback !== '' ? fallback : undefined;
}

/** Like fromEnv, but missing in both places is a usage error naming both. */
export function requireOption(
  value: string | undefined,
  env: NodeJS.ProcessEnv,
  flag: string,
  variable: string,
): string {
  const v = fromEnv(value, env, variable);
  if (v === undefined) throw usageError(`${flag} is required (or set ${variable})`);
  return v;
}

/** Seconds as a positive decimal (`0.5`, `1200`). */
export function parseSeconds(text: string, flag: string, min = 0): number {
  const t = text.trim();
  if (!/^\d+(\.\d+)?$/.test(t) || Number(t) < min)
    throw usageError(`${flag} must be a number of seconds >= ${min}, got '${text}'`);
  return Number(t);
}

/** --rate-limit MB/s (decimal megabytes, like the overlay's --mbps): bytes per second. */
export function parseRate(text: string): number {
  const t = text.trim();
  const v = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || !(v > 0) || v > 1e6)
    throw usageError(`--rate-limit must be a positive number of MB/s (at most 1000000), got '${text}'`);
  return Math.max(1, Math.round(v * 1e6));
}

/**
 * --rank, --world and --split: which rank's share of the Engram tables, under which split rule.
 * spark pack and spark engram-ranges take them with the same meaning and environment fallbacks.
 */
export function rankShareFlags(cmd: Command): Command {
  return cmd
    .option('--rank <r>', 'this rank (default NODE_RANK)')
    .option('--world <w>', 'number of ranks (default SPARK_WORLD_SIZE)')
    .option('--split <rule>', 'floor (SGLang, default), front, or heads (vLLM: whole sub-tables)');
}
