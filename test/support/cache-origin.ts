// A pod for the cache tests: each path answers what the test says (status, headers,
// body, a delay), and the server counts the requests it got per URL, so a test can
// say "the pod saw exactly one request".
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OriginAnswer {
  status?: number;
  headers?: Record<string, string | string[] | undefined>;
  body?: string | Buffer;
  /** ms before answering */
  delayMs?: number;
}

export type OriginHandler = (req: http.IncomingMessage, n: number) => OriginAnswer;

export interface CacheOrigin {
  readonly port: number;
  /** What `url` (path and query) answers from now on. */
  on(url: string, handler: OriginHandler | OriginAnswer): void;
  /** Requests the pod got for `url`. */
  count(url: string): number;
  /** The headers of the last request for `url`. */
  lastHeaders(url: string): http.IncomingHttpHeaders | undefined;
  /** Stop answering: new connections are refused (the pod is down). */
  close(): Promise<void>;
}

export async function startCacheOrigin(): Promise<CacheOrigin> {
  const handlers = new Map<string, OriginHandler>();
  const counts = new Map<string, number>();
  const last = new Map<string, http.IncomingHttpHeaders>();
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    const n = (counts.get(url) ?? 0) + 1;
    counts.set(url, n);
    last.set(url, req.headers);
    const handler = handlers.get(url);
    const answer = handler === undefined ? { status: 404, body: 'no handler\n' } : handler(req, n);
    const reply = () => {
      const body = answer.body ?? '';
      const headers: Record<string, string | string[]> = { 'content-length': String(Buffer.byteLength(body)) };
      for (const [name, value] of Object.entries(answer.headers ?? {})) if (value !== undefined) headers[name] = value;
      res.writeHead(answer.status ?? 200, headers);
      res.end(req.method === 'HEAD' ? undefined : body);
    };
    if (answer.delayMs) setTimeout(reply, answer.delayMs);
    else reply();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    on(url, handler) {
      handlers.set(url, typeof handler === 'function' ? handler : () => handler);
    },
    count: (url) => counts.get(url) ?? 0,
    lastHeaders: (url) => last.get(url),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
