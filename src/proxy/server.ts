// The proxy's HTTP entry point: for each request, find the route in the live table,
// build the RequestContext and run the route's chain. Requests come from portico's
// own HTTP/1.1 server (src/http1), on plain or TLS listeners; upgrade requests
// (WebSocket) take the same path and end in a tunnel. Also graceful drain.
import type { Server, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import { Http1Server } from '../http1/server.ts';
import { sniffProtocol } from '../http2/preface.ts';
import { Http2Front } from '../http2/server.ts';
import type { ProxyRequest, ProxyResponse } from './exchange-types.ts';
import { hasDotSegment, isValidHost, normalizeHost, normalizePath, splitTarget, withoutPathParameters } from '../routing/request-target.ts';
import type { Route, RouteTableHolder } from '../routing/table.ts';
import { resolveClientIp } from './client-ip.ts';
import { requestFinished } from './compile.ts';
import { clientClosed } from './forward.ts';
import { RequestContext, type UpstreamTimeouts } from './context.ts';
import { sendError } from './errors.ts';
import { clientConnected } from '../util/idle-gc.ts';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const { Server: TlsServer } = process.getBuiltinModule('node:tls');

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
  /** Largest request body in bytes unless a route says otherwise (0: no limit); --max-body-size. */
  maxBodySize?: number;
  /** TLS listeners serve HTTP/2 to clients that offer "h2" in ALPN (--http2; default on). */
  http2?: boolean;
  /** Plain listeners serve HTTP/2 with prior knowledge (h2c), told apart by the preface (--h2c; default on). */
  h2c?: boolean;
}

/**
 * A head with more header lines is refused (431); real clients send a few dozen, and
 * the total size stays bounded by the parser's 16 KiB.
 */
const MAX_HEADERS_COUNT = 256;

