// The admin listener: probes for the kubelet, metrics for Prometheus, and the
// live route table for people. Kept off the proxy ports (see --admin-port).
import type http from 'node:http';

// Built-ins through process.getBuiltinModule, everywhere in portico: an ESM import of a
// built-in reads every export of it, and the lazy ones load more modules. node:http's
// WebSocket/fetch getters load all of undici (about 12 MB per process); node:crypto's load
// webcrypto, node:util's parseArgs, node:fs's its streams; and each import makes a module
// wrapper of its own: about 2 MB of RSS per process in all (test/integration/standalone-footprint.test.ts).
const { createServer } = process.getBuiltinModule('node:http');
import type { Registry } from 'prom-client';
import type { RouteTable, RouteTableHolder } from '../routing/table.ts';
import { serializeRoutesView, type AddressesOf } from './routes-view.ts';
import { canonicalIp } from '../middleware/cidr.ts';
import { explain } from './explain.ts';
import { hostTotals, type MetricJson } from './host-stats.ts';
import { dashboardFiles, DASHBOARD_CSP } from './dashboard-files.ts';
import type { Invalidate, InvalidationRequest } from '../cache/invalidation.ts';

export interface AdminServerOptions {
  readonly holder: RouteTableHolder;
  readonly registry: Registry;
  /** The /metrics text when it is not just `registry`'s (the primary adds up its workers'). */
  readonly metricsText?: () => Promise<string>;
  /** Liveness; /healthz answers 503 when it returns false. Default: alive while the process runs. */
  readonly isAlive?: () => boolean;
  /**
   * Peers allowed to read /routes (hosts, pod addresses, Secret names), besides
   * loopback: --admin-routes-allow. The probes and /metrics are open to every peer that
   * reaches the listener, so the admin port can be on the pod IP for the kubelet and
   * Prometheus without publishing the routing table to the whole cluster.
   */
  readonly routesAllowed?: (ip: string) => boolean;
  /** The sleepable Services' state (scale-to-zero), appended to /routes as "scaleToZero"; it changes without a new table. */
  readonly sleepView?: () => unknown[];
  /** The metrics as prom-client JSON when they are not just `registry`'s (the primary adds up its workers'), for the dashboard. */
  readonly metricsJson?: () => Promise<MetricJson[]>;
  /** The ports portico listens on, shown on the dashboard. */
  readonly listeners?: () => { http?: number; https?: number; admin?: number };
  /** The hosts of an Ingress ("ns/name") from the object store: explain says which ignored Ingress names a host. */
  readonly ingressHosts?: (key: string) => readonly string[];
  /** Cache invalidation (every worker's cache) for POST /cache/purge and /cache/ban; absent: 404. */
  readonly invalidate?: Invalidate;
  /** A backend's ready addresses now, for /routes and explain (its route's may be older: see EndpointRegistry). */
  readonly addressesOf?: AddressesOf;
  /** Changes whenever addressesOf's answers do (the /routes body is cached per table and this). */
  readonly addressesVersion?: () => number;
}

/** Largest POST /cache/* body read. */
const MAX_INVALIDATION_BODY = 64 * 1024;

/** 127.0.0.0/8 or ::1 (canonicalIp has turned ::ffff:127.x into 127.x). */
function isLoopback(ip: string): boolean {
  return ip.startsWith('127.') || ip === '::1';
}

const TEXT = 'text/plain; charset=utf-8';
const JSON_TYPE = 'application/json; charset=utf-8';

