// Helpers for the policy tests: parse annotations like the translator does, and drive
// a middleware with real node:http requests on 127.0.0.1:0.
import http from 'node:http';
import type { Http1Request } from '../../../src/http1/request.ts';
import { createHttp1Listener, Http1Server } from '../../../src/http1/server.ts';
import type { AddressInfo } from 'node:net';
import type { PolicyConfig, Problem, RouteConfig } from '../../../src/model/config.ts';
import { RequestContext, type Handler, type UpstreamTimeouts } from '../../../src/proxy/context.ts';
import { composeChain, SharedStateMap } from '../../../src/middleware/registry.ts';
import type { PolicyDefinition, PolicyParseInput, SharedState } from '../../../src/middleware/types.ts';
import type { HeaderEntry } from '../../../src/middleware/header-list.ts';

export const INGRESS = { kind: 'Ingress', namespace: 'default', name: 'site' };

export interface Parsed<C> {
  config: C | undefined;
  problems: Omit<Problem, 'object'>[];
  /** "severity reason: message" */
  lines: string[];
}

export function parseWith<C>(
  policy: PolicyDefinition<C>,
  annotations: Record<string, string>,
  secrets?: Record<string, { data?: Record<string, string> }>,
): Parsed<C> {
  const problems: Omit<Problem, 'object'>[] = [];
  const input: PolicyParseInput = {
    annotations,
    ingress: INGRESS,
    report: (p) => problems.push(p),
    secret: secrets ? (name) => secrets[name] : undefined,
  };
  const config = policy.parse(input);
  // Configs travel in RouteConfig and are compared as JSON by the translator.
  if (config !== undefined) JSON.parse(JSON.stringify(config));
  return { config, problems, lines: problems.map((p) => `${p.severity} ${p.reason}: ${p.message}`) };
}

export function routeConfig(extra: Partial<RouteConfig> = {}): RouteConfig {
  return {
    id: 'default/site|example.com|Prefix|/',
    source: { kind: 'Ingress', namespace: 'default', name: 'site' },
    host: 'example.com',
    path: '/',
    pathType: 'Prefix',
    backend: { key: 'default/web:80', namespace: 'default', service: 'web', port: '80', addresses: [] },
    policies: [],
    tls: false,
    ...extra,
  };
}

export const DEFAULT_TIMEOUTS: UpstreamTimeouts = Object.freeze({ connect: 5000, responseHeaders: 60000, idle: 60000 });

/** What the stand-in forwarder saw, sent back as the JSON body of a 200. */
export interface Seen {
  clientIp: string;
  upstreamPath: string;
  requestHeaders: HeaderEntry[] | null;
  timeouts: UpstreamTimeouts;
  upstream: { key: string; protocol: string; ca?: string; insecureSkipVerify?: boolean };
  maxBodyBytes: number;
}

/** Plays the forwarder: answers 200 with what it was asked to do, applying ctx.responseHeaders. */
export const terminal: Handler = (ctx) => {
  const seen: Seen = {
    clientIp: ctx.clientIp,
    upstreamPath: ctx.upstreamPath,
    requestHeaders: ctx.requestHeaders ?? null,
    timeouts: ctx.timeouts,
    upstream: ctx.upstream,
    maxBodyBytes: ctx.maxBodyBytes,
  };
  const body = JSON.stringify(seen);
  const headers: string[] = ['content-type', 'application/json', 'vary', 'Accept-Encoding'];
  for (const [name, value] of ctx.responseHeaders ?? []) {
    const at = headers.findIndex((h, i) => i % 2 === 0 && h.toLowerCase() === name.toLowerCase());
    if (at !== -1) headers.splice(at, 2);
    headers.push(name, value);
  }
  headers.push('content-length', String(Buffer.byteLength(body)));
  ctx.res.writeHead(200, headers);
  ctx.res.end(body);
};

export interface TestServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface ServeOptions {
  /** Client address the context gets (default: the socket peer). */
  clientIp?: (req: Http1Request) => string;
  secure?: boolean;
  timeouts?: UpstreamTimeouts;
}

/** Serves `handler` (a chain ending in `terminal`) on 127.0.0.1:0 with a RequestContext per request, as the proxy builds it. */
export async function serve(handler: Handler, route: RouteConfig = routeConfig(), options: ServeOptions = {}): Promise<TestServer> {
  const http1 = new Http1Server((req, res) => {
    const url = req.url;
    const q = url.indexOf('?');
    const path = q === -1 ? url : url.slice(0, q);
    const query = q === -1 ? '' : url.slice(q);
    const host = (req.header('host') ?? '').replace(/:\d+$/, '').toLowerCase();
    const clientIp = options.clientIp ? options.clientIp(req) : (req.socket.remoteAddress ?? '');
    const ctx = new RequestContext(req, res, { config: route, handle: handler }, clientIp, options.secure ?? false, host, path, query, options.timeouts ?? DEFAULT_TIMEOUTS, performance.now());
    handler(ctx);
  }, { headerTimeout: 10_000, requestTimeout: 0, idleTimeout: 5_000 });
  const server = createHttp1Listener(http1);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        http1.destroyAll();
      }),
  };
}

/** The chain a route gets from the registry, as the proxy compiles it. */
export function compose(policies: PolicyConfig[], route: RouteConfig = routeConfig({ policies }), shared: SharedState = new SharedStateMap()): Handler {
  return composeChain(policies, terminal, shared, `${route.source.namespace}/${route.source.name}`, route);
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json<T = Seen>(): T;
}

export function request(
  server: TestServer,
  path: string,
  options: { method?: string; headers?: Record<string, string | string[]>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: server.port, path, method: options.method ?? 'GET', headers: options.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode!, headers: res.headers, body, json: <T>() => JSON.parse(body) as T });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}