/** The Host header from rawHeaders, without building req.headers (a lazy getter that copies them all). */
function hostHeader(req: ProxyRequest): string | undefined {
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
  /** -1: no limit */
  private readonly maxBodyBytes: number;
  /** Logs and counts what is answered without a route; absent: nothing is. */
  private readonly unrouted: Route | undefined;
  /** Requests (and upgrade tunnels) not finished yet. */
  inflight = 0;
  draining = false;
  private onIdle: (() => void) | undefined = undefined;

  /** The Gateway listener port this handler serves; undefined for the Ingress listeners. */
  private readonly gatewayPort: number | undefined;

  constructor(holder: RouteTableHolder, options: ProxyServerOptions, secure: boolean, unrouted?: Route, gatewayPort?: number) {
    this.holder = holder;
    this.gatewayPort = gatewayPort;
    this.secure = secure;
    this.unrouted = unrouted;
    // Frozen: policies replace ctx.timeouts, they must not edit these shared defaults.
    this.timeouts = Object.freeze({
      connect: options.upstreamConnectTimeout,
      responseHeaders: options.upstreamResponseTimeout,
      idle: options.upstreamIdleTimeout,
    });
    this.maxBodyBytes = options.maxBodySize !== undefined && options.maxBodySize > 0 ? options.maxBodySize : -1;
    this.handleRequest = this.handleRequest.bind(this);
    // One 'close' listener per response, for this handler, the route (compile.ts) and the
    // request to the pod (forward.ts), in that order: a listener each cost 0.3-0.55 µs a
    // request where one costs 0.15-0.2 (micro-benchmark, load 6-7).
    const handler = this;
    this.responseClosed = function (this: ProxyResponse): void {
      handler.finished();
      requestFinished(this);
      clientClosed(this);
    };
  }

  /** A response's 'close' listener (`this` is the response). */
  private readonly responseClosed: (this: ProxyResponse) => void;

  handleRequest(req: ProxyRequest, res: ProxyResponse): void {
    this.inflight++;
    res.on('close', this.responseClosed);
    if (this.draining) {
      // While draining, answer what still arrives on open connections, then close them.
      res.shouldKeepAlive = false;
      if (req.upgrade) {
        this.reject(req, res, performance.now(), normalizeHost(hostHeader(req)), req.url ?? '', '', 503, 'shutting down');
        return;
      }
    }
    this.route(req, res);
  }

  private route(req: ProxyRequest, res: ProxyResponse): void {
    const start = performance.now();
    const url = req.url ?? '';
    const target = splitTarget(url);
    if (target === undefined) {
      this.reject(req, res, start, normalizeHost(hostHeader(req)), url, '', 400, 'invalid request target');
      return;
    }
    // An absolute-form target's authority replaces the Host header (RFC 9112 section 3.2.2).
    const authority = target.authority;
    const rawHost = authority === '' ? hostHeader(req) : authority;
    if (rawHost !== undefined && !isValidHost(rawHost)) {
      this.reject(req, res, start, '', target.path, target.query, 400, 'invalid Host header');
      return;
    }
    const host = normalizeHost(rawHost);
    // The path the rules, the policies and the pod all see (see normalizePath).
    const path = target.path === '*' ? '*' : normalizePath(target.path);
    if (path === undefined) {
      this.reject(req, res, start, host, target.path, target.query, 400, 'invalid request path');
      return;
    }
    if (hasDotSegment(path)) {
      this.reject(req, res, start, host, path, target.query, 400, 'request path has a "." or ".." segment');
      return;
    }
    const route = this.holder.current.match(host, withoutPathParameters(path), req, target.query, this.gatewayPort);
    if (route === undefined) {
      this.reject(req, res, start, host, path, target.query, 404, `no route for host ${host === '' ? '(none)' : host} path ${path}`);
      return;
    }
    const ctx = new RequestContext(req, res, route, resolveClientIp(req), this.secure, host, path, target.query, this.timeouts, start);
    if (authority !== '') ctx.targetAuthority = authority;
    ctx.maxBodyBytes = this.maxBodyBytes;
    try {
      route.handle(ctx);
    } catch {
      // A bug in a policy must cost one request, not the process.
      if (!sendError(res, 500, 'internal error while handling the request')) res.destroy();
    }
  }

  /** Answers a request that has no route, logged and counted like any other. */
  private reject(req: ProxyRequest, res: ProxyResponse, start: number, host: string, path: string, query: string, status: number, message: string): void {
    // A 400 says what is wrong with the client's own request; other answers stay generic.
    const unrouted = this.unrouted;
    if (unrouted !== undefined) {
      unrouted.handle(new RequestContext(req, res, unrouted, resolveClientIp(req), this.secure, host, path, query, this.timeouts, start));
    }
    sendError(res, status, message, { expose: status === 400 });
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
}

export interface ProxyServer {
  readonly server: Server;
  /** Client connections open now, TLS handshakes in progress included. */
  readonly openConnections: number;
  readonly handler: ProxyRequestHandler;
  readonly http1: Http1Server;
  /** Serves the HTTP/2 connections (undefined when the listener serves HTTP/1.1 only). */
  readonly http2: Http2Front | undefined;
  /**
   * Graceful shutdown: stop accepting, close idle keep-alive connections, let requests
   * in flight finish for up to graceMs, then cut what is left.
   */
  drain(graceMs: number): Promise<void>;
}

/**
 * Serves the route table on `server`: a net.Server (plain HTTP) or a tls.Server (HTTPS),
 * created elsewhere without connection listeners of its own. `unrouted` (ProxyRoutes.unrouted)
 * logs and counts the requests answered before a route is found.
 */
export function attachProxy(
  server: Server,
  holder: RouteTableHolder,
  options: ProxyServerOptions,
  secure: boolean,
  unrouted?: Route,
  gatewayPort?: number,
): ProxyServer {
  const handler = new ProxyRequestHandler(holder, options, secure, unrouted, gatewayPort);
  const http1 = new Http1Server(handler.handleRequest, {
    // The header timeout lies within the request timeout.
    headerTimeout: options.clientRequestTimeout > 0 ? Math.min(options.clientHeaderTimeout, options.clientRequestTimeout) : options.clientHeaderTimeout,
    requestTimeout: options.clientRequestTimeout,
    idleTimeout: options.clientIdleTimeout,
    maxHeaders: MAX_HEADERS_COUNT,
  });
  const tlsListener = server instanceof TlsServer;
  const speaksH2 = tlsListener ? options.http2 !== false : options.h2c !== false;
  const http2 = speaksH2 ? new Http2Front(handler.handleRequest, { idleTimeout: options.clientIdleTimeout, firstStreamTimeout: options.clientHeaderTimeout, maxHeaders: MAX_HEADERS_COUNT }) : undefined;
  // Sockets still in their TLS handshake are not http1's yet; drain closes them too.
  const handshaking = new Set<Socket>();
  let open = 0;
  const opened = (socket: Socket) => {
    open++;
    clientConnected();
    socket.once('close', () => open--);
  };
  if (tlsListener) {
    server.on('connection', (socket: Socket) => {
      opened(socket);
      handshaking.add(socket);
      socket.once('close', () => handshaking.delete(socket));
    });
    // Node reports a failed or timed-out handshake here and leaves the socket open (a
    // client that connected and closed, or never spoke, would hold a descriptor forever).
    server.on('tlsClientError', (_err: Error, socket: TLSSocket) => socket.destroy());
    server.on('secureConnection', (socket: TLSSocket) => {
      if (http2 !== undefined && socket.alpnProtocol === 'h2') http2.accept(socket);
      else http1.accept(socket);
    });
  } else if (http2 !== undefined) {
    const headerTimeout = options.clientHeaderTimeout;
    const acceptHttp1 = (socket: Socket, head: Buffer) => {
      http1.accept(socket, head);
      socket.resume();
    };
    const acceptH2c = (socket: Socket, head: Buffer) => {
      // The HTTP/2 engine reads what is put back before it reads the socket.
      socket.unshift(head);
      http2.accept(socket);
    };
    server.on('connection', (socket: Socket) => {
      opened(socket);
      sniffProtocol(socket, headerTimeout, acceptHttp1, acceptH2c);
    });
  } else {
    server.on('connection', opened);
    server.on('connection', http1.accept);
  }

  let draining: Promise<void> | undefined;
  return {
    server,
    handler,
    http1,
    http2,
    get openConnections() {
      return open;
    },
    drain(graceMs: number): Promise<void> {
      draining ??= (async () => {
        handler.draining = true;
        const closed = new Promise<void>((resolve) => {
          if (!server.listening) resolve();
          else server.close(() => resolve());
        });
        http1.drain();
        http2?.drain();
        let timer: NodeJS.Timeout | undefined;
        const expired = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, graceMs);
        });
        await Promise.race([handler.whenIdle(), expired]);
        clearTimeout(timer);
        http1.destroyAll();
        http2?.destroyAll();
        for (const socket of handshaking) socket.destroy();
        await closed;
      })();
      return draining;
    },
  };
}
