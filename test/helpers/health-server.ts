// A /health endpoint on loopback for launch tests: the URL a launch polls with --health-url.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface HealthServer {
  url: string;
  hits: () => number;
  close: () => Promise<void>;
}

/**
 * Answers 503 `failures` times (and while `ready` says no), then 200; with failures < 0,
 * never 200.
 */
export async function healthServer(failures: number, ready: () => boolean = () => true): Promise<HealthServer> {
  let hits = 0;
  const server: Server = createServer((req, res) => {
    hits++;
    res.statusCode = req.url === '/health' && failures >= 0 && hits > failures && ready() ? 200 : 503;
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/health`,
    hits: () => hits,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