/** Creates (but does not start) the admin server; the caller listens. */
export function createAdminServer(options: AdminServerOptions): http.Server {
  const { holder, registry } = options;
  const isAlive = options.isAlive ?? (() => true);
  const routesJson = new RoutesJsonCache(options.addressesOf, options.addressesVersion);
  const dashboardState = new Recent(async () => {
    const table = holder.current;
    const metrics = await (options.metricsJson ?? (() => registry.getMetricsAsJSON() as Promise<MetricJson[]>))();
    return `${JSON.stringify({ version: table.version, time: Date.now(), listeners: options.listeners?.() ?? {}, hosts: hostTotals(metrics, table.config) })}\n`;
  });

  const server = createServer((req, res) => {
    const method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const query = url.indexOf('?');
    const path = query === -1 ? url : url.slice(0, query);
    const invalidation = path === '/cache/purge' ? 'Purge' : path === '/cache/ban' ? 'Ban' : undefined;
    if (invalidation !== undefined && options.invalidate !== undefined) {
      if (method !== 'POST') {
        send(req, res, 405, TEXT, `method not allowed: ${path} takes POST with a JSON body\n`, { allow: 'POST' });
        return;
      }
      const peer = canonicalIp(req.socket.remoteAddress ?? '');
      if (!isLoopback(peer) && options.routesAllowed?.(peer) !== true) {
        send(req, res, 403, TEXT, `forbidden: ${path} is served to loopback and --admin-routes-allow only\n`);
        return;
      }
      cacheInvalidation(req, res, invalidation, options.invalidate);
      return;
    }
    if (method !== 'GET' && method !== 'HEAD') {
      send(req, res, 405, TEXT, 'method not allowed\n', { allow: 'GET, HEAD' });
      return;
    }
    /** /routes, the dashboard and explain show hosts, pod addresses and Secret names: loopback and --admin-routes-allow only. */
    const allowed = (): boolean => {
      const peer = canonicalIp(req.socket.remoteAddress ?? '');
      if (isLoopback(peer) || options.routesAllowed?.(peer) === true) return true;
      send(req, res, 403, TEXT, `forbidden: ${path} is served to loopback and --admin-routes-allow only\n`);
      return false;
    };
    const file = dashboardFiles.get(path === '/' ? '/index.html' : path);
    if (file !== undefined) {
      if (allowed()) send(req, res, 200, file.type, file.body, { 'content-security-policy': DASHBOARD_CSP, 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff' });
      return;
    }
    switch (path) {
      case '/healthz':
        if (isAlive()) send(req, res, 200, TEXT, 'ok\n');
        else send(req, res, 503, TEXT, 'not alive\n');
        return;
      case '/readyz':
        if (holder.isReady) send(req, res, 200, TEXT, 'ready\n');
        else send(req, res, 503, TEXT, 'not ready: waiting for the first route table\n');
        return;
      case '/metrics':
        (options.metricsText ?? (() => registry.metrics()))().then(
          (text) => send(req, res, 200, registry.contentType, text),
          (err: unknown) => send(req, res, 500, TEXT, `cannot collect metrics: ${err instanceof Error ? err.message : String(err)}\n`),
        );
        return;
      case '/routes/explain': {
        if (!allowed()) return;
        const params = new URLSearchParams(query === -1 ? '' : url.slice(query + 1));
        const target = params.get('url');
        if (target === null || target === '') {
          send(req, res, 400, TEXT, 'missing url: /routes/explain?url=http://host/path[&method=GET][&header=name:value...]\n');
          return;
        }
        const headers: [string, string][] = [];
        for (const h of params.getAll('header')) {
          const colon = h.indexOf(':');
          if (colon > 0) headers.push([h.slice(0, colon).trim().toLowerCase(), h.slice(colon + 1).trim()]);
        }
        const result = explain({ url: target, method: params.get('method') ?? 'GET', headers }, { table: holder.current, ingressHosts: options.ingressHosts, addressesOf: options.addressesOf });
        send(req, res, 200, JSON_TYPE, `${JSON.stringify(result)}\n`);
        return;
      }
      case '/dashboard/state': {
        if (!allowed()) return;
        dashboardState.get().then(
          (body) => send(req, res, 200, JSON_TYPE, body),
          (err: unknown) => send(req, res, 500, TEXT, `cannot collect metrics: ${err instanceof Error ? err.message : String(err)}\n`),
        );
        return;
      }
      case '/routes': {
        if (!allowed()) return;
        routesJson.get(holder.current).then(
          (body) => send(req, res, 200, JSON_TYPE, withSleepView(body, options.sleepView)),
          (err: unknown) => send(req, res, 500, TEXT, `cannot describe routes: ${err instanceof Error ? err.message : String(err)}\n`),
        );
        return;
      }
      default:
        send(req, res, 404, TEXT, 'not found: try / (the dashboard), /healthz, /readyz, /metrics, /routes, /routes/explain?url=..., or POST /cache/purge and /cache/ban\n');
    }
  });
  return server;
}

/**
 * POST /cache/purge {"host","paths":[...]} or /cache/ban {"host","pattern"}: 200 with the
 * result as JSON once every worker applied it; 400 with a clear message for bad JSON, a
 * bad regex or a missing field.
 */
function cacheInvalidation(req: http.IncomingMessage, res: http.ServerResponse, type: 'Purge' | 'Ban', invalidate: Invalidate): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > MAX_INVALIDATION_BODY) tooLarge = true;
    else chunks.push(chunk);
  });
  req.on('end', () => {
    if (tooLarge) {
      send(req, res, 413, TEXT, `the body is larger than ${MAX_INVALIDATION_BODY} bytes\n`);
      return;
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch (err) {
      const example = type === 'Purge' ? '{"host": "example.com", "paths": ["/a"]}' : '{"host": "example.com", "pattern": "^/images/"}';
      send(req, res, 400, JSON_TYPE, `${JSON.stringify({ ok: false, message: `the body is not JSON (${(err as Error).message}); expected ${example}` })}\n`);
      return;
    }
    const request = (body !== null && typeof body === 'object' ? { ...body, type } : body) as InvalidationRequest;
    invalidate(request).then(
      (result) => send(req, res, result.ok ? 200 : 400, JSON_TYPE, `${JSON.stringify(result)}\n`),
      (err: unknown) => send(req, res, 500, JSON_TYPE, `${JSON.stringify({ ok: false, message: err instanceof Error ? err.message : String(err) })}\n`),
    );
  });
}

