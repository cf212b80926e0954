// The proxy's HTTP entry point: for each request, find the route in the live table,
// build the RequestContext and run the route's chain. Also upgrade requests
// (WebSocket), client-side timeouts and graceful drain.
import type http from 'node:http';
import type https from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { hasDotSegment, normalizeHost, splitTarget } from '../routing/request-target.ts';
import type { RouteTableHolder } from '../routing/table.ts';
import { resolveClientIp } from './client-ip.ts';
import { RequestContext, type UpstreamTimeouts } from './context.ts';
import { sendError } from './errors.ts';
import { upgradeResponse } from './websocket.ts';

/** The flags the proxy listeners use (config/flags.ts Options has them all). */
export interface ProxyServerOptions {
  /** ms a client has to send the request headers */
  clientHeaderTimeout: number;
  /** ms a client has to send the whole request (0: no limit) */
  clientRequestTimeout: number;
  /** ms an idle keep-alive client connection is kept */
  clientIdleTimeout: number;
  upstreamConnectTimeout: number;
  upstreamResponseTimeout: number;
  upstreamIdleTimeout: number;
}

/**
 * Headers beyond this count are ignored by Node's parser; real clients send a few dozen,
 * and the total size stays bounded by --max-http-header-size (16 KiB).
 */
const MAX_HEADERS_COUNT = 256;

/** The Host header from rawHeaders, without building req.headers (a lazy getter that copies them all). */
function hostHeader(req: IncomingMessage): string | undefined {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!;
    if (name.length === 4 && (name === 'Host' || name === 'host' || name.toLowerCase() === 'host')) return raw[i + 1];
  }
  return undefined;
}

export class ProxyRequestHandler {
  private readonly holder: RouteTableHolder;
  private readonly secure: boolean;
  private readonly timeouts: UpstreamTimeouts;
  /** Requests (and upgrade tunnels) not finished yet. */
  inflight = 0;
  draining = false;
  private onIdle: (() => void) | undefined = undefined;
  private readonly tunnels = new Set<Duplex>();

  constructor(holder: RouteTableHolder, options: ProxyServerOptions, secure: boolean) {
    this.holder = holder;
    this.secure = secure;
    // Frozen: policies replace ctx.timeouts, they must not edit these shared defaults.
    this.timeouts = Object.freeze({
      connect: options.upstreamConnectTimeout,
      responseHeaders: options.upstreamResponseTimeout,
      idle: options.upstreamIdleTimeout,
    });
    this.handleRequest = this.handleRequest.bind(this);
    this.handleUpgrade = this.handleUpgrade.bind(this);
    this.finished = this.finished.bind(this);
  }

  handleRequest(req: IncomingMessage, res: ServerResponse): void {
    this.inflight++;
    res.on('close', this.finished);
    // While draining, answer what still arrives on open connections, then close them.
    if (this.draining) res.shouldKeepAlive = false;
    this.route(req, res);
  }

  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    // After an upgrade Node no longer watches the socket for errors: a reset must not crash the process.
    socket.on('error', ignore);
    this.inflight++;
    this.tunnels.add(socket);
    socket.once('close', () => {
      this.tunnels.delete(socket);
      this.finished();
    });
    const res = upgradeResponse(req, socket, head);
    if (this.draining) {
      sendError(res, 503, 'shutting down');
      return;
    }
    this.route(req, res);
  }

  private route(req: IncomingMessage, res: ServerResponse): void {
    const start = performance.now();
    const target = splitTarget(req.url ?? '');
    if (target === undefined) {
      sendError(res, 400, 'invalid request target');
      return;
    }
    const path = target.path;
    if (hasDotSegment(path)) {
      sendError(res, 400, 'request path has a "." or ".." segment');
      return;
    }
    const host = normalizeHost(hostHeader(req));
    const route = this.holder.current.match(host, path);
    if (route === undefined) {
      sendError(res, 404, `no route for host ${host === '' ? '(none)' : host} path ${path}`);
      return;
    }
    const ctx = new RequestContext(req, res, route, resolveClientIp(req), this.secure, host, path, target.query, this.timeouts, start);
    try {
      route.handle(ctx);
    } catch {
      // A bug in a policy must cost one request, not the process.
      if (!sendError(res, 500, 'internal error while handling the request')) res.destroy();
    }
  }

  private finished(): void {
    this.inflight--;
    if (this.draining && this.inflight === 0) this.onIdle?.();
  }

  /** Resolves when no request is in flight any more. */
  whenIdle(): Promise<void> {
    if (this.inflight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      this.onIdle = resolve;
    });
  }

  destroyTunnels(): void {
    for (const socket of this.tunnels) socket.destroy();
    this.tunnels.clear();
  }
}

function ignore(): void {}

/** A request listener for any node:http(s) server. */
export function createProxyHandler(holder: RouteTableHolder, options: ProxyServerOptions, secure = false): (req: IncomingMessage, res: ServerResponse) => void {
  return new ProxyRequestHandler(holder, options, secure).handleRequest;
}

export interface ProxyServer {
  readonly server: http.Server | https.Server;
  readonly handler: ProxyRequestHandler;
  /**
   * Graceful shutdown: stop accepting, close idle keep-alive connections, let requests
   * in flight finish for up to graceMs, then cut what is left.
   */
  drain(graceMs: number): Promise<void>;
}

/** Serves the route table on `server` (plain or TLS, created elsewhere) and applies the client timeouts. */
export function attachProxy(server: http.Server | https.Server, holder: RouteTableHolder, options: ProxyServerOptions, secure: boolean): ProxyServer {
  const handler = new ProxyRequestHandler(holder, options, secure);
  server.on('request', handler.handleRequest);
  server.on('upgrade', handler.handleUpgrade);
  server.requestTimeout = options.clientRequestTimeout;
  // Node wants the header timeout within the request timeout.
  server.headersTimeout = options.clientRequestTimeout > 0 ? Math.min(options.clientHeaderTimeout, options.clientRequestTimeout) : options.clientHeaderTimeout;
  server.keepAliveTimeout = options.clientIdleTimeout;
  server.maxHeadersCount = MAX_HEADERS_COUNT;

  let draining: Promise<void> | undefined;
  return {
    server,
    handler,
    drain(graceMs: number): Promise<void> {
      draining ??= (async () => {
        handler.draining = true;
        const closed = new Promise<void>((resolve) => {
          if (!server.listening) resolve();
          else server.close(() => resolve());
        });
        server.closeIdleConnections();
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        });
        // Connections that finish their last request become idle: close them as they do.
        const sweeper = setInterval(() => server.closeIdleConnections(), 100);
        await Promise.race([handler.whenIdle(), expired]);
        clearTimeout(timer);
        clearInterval(sweeper);
        server.closeAllConnections();
        handler.destroyTunnels();
        await closed;
      })();
      return draining;
    },
  };
}
