// Waiting for the head's /health endpoint (SGLang and vLLM both answer 200 once the model is
// loaded and the server accepts requests), polling at an interval, bounded by a timeout.
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';

export interface HealthOptions {
  url: string;
  timeoutMs: number;
  intervalMs: number;
  /** Per-request timeout (default min(10 s, interval × 5)). */
  requestTimeoutMs?: number;
  signal?: AbortSignal;
  /** Called every progressEveryMs with the time waited and the last answer. */
  onProgress?(elapsedMs: number, last: string): void;
  progressEveryMs?: number;
}

export type HealthResult =
  | { ok: true; ms: number; attempts: number }
  | { ok: false; reason: 'timeout' | 'aborted'; ms: number; attempts: number; last: string };

/** One GET: the status code, or the network error's code. */
export function probe(url: string, timeoutMs: number): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (v: { status?: number; error?: string }) => {
      if (!settled) {
        settled = true;
        resolve(v);
      }
    };
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      settle({ error: 'invalid URL' });
      return;
    }
    const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
    const req = request(target, { method: 'GET', agent: false, timeout: timeoutMs }, (res) => {
      res.resume();
      settle({ status: res.statusCode ?? 0 });
    });
    req.on('timeout', () => {
      req.destroy();
      settle({ error: 'no answer' });
    });
    req.on('error', (err: NodeJS.ErrnoException) => settle({ error: err.code ?? err.message }));
    req.end();
  });
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

export async function waitForHealth(options: HealthOptions): Promise<HealthResult> {
  const began = performance.now();
  const elapsed = () => performance.now() - began;
  const requestTimeout = options.requestTimeoutMs ?? Math.min(10_000, Math.max(200, options.intervalMs * 5));
  let attempts = 0;
  let last = 'no answer yet';
  let lastProgress = 0;
  while (true) {
    if (options.signal?.aborted) return { ok: false, reason: 'aborted', ms: elapsed(), attempts, last };
    const left = options.timeoutMs - elapsed();
    if (left <= 0) return { ok: false, reason: 'timeout', ms: elapsed(), attempts, last };
    attempts++;
    const r = await probe(options.url, Math.min(requestTimeout, Math.max(50, left)));
    if (r.status === 200) return { ok: true, ms: elapsed(), attempts };
    last = r.status !== undefined ? `HTTP ${r.status}` : (r.error ?? 'no answer');
    if (options.onProgress && options.progressEveryMs && elapsed() - lastProgress >= options.progressEveryMs) {
      lastProgress = elapsed();
      options.onProgress(lastProgress, last);
    }
    await sleep(Math.min(options.intervalMs, Math.max(0, options.timeoutMs - elapsed())), options.signal);
  }
}

/** 605 s → `10m05s`; 0.4 s → `0.4s`. */
export function formatDuration(ms: number): string {
  if (ms < 9950) return `${(ms / 1000).toFixed(1).replace(/\.0$/, '')}s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
