// Controller metrics and the registry /metrics serves. The proxy registers its
// request metrics on the same registry (src/proxy/metrics.ts takes it as a parameter).
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from '../util/prom.ts';
import type { Problem, ProblemDelta } from '../model/config.ts';
import { internString } from '../util/flat-string.ts';
import type { RouteTable } from '../routing/table.ts';

export interface Metrics {
  readonly registry: Registry;
  /**
   * After each rebuild: table size, timing, version and the problems: all of them (an
   * array: the gauge is counted again), or how they changed since the previous rebuild
   * (a ProblemDelta: only the series it names move).
   */
  recordRebuild(table: RouteTable, translateMs: number, problems: readonly Problem[] | ProblemDelta): void;
  /** Cluster mode: whether the watch on the Kubernetes API is up. */
  setApiConnected(connected: boolean): void;
  /** Sets portico_ready explicitly (a rebuild sets it to 1 unless trackReadiness was called). */
  setReady(ready: boolean): void;
  /** Reads readiness at scrape time instead, e.g. `() => holder.ready`. */
  trackReadiness(isReady: () => boolean): void;
  /** Reports a listener's open connections at scrape time. */
  trackConnections(listener: string, count: () => number): void;
  /** A client connection closed at once because the listener's --max-client-connections was reached. */
  countDroppedConnection(listener: string): void;
  /** Backends whose ready addresses moved in the live pools without a rebuild (EndpointSlice changes). */
  countEndpointUpdates(backends: number): void;
  /** Ingresses a translation built again from their object. */
  countIngressesTranslated(ingresses: number): void;
  /** HTTPRoutes and GRPCRoutes a translation attached again (not reused). */
  countGatewayRoutesTranslated(routes: number): void;
  /** A request the HTTP server answered itself (malformed, 414, 431, 505...), by its short reason. */
  countRefusedRequest(reason: string): void;
  /** A client whose TLS handshake failed, by bounded reason (see handshakeFailureReason). */
  countHandshakeFailure(reason: HandshakeFailureReason): void;
}

export type HandshakeFailureReason = 'timeout' | 'closed' | 'protocol' | 'no_common_alpn' | 'other';

/** Maps a tlsClientError to a label value: a few fixed reasons, never the raw message. */
export function handshakeFailureReason(err: NodeJS.ErrnoException): HandshakeFailureReason {
  const code = err.code ?? '';
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') return 'timeout';
  if (code === 'ECONNRESET' || code === 'EPIPE' || err.message === 'socket hang up' || /before secure TLS connection/.test(err.message)) return 'closed';
  if (code === 'ERR_SSL_NO_APPLICATION_PROTOCOL' || /no application protocol/i.test(err.message)) return 'no_common_alpn';
  if (code.startsWith('ERR_SSL_') || (err as { library?: string }).library === 'SSL routines') return 'protocol';
  return 'other';
}

