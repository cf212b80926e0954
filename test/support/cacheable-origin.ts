// A pod whose answers may be cached for 5 minutes (Cache-Control: public, max-age=300);
// it counts the requests that reach it, by path, so a test can tell a cache HIT (not
// counted) from a MISS (counted).
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface CacheableOrigin {
  port: number;
  /** Requests that reached the pod, by path (with query). */
  hits: Map<string, number>;
  close(): Promise<void>;
}

export async function startCacheableOrigin(): Promise<CacheableOrigin> {
  const hits = new Map<string, number>();
  const server = http.createServer((req, res) => {
    hits.set(req.url!, (hits.get(req.url!) ?? 0) + 1);
    res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'public, max-age=300' });
    res.end(`${req.url} #${hits.get(req.url!)}`);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
