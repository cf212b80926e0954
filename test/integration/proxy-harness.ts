// Test harness for the proxy integration tests: real upstream servers, a real proxy
// listener and route tables built from hand-written RoutingConfig objects.
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import type { BackendConfig, CertificateConfig, RouteConfig, RoutingConfig, UpstreamAddress } from '../../src/model/config.ts';
import { NO_GATEWAYS } from '../../src/model/config.ts';
import { SharedStateMap } from '../../src/middleware/registry.ts';
import { buildRouteTable, RouteTableHolder, type Route, type RouteCompiler } from '../../src/routing/table.ts';
import { createRouteCompiler } from '../../src/proxy/compile.ts';
import type { RequestContext, UpstreamTimeouts } from '../../src/proxy/context.ts';
import type { AccessLogHook } from '../../src/proxy/access-log.ts';
import { attachProxy, type ProxyServer, type ProxyServerOptions } from '../../src/proxy/server.ts';
import { UpstreamPools } from '../../src/proxy/upstreams.ts';

export interface Backend {
  name: string;
  port: number;
  server: http.Server;
  /** Requests seen, in order. */
  seen: { method: string; url: string; headers: http.IncomingHttpHeaders; rawHeaders: string[] }[];
  close(): Promise<void>;
}

export type BackendHandler = (req: http.IncomingMessage, res: http.ServerResponse, body: Buffer) => void;

/** Answers JSON describing the request it got (like the e2e echo backend), unless `handler` is given. */
export function startBackend(name: string, handler?: BackendHandler): Promise<Backend> {
  const seen: Backend['seen'] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, rawHeaders: req.rawHeaders });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (handler) return handler(req, res, body);
      const q = req.url!.indexOf('?');
      const reply = JSON.stringify({
        service: name,
        method: req.method,
        path: q === -1 ? req.url : req.url!.slice(0, q),
        query: q === -1 ? '' : req.url!.slice(q + 1),
        host: req.headers.host,
        headers: req.headers,
        bodyLength: body.length,
        bodySha256: createHash('sha256').update(body).digest('hex'),
      });
      res.writeHead(200, { 'content-type': 'application/json', 'x-served-by': name });
      res.end(reply);
    });
  });
  return listen(server).then((port) => ({
    name,
    port,
    server,
    seen,
    close: () => closeServer(server),
  }));
}

export function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

export function closeServer(server: http.Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

/** A port nothing listens on (bound, then closed). */
export { closedPort } from '../support/ports.ts';

export function backend(service: string, ports: number[], extra: Partial<BackendConfig> = {}): BackendConfig {
  return {
    key: `default/${service}:80`,
    namespace: 'default',
    service,
    port: '80',
    addresses: ports.map((port): UpstreamAddress => ({ host: '127.0.0.1', port })),
    ...extra,
  };
}

export function route(host: string, path: string, b: BackendConfig, extra: Partial<RouteConfig> = {}): RouteConfig {
  const pathType = extra.pathType ?? 'Prefix';
  return {
    id: `default/test|${host}|${pathType}|${path}`,
    source: { kind: 'Ingress', namespace: 'default', name: 'test' },
    host,
    path,
    pathType,
    backend: b,
    policies: [],
    tls: false,
    ...extra,
  };
}

export function routing(routes: RouteConfig[], defaultBackend?: RouteConfig): RoutingConfig {
  return { routes, defaultBackend, certificates: new Map<string, CertificateConfig>(), servedIngresses: [], ignoredIngresses: [], problems: [], ...NO_GATEWAYS };
}

export const TEST_OPTIONS: ProxyServerOptions = {
  clientHeaderTimeout: 10_000,
  clientRequestTimeout: 60_000,
  clientIdleTimeout: 5_000,
  upstreamConnectTimeout: 2_000,
  upstreamResponseTimeout: 10_000,
  upstreamIdleTimeout: 10_000,
};

export interface Proxy {
  port: number;
  holder: RouteTableHolder;
  pools: UpstreamPools;
  registry: Registry;
  proxy: ProxyServer;
  compile: RouteCompiler;
  /** Policy state kept across tables (pruned at each swap). */
  shared: SharedStateMap;
  /** Builds and swaps in a new table. */
  install(config: RoutingConfig): void;
  close(): Promise<void>;
}

export interface ProxyOptions {
  options?: Partial<ProxyServerOptions>;
  timeouts?: UpstreamTimeouts;
  accessLog?: AccessLogHook;
  /** Runs before each route's chain (a stand-in for a policy). */
  before?: (ctx: RequestContext) => void;
}

let version = 0;

export async function startProxy(config: RoutingConfig, o: ProxyOptions = {}): Promise<Proxy> {
  const options = { ...TEST_OPTIONS, ...o.options };
  const pools = new UpstreamPools({ connectTimeout: options.upstreamConnectTimeout, keepAliveTimeout: 4_000, retireGraceMs: 200 });
  const registry = new Registry();
  const shared = new SharedStateMap();
  const routes = createRouteCompiler({ upstreams: pools, registry, shared, accessLog: o.accessLog, timeouts: o.timeouts });
  const compiled = routes.compile;
  const before = o.before;
  const wrapped = new WeakMap<Route, Route>();
  const compile: RouteCompiler = before
    ? (rc) => {
        const r = compiled(rc);
        let w = wrapped.get(r);
        if (!w) {
          w = { config: r.config, handle: (ctx) => { before(ctx); r.handle(ctx); } };
          wrapped.set(r, w);
        }
        return w;
      }
    : compiled;
  const holder = new RouteTableHolder(buildRouteTable(++version, config, compile));
  holder.onSwap((table) => routes.retain(table.config));
  const server = net.createServer({ allowHalfOpen: true, noDelay: true });
  const proxy = attachProxy(server, holder, options, false, routes.unrouted);
  const port = await listen(server);
  return {
    port,
    holder,
    pools,
    registry,
    proxy,
    compile,
    shared,
    install(next) {
      holder.swap(buildRouteTable(++version, next, compile));
      pools.retain(next);
    },
    async close() {
      await proxy.drain(0);
      await pools.close(100);
    },
  };
}
