// Assembles one portico process from its options. Used by the CLI and by tests.
import { hostname } from 'node:os';
import type http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import tls from 'node:tls';
import type { Logger } from 'pino';
import type { Options } from './config/flags.ts';
import { CONTROLLER_NAME, type Problem } from './model/config.ts';
import { Controller, problemKey } from './controller.ts';
import { buildRouteTable, emptyRoutingConfig, RouteTableHolder } from './routing/table.ts';
import { ObjectStore } from './sources/store.ts';
import { sanitize } from './sources/sanitize.ts';
import { ManifestDirectorySource } from './sources/standalone.ts';
import type { ClusterSource } from './sources/kube/cluster-source.ts';
import type { KubeClient } from './kube/client.ts';
import type { LeaderElector } from './kube/leader.ts';
import type { IngressStatusWriter } from './status/ingress-status.ts';
import type { GatewayStatusWriter } from './status/gateway-status.ts';
import type { EventRecorder } from './status/events.ts';
import { createLogger, createAccessLogger, throttledLog } from './util/log.ts';
import { createMetrics, handshakeFailureReason } from './admin/metrics.ts';
import { createAdminServer } from './admin/server.ts';
import { CertificateStore, DEFAULT_TLS_CIPHERS } from './tls/certificates.ts';
import { GatewayListeners } from './proxy/gateway-listeners.ts';
import { UpstreamPools } from './proxy/upstreams.ts';
import { createRouteCompiler } from './proxy/compile.ts';
import { accessLogHook } from './proxy/access-log.ts';
import { attachProxy, type ProxyServer } from './proxy/server.ts';
import { configureClientIp, isTrustedProxy } from './proxy/client-ip.ts';
import { acceptProxyProtocol } from './proxy/proxy-protocol.ts';
import { configureRedirectPort } from './middleware/tls-redirect.ts';
import { configureHsts } from './middleware/hsts.ts';
import { SharedStateMap } from './middleware/registry.ts';
import { CidrSet, parseCidrList } from './middleware/cidr.ts';

export interface Portico {
  log: Logger;
  holder: RouteTableHolder;
  /** Bound ports (useful with port 0). */
  ports: { http?: number; https?: number; admin?: number };
  stop(graceMs: number): Promise<void>;
}

function listen(server: net.Server, port: number, host: string, what: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      // "::" listens on IPv6 and IPv4 (dual-stack); a host without IPv6 gets IPv4 alone.
      if (host === '::' && (err.code === 'EAFNOSUPPORT' || err.code === 'EADDRNOTAVAIL')) {
        listen(server, port, '0.0.0.0', what).then(resolve, reject);
        return;
      }
      reject(new Error(`${what}: cannot listen on ${host}:${port}: ${err.code === 'EADDRINUSE' ? 'address already in use' : err.message}`));
    };
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    });
  });
}

/** " on http://host:port and https://host:port", naming only the listeners that are on. */
function listenerUrls(bind: string, ports: { http?: number; https?: number }): string {
  const host = bind.includes(':') ? `[${bind}]` : bind;
  const urls: string[] = [];
  if (ports.http !== undefined) urls.push(`http://${host}:${ports.http}`);
  if (ports.https !== undefined) urls.push(`https://${host}:${ports.https}`);
  return urls.length === 0 ? ' (no proxy listener: --http-port and --https-port are off)' : ` on ${urls.join(' and ')}`;
}

