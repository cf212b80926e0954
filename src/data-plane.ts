// The part of portico that serves traffic: listeners (HTTP, HTTPS, Gateway ports), the
// route compiler, upstream pools and the access log. Given routing configs, it builds
// and swaps route tables. One process runs it beside the control plane, or each worker
// runs it alone and gets its configs from the primary (src/workers).
import type { Logger } from 'pino';
import type { Options } from './config/flags.ts';
import { problemKey, type EndpointUpdate, type Problem, type RoutingConfig } from './model/config.ts';
import { buildRouteTable, emptyRoutingConfig, RouteTableHolder, type RouteTable } from './routing/table.ts';
import { createAccessLogger, throttledLog, type AccessLogger } from './util/log.ts';
import { handshakeFailureReason, type Metrics } from './admin/metrics.ts';
import { CertificateStore, certificateChangesSince, DEFAULT_TLS_CIPHERS } from './tls/certificates.ts';
import { GatewayListeners } from './proxy/gateway-listeners.ts';
import { UpstreamPools } from './proxy/upstreams.ts';
import { configureEndpointLimit } from './proxy/balancer.ts';
import { createRouteCompiler, type ProxyRoutes } from './proxy/compile.ts';
import { accessLogHook } from './proxy/access-log.ts';
import { attachProxy, type ProxyServer } from './proxy/server.ts';
import { configureClientIp, isTrustedProxy } from './proxy/client-ip.ts';
import { acceptProxyProtocol } from './proxy/proxy-protocol.ts';
import { configureRedirectPort } from './middleware/tls-redirect.ts';
import { configureHsts } from './middleware/hsts.ts';
import { SharedStateMap } from './middleware/registry.ts';
import { registerChallengeMetrics } from './challenge/metrics.ts';
import { WakeGates, type WakeSignals } from './scale-to-zero/gates.ts';
import type { Forwarder } from './proxy/forward.ts';
import { configureCache } from './cache/runtime.ts';
import { registerCacheMetrics } from './cache/metrics.ts';
import type { Invalidate } from './cache/invalidation.ts';
import { listen } from './util/listen.ts';
import { workArrived } from './util/compilers.ts';
import type { Server, Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
// Built-ins through process.getBuiltinModule, not import (why: src/admin/server.ts).
const net = process.getBuiltinModule('node:net');
const tls = process.getBuiltinModule('node:tls');

export interface DataPlane {
  readonly holder: RouteTableHolder;
  readonly routes: ProxyRoutes;
  /** Bound Ingress listener ports. */
  readonly ports: { http?: number; https?: number };
  readonly gatewayListeners: GatewayListeners;
  /** Sleepable Services: activity and held requests (scale-to-zero). */
  readonly gates: WakeGates<Forwarder>;
  /** Builds the table for `config` (patching the one in service when the config says how) and swaps it in. */
  install(config: RoutingConfig): RouteTable;
  /** Moves backends to new ready addresses in the routes in service, without a new table (`replace`: these are all the moved ones). */
  updateEndpoints(updates: readonly EndpointUpdate[], replace?: boolean): void;
  /** Stops accepting, finishes requests in flight within graceMs, closes pools, flushes the access log. */
  drain(graceMs: number): Promise<void>;
  /** Client connections open now, on every listener. */
  openConnections(): number;
}

export interface DataPlaneOptions {
  /** Access lines at most this long per write (workers share stdout: PIPE_BUF keeps lines whole). */
  readonly accessLogWriteBytes?: number;
  /** The generated default certificate to serve (workers get the primary's). */
  readonly defaultPems?: { readonly cert: string; readonly key: string };
  /** Where requests for sleeping Services ask for a wake (the control plane, here or in the primary). */
  readonly wakeSignals?: WakeSignals;
  /** What PURGE/BAN on the listeners apply: every worker's cache (through the primary); default: this process' cache. */
  readonly invalidate?: Invalidate;
}

export async function startDataPlane(options: Options, log: Logger, metrics: Metrics, extra: DataPlaneOptions = {}): Promise<DataPlane> {
  const certificates = await CertificateStore.create(
    options.defaultCertificate,
    options.defaultKey,
    { minVersion: options.tlsMinVersion, ciphers: options.tlsCiphers ?? DEFAULT_TLS_CIPHERS },
    extra.defaultPems,
    { maxContexts: options.tlsContexts },
  );
  configureClientIp({ trustedProxies: options.trustedProxies, log });
  configureEndpointLimit(options.maxRequestsPerEndpoint);
  configureRedirectPort(options.httpsRedirectPort > 0 ? options.httpsRedirectPort : options.httpsPort);
  registerChallengeMetrics(metrics.registry);
  configureCache({ maxBytes: options.cacheSize, purgeAllow: options.cachePurgeAllow, invalidate: extra.invalidate });
  registerCacheMetrics(metrics.registry);
  configureHsts({ enabled: options.hsts, maxAge: options.hstsMaxAge, includeSubdomains: options.hstsIncludeSubdomains, preload: options.hstsPreload });

  const upstreams = new UpstreamPools({
    connectTimeout: options.upstreamConnectTimeout,
    keepAliveTimeout: options.upstreamKeepAlive,
  });
  const gates = new WakeGates<Forwarder>(extra.wakeSignals ?? { wake() {}, timedOut() {} }, { workers: options.workers, registry: metrics.registry });
  const accessLogger: AccessLogger | undefined = options.accessLog ? createAccessLogger(log, undefined, extra.accessLogWriteBytes) : undefined;
  const routes = createRouteCompiler({
    upstreams,
    registry: metrics.registry,
    shared: new SharedStateMap(),
    accessLog: accessLogger ? accessLogHook(accessLogger) : undefined,
    gates,
    timeouts: {
      connect: options.upstreamConnectTimeout,
      responseHeaders: options.upstreamResponseTimeout,
      idle: options.upstreamIdleTimeout,
    },
  });
  const holder = new RouteTableHolder(buildRouteTable(0, emptyRoutingConfig(), routes.compile));
  let version = 0;

  // ---- listeners ----
  const ports: DataPlane['ports'] = {};
  // Requests the HTTP server refuses itself: counted, and logged at most once a minute per reason.
  const logRefusal = throttledLog((fields, msg) => log.info(fields, msg));
  const logDropped = throttledLog((fields, msg) => log.warn(fields, msg));
  /** --max-client-connections: beyond it a listener closes new connections at once (net.Server's 'drop'), said once a minute. */
  const capConnections = (server: Server, listener: string) => {
    if (options.maxClientConnections <= 0) return;
    server.maxConnections = options.maxClientConnections;
    server.on('drop', () => {
      metrics.countDroppedConnection(listener);
      logDropped(listener, { listener, limit: options.maxClientConnections }, `${listener} listener: --max-client-connections (${options.maxClientConnections}) reached; new connections are closed`);
    });
  };
  const onRefused = (reason: string, socket: Socket) => {
    metrics.countRefusedRequest(reason);
    logRefusal(reason, { reason, client: socket.remoteAddress }, `refused a request before routing: ${reason.replaceAll('_', ' ')}`);
  };
  const proxies: ProxyServer[] = [];
  /** A proxy server for one port: plain HTTP, or HTTPS with `certs` chosen by SNI. `gatewayPort`: a Gateway listener's. */
  const openListener = async (label: string, port: number, flag: string, certs: CertificateStore | undefined, gatewayPort?: number): Promise<{ proxy: ProxyServer; port: number }> => {
    const server = certs === undefined
      ? net.createServer({ allowHalfOpen: true, noDelay: true })
      : tls.createServer({
          ...certs.httpsServerOptions(),
          ALPNProtocols: options.http2 ? ['h2', 'http/1.1'] : ['http/1.1'],
          allowHalfOpen: true,
          handshakeTimeout: options.tlsHandshakeTimeout,
        });
    const proxy = attachProxy(server, holder, options, certs !== undefined, routes.unrouted, gatewayPort);
    proxy.http1.onRefused = onRefused;
    if (proxy.http2 !== undefined) proxy.http2.onRefused = onRefused;
    metrics.trackConnections(label, () => proxy.openConnections);
    capConnections(server, label);
    // The first client after start-up turns the compilers on (src/util/compilers.ts); then this listener goes.
    const firstClient = () => {
      if (workArrived(log, 'a client connected')) server.off('connection', firstClient);
    };
    server.on('connection', firstClient);
    if (certs !== undefined) {
      server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: TLSSocket) => {
        const reason = handshakeFailureReason(err);
        metrics.countHandshakeFailure(reason);
        if (reason === 'no_common_alpn') {
          // A client that offers neither h2 nor http/1.1 gets a TLS alert, which says nothing to the person behind it.
          logRefusal('alpn', { client: socket.remoteAddress, reason }, `a client offered only ALPN protocols portico does not serve (it serves ${options.http2 ? 'h2 and ' : ''}http/1.1${options.http2 ? '' : '; --http2=false'})`);
        } else {
          log.debug({ client: socket.remoteAddress, reason, err: err.message }, 'TLS handshake failed; connection closed');
        }
      });
    }
    // After attachProxy: it wraps the connection listener that attachProxy added.
    if (options.proxyProtocol) acceptProxyProtocol(server, { isTrusted: isTrustedProxy });
    return { proxy, port: await listen(server, port, options.bind, flag) };
  };
  if (options.httpPort >= 0) {
    const opened = await openListener('http', options.httpPort, '--http-port', undefined);
    proxies.push(opened.proxy);
    ports.http = opened.port;
  }
  if (options.httpsPort >= 0) {
    const opened = await openListener('https', options.httpsPort, '--https-port', certificates);
    proxies.push(opened.proxy);
    ports.https = opened.port;
  }
  // Gateway listeners follow the routing config.
  const gatewayListeners = new GatewayListeners({
    log,
    drainMs: options.shutdownGrace,
    open: async (config) => {
      const certs = config.protocol === 'HTTPS' ? certificates.forGatewayListener() : undefined;
      certs?.update(config.certificates);
      const label = `gateway-${config.port}`;
      const opened = await openListener(label, config.port, `Gateway listener port ${config.port}`, certs, config.port);
      return { protocol: config.protocol, proxy: opened.proxy, certificates: certs };
    },
  });

  // ---- what a new table changes ----
  // Translation validates Secrets; what the TLS layer still rejects is logged once, at
  // the change that brings it, or at the first handshake that needs it (see CertificateStore).
  const reportedTlsProblems = new Set<string>();
  const logTlsProblem = (p: Problem): void => {
    const key = problemKey(p);
    if (reportedTlsProblems.has(key)) return;
    reportedTlsProblems.add(key);
    log.warn({ object: p.object, reason: p.reason }, `Secret ${p.object.namespace ?? ''}/${p.object.name}: ${p.message}`);
  };
  certificates.onRejected = logTlsProblem;
  /** The config whose certificates the store has: a delta that follows it names the hosts to update. */
  let certificatesOf: RoutingConfig | undefined;
  let lastTlsProblems: readonly Problem[] = [];
  holder.onSwap((table) => {
    // Series and policy state of routes that left the table go with the swap.
    routes.retain(table.config);
    // One renewed Secret costs its hosts, not every TLS host (alone and in each worker).
    const problems = certificates.update(table.config.certificates, certificateChangesSince(table.config, certificatesOf));
    certificatesOf = table.config;
    if (problems !== lastTlsProblems) {
      lastTlsProblems = problems;
      // A refused certificate no longer served may be logged again if it comes back.
      const current = new Set(problems.map(problemKey));
      for (const key of reportedTlsProblems) if (!current.has(key)) reportedTlsProblems.delete(key);
      for (const p of problems) logTlsProblem(p);
    }
    upstreams.retain(table.config);
    upstreams.registry.sweep();
  });

  return {
    holder,
    routes,
    ports,
    gatewayListeners,
    gates,
    install(config) {
      const table = buildRouteTable(++version, config, routes.compile, undefined, holder.current);
      holder.swap(table);
      return table;
    },
    updateEndpoints(updates, replace) {
      upstreams.registry.apply(updates, replace);
    },
    openConnections() {
      return proxies.reduce((sum, p) => sum + p.openConnections, gatewayListeners.openConnections);
    },
    async drain(graceMs) {
      holder.ready = false;
      await Promise.all([...proxies.map((p) => p.drain(graceMs)), gatewayListeners.drain(graceMs)]);
      await upstreams.close();
      // The access log is buffered: every line of the drained requests goes out before exit.
      await accessLogger?.flush();
    },
  };
}