/** Seconds; a rebuild takes from well under a millisecond to a few seconds for very large clusters. */
const REBUILD_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export function createMetrics(): Metrics {
  const registry = new Registry();
  collectDefaultMetrics(registry);
  const registers = [registry];

  const routes = new Gauge({ name: 'portico_route_table_routes', help: 'Path rules in the live route table', registers });
  // Counted when scraped, once per table: a count on every swap would walk every Gateway
  // route for a one-route change.
  let live: RouteTable | undefined;
  let counted: { table: RouteTable; hosts: number } | undefined;
  new Gauge({
    name: 'portico_route_table_hosts',
    help: 'Distinct hosts in the live route table (rules without host count as one)',
    registers,
    collect() {
      if (live === undefined) return;
      if (counted?.table !== live) counted = { table: live, hosts: countHosts(live) };
      this.set(counted.hosts);
    },
  });
  const rebuildSeconds = new Histogram({
    name: 'portico_route_table_rebuild_seconds',
    help: 'Time to rebuild the route table: translation plus building the table',
    buckets: REBUILD_BUCKETS,
    registers,
  });
  const version = new Gauge({ name: 'portico_route_table_version', help: 'Version of the live route table', registers });
  const lastRebuild = new Gauge({
    name: 'portico_route_table_last_rebuild_timestamp_seconds',
    help: 'Unix time of the last route table rebuild',
    registers,
  });
  const problemsGauge = new Gauge({
    name: 'portico_config_problems',
    help: 'Current configuration problems, by object kind, reason and severity',
    labelNames: ['kind', 'reason', 'severity'] as const,
    registers,
  });
  /** The gauge's values, by series key (kind, reason and severity joined by NUL). */
  const problemCounts = new Map<string, number>();
  const apiConnected = new Gauge({
    name: 'portico_kubernetes_api_connected',
    help: '1 while the watch on the Kubernetes API is connected (cluster mode)',
    registers,
  });

  const connectionCounts = new Map<string, () => number>();
  new Gauge({
    name: 'portico_open_connections',
    help: 'Client connections open on each listener (TLS handshakes in progress included)',
    labelNames: ['listener'] as const,
    registers,
    collect() {
      for (const [listener, count] of connectionCounts) this.set({ listener }, count());
    },
  });
  const handshakeFailures = new Counter({
    name: 'portico_tls_handshake_failures_total',
    help: 'Client connections closed because their TLS handshake failed, by reason (timeout, closed, protocol, no_common_alpn, other)',
    labelNames: ['reason'] as const,
    registers,
  });

  const droppedConnections = new Counter({
    name: 'portico_dropped_connections_total',
    help: 'Client connections closed at once because the listener had --max-client-connections open',
    labelNames: ['listener'] as const,
    registers,
  });
  const refusedRequests = new Counter({
    name: 'portico_http_refused_requests_total',
    help: 'Requests answered by the HTTP server itself, before routing, by reason (malformed_request, uri_too_long, header_overflow, too_many_headers, http_version_not_supported, unknown_method, bad_host...)',
    labelNames: ['reason'] as const,
    registers,
  });

  const endpointUpdates = new Counter({
    name: 'portico_endpoint_updates_total',
    help: 'Backends (Service ports) whose ready addresses were applied to the live pools without translating or rebuilding routes',
    registers,
  });

  const ingressesTranslated = new Counter({
    name: 'portico_ingresses_translated_total',
    help: 'Ingresses translated from their object: a change costs the Ingresses it concerns, and a status write (portico\'s own, coming back by watch) none',
    registers,
  });

  const gatewayRoutesTranslated = new Counter({
    name: 'portico_gateway_routes_translated_total',
    help: 'HTTPRoutes and GRPCRoutes translated (attached to their Gateways again): a change costs the routes it can change',
    registers,
  });

  let readiness: (() => boolean) | undefined;
  const ready = new Gauge({
    name: 'portico_ready',
    help: '1 once the first route table built from real sources is served',
    registers,
    collect() {
      if (readiness) this.set(readiness() ? 1 : 0);
    },
  });
  ready.set(0);

  return {
    registry,
    countEndpointUpdates(backends) {
      endpointUpdates.inc(backends);
    },
    countIngressesTranslated(ingresses) {
      ingressesTranslated.inc(ingresses);
    },
    countGatewayRoutesTranslated(routes) {
      gatewayRoutesTranslated.inc(routes);
    },
    recordRebuild(table, translateMs, problems) {
      routes.set(table.size);
      live = table;
      rebuildSeconds.observe((translateMs + table.buildMillis) / 1000);
      version.set(table.version);
      lastRebuild.set(Date.now() / 1000);
      if (Array.isArray(problems)) {
        // Reset first: a problem that was fixed must disappear, not stay at its old count.
        problemsGauge.reset();
        problemCounts.clear();
        for (const p of problems as readonly Problem[]) countProblem(problemCounts, p, 1);
        for (const [key, count] of problemCounts) problemsGauge.set(labelsOf(key), count);
      } else {
        // Only the series the change names; one whose last problem went disappears, as after a reset.
        const { added, removed } = problems as ProblemDelta;
        if (added.length > 0 || removed.length > 0) {
          const moved = new Set<string>();
          for (const p of removed) moved.add(countProblem(problemCounts, p, -1));
          for (const p of added) moved.add(countProblem(problemCounts, p, 1));
          for (const key of moved) {
            const count = problemCounts.get(key);
            if (count === undefined) problemsGauge.remove(labelsOf(key));
            else problemsGauge.set(labelsOf(key), count);
          }
        }
      }
      if (!readiness) ready.set(1);
    },
    setApiConnected(connected) {
      apiConnected.set(connected ? 1 : 0);
    },
    setReady(value) {
      ready.set(value ? 1 : 0);
    },
    trackReadiness(isReady) {
      readiness = isReady;
    },
    trackConnections(listener, count) {
      connectionCounts.set(listener, count);
    },
    countDroppedConnection(listener) {
      droppedConnections.inc({ listener });
    },
    countRefusedRequest(reason) {
      refusedRequests.inc({ reason });
    },
    countHandshakeFailure(reason) {
      handshakeFailures.inc({ reason });
    },
  };
}

function countHosts(table: RouteTable): number {
  const config = table.config;
  // The translator hands the Ingress hosts over already grouped: only Gateway routes are counted here.
  const seen = new Set<string>();
  if (config.ingressHosts !== undefined) {
    // Without Gateway listeners every route is an Ingress route: no need to look at them.
    if (config.listeners.size === 0) return config.ingressHosts.size;
    const gatewayRoutes = config.gatewayRoutes ?? new Map([['', config.routes.filter((route) => route.port !== undefined)]]);
    for (const list of gatewayRoutes.values()) for (const route of list) if (!config.ingressHosts.has(route.host)) seen.add(route.host);
    return config.ingressHosts.size + seen.size;
  }
  for (const route of config.routes) seen.add(route.host);
  return seen.size;
}

/** Adds `by` to the count of p's series (deleting it at 0); returns the series key. */
function countProblem(counts: Map<string, number>, p: Problem, by: 1 | -1): string {
  let key = seriesKeys.get(p);
  if (key === undefined) seriesKeys.set(p, (key = internString(`${p.object.kind}\0${p.reason}\0${p.severity}`)));
  const count = (counts.get(key) ?? 0) + by;
  if (count > 0) counts.set(key, count);
  else counts.delete(key);
  return key;
}

function labelsOf(key: string): { kind: string; reason: string; severity: string } {
  const [kind, reason, severity] = key.split('\0') as [string, string, string];
  return { kind, reason, severity };
}

/**
 * The series of each Problem object: a new config keeps the problem objects of what it did
 * not translate again (see problemKey). The keys are few (kind, reason, severity): one
 * shared copy of each, where each problem held its own tree of pieces.
 */
const seriesKeys = new WeakMap<Problem, string>();