export async function startPortico(options: Options, logger?: Logger): Promise<Portico> {
  const log = logger ?? createLogger(options.logLevel);
  const metrics = createMetrics();
  const store = new ObjectStore();
  const certificates = await CertificateStore.create(options.defaultCertificate, options.defaultKey, {
    minVersion: options.tlsMinVersion,
    ciphers: options.tlsCiphers ?? DEFAULT_TLS_CIPHERS,
  });
  configureClientIp({ trustedProxies: options.trustedProxies, log });
  configureRedirectPort(options.httpsRedirectPort > 0 ? options.httpsRedirectPort : options.httpsPort);
  configureHsts({ enabled: options.hsts, maxAge: options.hstsMaxAge, includeSubdomains: options.hstsIncludeSubdomains, preload: options.hstsPreload });

  const upstreams = new UpstreamPools({
    connectTimeout: options.upstreamConnectTimeout,
    keepAliveTimeout: options.upstreamKeepAlive,
  });
  const accessLogger = options.accessLog ? createAccessLogger(log) : undefined;
  const routes = createRouteCompiler({
    upstreams,
    registry: metrics.registry,
    shared: new SharedStateMap(),
    accessLog: accessLogger ? accessLogHook(accessLogger) : undefined,
    timeouts: {
      connect: options.upstreamConnectTimeout,
      responseHeaders: options.upstreamResponseTimeout,
      idle: options.upstreamIdleTimeout,
    },
  });
  const holder = new RouteTableHolder(buildRouteTable(0, emptyRoutingConfig(), routes.compile));
  // Series and policy state of routes that left the table go with the swap.
  holder.onSwap((table) => routes.retain(table.config));

  // ---- sources ----
  let fileProblems: readonly Problem[] = [];
  let standalone: ManifestDirectorySource | undefined;
  let cluster: ClusterSource | undefined;
  let kube: KubeClient | undefined;
  if (options.manifests) {
    standalone = new ManifestDirectorySource({ dir: options.manifests, store, log, onProblems: (p: readonly Problem[]) => {
        fileProblems = p;
        controller.changed('problems');
      } });
  } else {
    // Loaded only in cluster mode: @kubernetes/client-node alone costs about 90 MB.
    const { KubeClient, loadKubeConfig } = await import('./kube/client.ts');
    const { ClusterSource } = await import('./sources/kube/cluster-source.ts');
    kube = new KubeClient(loadKubeConfig(options.kubeconfig));
    cluster = new ClusterSource({
      client: kube,
      sink: store,
      sanitize: (raw) => sanitize(raw).object,
      log,
      namespace: options.watchNamespace,
      resyncMs: options.resync,
      onConnected: (up) => metrics.setApiConnected(up),
    });
  }

  // ---- status and events (cluster mode, leader only) ----
  let statusWriter: IngressStatusWriter | undefined;
  let gatewayStatus: GatewayStatusWriter | undefined;
  let events: EventRecorder | undefined;
  let elector: LeaderElector | undefined;
  const identity = `${process.env.POD_NAME ?? hostname()}-${process.pid}`;
  if (kube) {
    const { IngressStatusWriter } = await import('./status/ingress-status.ts');
    const { EventRecorder } = await import('./status/events.ts');
    const { LeaderElector } = await import('./kube/leader.ts');
    statusWriter = new IngressStatusWriter({
      client: kube,
      log,
      publishAddress: options.publishAddress,
      publishService: options.publishService,
      ingresses: () => store.ingresses,
      served: () => holder.current.config.servedIngresses,
    });
    const { GatewayStatusWriter } = await import('./status/gateway-status.ts');
    const ingressStatus = statusWriter;
    gatewayStatus = new GatewayStatusWriter({
      client: kube,
      log,
      controllerName: options.gatewayControllerName,
      addresses: () => ingressStatus.addresses(),
      desired: () => holder.current.config.gatewayStatus,
      gatewayClasses: () => store.gatewayClasses,
      gateways: () => store.gateways,
      httpRoutes: () => store.httpRoutes,
      bindFailures: () => gatewayListeners.failures,
    });
    events = new EventRecorder({ client: kube, log, instance: identity, ingresses: () => store.ingresses });
    elector = new LeaderElector({
      client: kube,
      namespace: process.env.POD_NAMESPACE ?? options.leaseNamespace,
      name: options.leaseName,
      identity,
      leaseDurationMs: options.leaseDuration,
      renewDeadlineMs: options.renewDeadline,
      retryPeriodMs: options.retryPeriod,
      log,
      onStartedLeading: () => {
        statusWriter!.active = true;
        gatewayStatus!.active = true;
        events!.active = true;
        void statusWriter!.reconcile();
        void gatewayStatus!.reconcile();
      },
      onStoppedLeading: () => {
        statusWriter!.active = false;
        gatewayStatus!.active = false;
        events!.active = false;
      },
    });
  }

  /** The ports portico's own listeners hold (a Gateway listener may not take them); filled as they are bound, before the first translation. */
  const ingressPorts = new Map<number, string>();
  let reportedTlsProblems = new Set<string>();
  const controller = new Controller({
    store,
    holder,
    compile: routes.compile,
    translateOptions: {
      ingressClass: options.ingressClass,
      controllerName: CONTROLLER_NAME,
      allowExternalName: options.allowExternalName,
      gatewayControllerName: options.gatewayControllerName,
      ingressPorts,
    },
    log,
    debounceMs: options.debounce,
    externalProblems: () => fileProblems,
    onRebuilt: (table, translateMs, problems) => {
      metrics.recordRebuild(table, translateMs, problems);
      // Translation validates Secrets; what the TLS layer still rejects is logged once.
      const tlsProblems = new Set<string>();
      for (const p of certificates.update(table.config.certificates)) {
        const key = problemKey(p);
        tlsProblems.add(key);
        if (!reportedTlsProblems.has(key)) log.warn({ object: p.object, reason: p.reason }, `Secret ${p.object.namespace ?? ''}/${p.object.name}: ${p.message}`);
      }
      reportedTlsProblems = tlsProblems;
      upstreams.retain(table.config);
      void statusWriter?.reconcile();
      void gatewayStatus?.reconcile();
    },
    onNewProblems: (problems) => void events?.record(problems),
  });
  store.onChange((event) => {
    // Debug: what changed, object by object (a resync lists at most a few, with the count).
    if (log.isLevelEnabled('debug')) {
      const shown = event.changes.slice(0, 5).map((c) => `${c.type} ${c.kind} ${c.key}`);
      log.debug({ changes: event.changes.length, version: event.version }, `objects changed: ${shown.join(', ')}${event.changes.length > 5 ? ', ...' : ''}`);
    }
    controller.changed(event);
  });

  // ---- listeners ----
  const ports: Portico['ports'] = {};
  // Requests the HTTP server refuses itself: counted, and logged at most once a minute per reason.
  const logRefusal = throttledLog((fields, msg) => log.info(fields, msg));
  const logDropped = throttledLog((fields, msg) => log.warn(fields, msg));
  /** --max-client-connections: beyond it a listener closes new connections at once (net.Server's 'drop'), said once a minute. */
  const capConnections = (server: net.Server, listener: string) => {
    if (options.maxClientConnections <= 0) return;
    server.maxConnections = options.maxClientConnections;
    server.on('drop', () => {
      metrics.countDroppedConnection(listener);
      logDropped(listener, { listener, limit: options.maxClientConnections }, `${listener} listener: --max-client-connections (${options.maxClientConnections}) reached; new connections are closed`);
    });
  };
  const onRefused = (reason: string, socket: net.Socket) => {
    metrics.countRefusedRequest(reason);
    logRefusal(reason, { reason, client: socket.remoteAddress }, `refused a request before routing: ${reason.replaceAll('_', ' ')}`);
  };
  const proxies: ProxyServer[] = [];
  /** A proxy server for one port: plain HTTP, or HTTPS with `certs` chosen by SNI. `gatewayPort`: a Gateway listener's. */
  const openListener = async (label: string, port: number, flag: string, certs: CertificateStore | undefined, gatewayPort?: number): Promise<{ proxy: ProxyServer; port: number }> => {
    const server = certs === undefined
      ? net.createServer({ allowHalfOpen: true, noDelay: true })
      : tls.createServer({ ...certs.httpsServerOptions(), allowHalfOpen: true, handshakeTimeout: options.tlsHandshakeTimeout });
    const proxy = attachProxy(server, holder, options, certs !== undefined, routes.unrouted, gatewayPort);
    proxy.http1.onRefused = onRefused;
    metrics.trackConnections(label, () => proxy.openConnections);
    capConnections(server, label);
    if (certs !== undefined) {
      server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
        const reason = handshakeFailureReason(err);
        metrics.countHandshakeFailure(reason);
        if (reason === 'no_common_alpn') {
          // An h2-only client gets a TLS alert, which says nothing to the person behind it.
          logRefusal('alpn', { client: socket.remoteAddress, reason }, 'a client offered only ALPN protocols portico does not serve (h2 without http/1.1?): HTTP/2 is not served yet, only HTTP/1.1');
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
    ingressPorts.set(opened.port, '--http-port');
  }
  if (options.httpsPort >= 0) {
    const opened = await openListener('https', options.httpsPort, '--https-port', certificates);
    proxies.push(opened.proxy);
    ports.https = opened.port;
    ingressPorts.set(opened.port, '--https-port');
  }
  // Gateway listeners follow the routing config (bound after the Ingress ports, which they may not take).
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
  holder.onSwap((table) => {
    // A port that could not be bound changes the Gateway's status: tell the writer once known.
    void gatewayListeners.apply(table.config.listeners).then(() => gatewayStatus?.reconcile());
  });
  let admin: http.Server | undefined;
  if (options.adminPort >= 0) {
    const routesAllowed = parseCidrList(options.adminRoutesAllow).valid;
    const allowed = routesAllowed.length > 0 ? new CidrSet(routesAllowed) : undefined;
    admin = createAdminServer({ holder, registry: metrics.registry, routesAllowed: allowed && ((ip) => allowed.has(ip)) });
    ports.admin = await listen(admin, options.adminPort, options.adminBind, '--admin-port');
    ingressPorts.set(ports.admin, '--admin-port');
  }

  // ---- initial sync, then serve ----
  if (standalone) await standalone.start();
  if (cluster) {
    cluster.start();
    elector!.start();
    await cluster.synced;
  }
  controller.start();
  log.info(
    { mode: standalone ? 'standalone' : 'cluster', http: ports.http, https: ports.https, admin: ports.admin, routes: holder.current.size },
    `portico ready: serving ${holder.current.size} routes${listenerUrls(options.bind, ports)}`,
  );

  return {
    log,
    holder,
    ports,
    async stop(graceMs: number) {
      holder.ready = false;
      controller.stop();
      standalone?.stop();
      cluster?.stop();
      await elector?.stop();
      admin?.close();
      await Promise.all([...proxies.map((p) => p.drain(graceMs)), gatewayListeners.drain(graceMs)]);
      await upstreams.close();
      admin?.closeAllConnections();
      // The access log is buffered: every line of the drained requests goes out before exit.
      await accessLogger?.flush();
    },
  };
}