/** The cached /routes body ("{...}\n") with the live "scaleToZero" member added. */
function withSleepView(body: Buffer, view: (() => unknown[]) | undefined): Buffer {
  if (view === undefined) return body;
  const tail = Buffer.from(`,"scaleToZero":${JSON.stringify(view())}}\n`);
  return Buffer.concat([body.subarray(0, body.lastIndexOf('}')), tail]);
}

function send(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  status: number,
  contentType: string,
  body: string | Buffer,
  extraHeaders?: Record<string, string>,
): void {
  const length = typeof body === 'string' ? Buffer.byteLength(body) : body.length;
  res.writeHead(status, { 'content-type': contentType, 'content-length': length, 'cache-control': 'no-store', ...extraHeaders });
  if (req.method === 'HEAD') res.end();
  else res.end(body);
}

/**
 * A value computed at most once a second, shared by the requests of that second: each
 * open dashboard polls /dashboard/state, and with --workers every computation asks
 * every worker for its metrics.
 */
class Recent<T> {
  private value: Promise<T> | undefined;
  private at = 0;
  private readonly compute: () => Promise<T>;

  constructor(compute: () => Promise<T>) {
    this.compute = compute;
  }

  get(): Promise<T> {
    const now = Date.now();
    if (this.value === undefined || now - this.at >= 1000) {
      const value = this.compute();
      this.value = value;
      this.at = now;
      value.catch(() => {
        if (this.value === value) this.value = undefined;
      });
    }
    return this.value;
  }
}

/**
 * The /routes body for the latest table, serialized once per table (and shared by
 * requests that arrive while it is being built): with tens of thousands of routes
 * it costs about 100 ms of CPU, and scrapers poll.
 */
class RoutesJsonCache {
  private table: RouteTable | undefined;
  private addressesVersion = 0;
  private body: Promise<Buffer> | undefined;
  private readonly addressesOf: AddressesOf | undefined;
  private readonly version: () => number;

  constructor(addressesOf?: AddressesOf, version?: () => number) {
    this.addressesOf = addressesOf;
    this.version = version ?? (() => 0);
  }

  get(table: RouteTable): Promise<Buffer> {
    const addressesVersion = this.version();
    if (this.table !== table || this.body === undefined || this.addressesVersion !== addressesVersion) {
      const body = serializeRoutesView(table.version, table.config, undefined, this.addressesOf);
      this.table = table;
      this.addressesVersion = addressesVersion;
      this.body = body;
      // Never keep a failure: the next request tries again.
      body.catch(() => {
        if (this.body === body) this.body = undefined;
      });
    }
    return this.body;
  }
}
