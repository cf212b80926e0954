// Turns a RouteConfig into a live Route: the forwarder wrapped in the route's
// policies, with its metrics bound. Memoized by RouteConfig identity while the route
// stays in the live table, so a route that did not change keeps its compiled chain
// (and policy state) across rebuilds; retain() forgets the routes a swap left behind,
// with their metric series and policy state.
//
// The table holds a TableRoute per route, which compiles its chain at the route's first
// request: most hosts of a large cluster get no traffic, and the compiled routes (forwarder,
// balancer and endpoints, metric handles, bound handlers) of 10,000 Ingresses held 38 MB
// of a 149 MB heap. Routes whose requests may be waiting for them (a
// Service that sleeps when idle) or whose policy state must outlive a change of their
// Ingress (rate limits) are compiled with the table, as before.
import type { Registry } from 'prom-client';
import type { ProxyResponse } from './exchange-types.ts';
import type { RouteConfig, RouteSource, RoutingConfig } from '../model/config.ts';
import type { Route, RouteCompiler } from '../routing/table.ts';
import { composeChain, composeListed, keepsState, readsRoute } from '../middleware/registry.ts';
import { routeChanges } from '../routing/route-changes.ts';
import type { SharedState, SharedStateStore } from '../middleware/types.ts';
import type { AccessLogHook } from './access-log.ts';
import { kContext, type Handler, type RequestContext, type UpstreamTimeouts } from './context.ts';
import { Forwarder } from './forward.ts';
import { ProxyMetrics, type PendingCounts, type RouteMetrics } from './metrics.ts';
import type { HistogramSeries } from './latency-histogram.ts';
import type { UpstreamPools } from './upstreams.ts';
import type { WakeGates } from '../scale-to-zero/gates.ts';
import { kRoute } from '../util/response-slots.ts';

export interface RouteCompilerDeps {
  upstreams: UpstreamPools;
  /** Where the proxy metrics are registered (never the global registry). */
  registry: Registry;
  /** Policy state that survives rebuilds (and is pruned by retain()). */
  shared: SharedStateStore;
  /** Called once per finished request; absent: no access log, at no cost. */
  accessLog?: AccessLogHook;
  /** Upstream timeouts every request of these routes starts with (policies may change them). */
  timeouts?: UpstreamTimeouts;
  /** Where requests for sleeping Services wait (scale-to-zero); absent: they get 503 like any Service without endpoints. */
  gates?: WakeGates<Forwarder>;
}

/** What the proxy needs from the compiler. */
export interface ProxyRoutes {
  readonly compile: RouteCompiler;
  /**
   * The pseudo-route of requests answered before a route is found (400, 404): its
   * handle() only arranges the access-log line and the count (route labels all ""),
   * the caller answers.
   */
  readonly unrouted: Route;
  /**
   * Call after each swap with the live table's config: forgets the compiled routes it
   * does not hold, their metric series and the policy state only they used.
   */
  retain(config: RoutingConfig): void;
}

type TrackedResponse = ProxyResponse & { [kContext]?: RequestContext; [kRoute]?: CompiledRoute };

/** A compiled route: Route plus what the proxy needs when a request finishes. */
export class CompiledRoute implements Route {
  readonly config: RouteConfig;
  /** Its request counts (by status). */
  readonly requests: PendingCounts<number>;
  /** What its forwarder(s) count into: shared with the routes that share its forwarder. */
  readonly metrics: RouteMetrics;
  readonly accessLog: AccessLogHook | undefined;
  /** SharedState keys its policies read: kept while the route is live. */
  readonly sharedKeys: readonly string[];
  /**
   * Its forwarder, or one per backend of a split: they follow their backends' addresses
   * while the route is live. One is held as itself (an array of one costs 56 bytes a route).
   */
  readonly forwarders: Forwarder | readonly Forwarder[];
  private readonly chain: Handler;
  private readonly timeouts: UpstreamTimeouts | undefined;

  constructor(
    config: RouteConfig,
    chain: Handler,
    requests: PendingCounts<number>,
    metrics: RouteMetrics,
    accessLog: AccessLogHook | undefined,
    timeouts: UpstreamTimeouts | undefined,
    sharedKeys: readonly string[] = [],
    forwarders: Forwarder | readonly Forwarder[] = NO_FORWARDERS,
  ) {
    this.forwarders = forwarders;
    this.config = config;
    this.chain = chain;
    this.requests = requests;
    this.metrics = metrics;
    this.accessLog = accessLog;
    this.timeouts = timeouts;
    this.sharedKeys = sharedKeys;
  }

  /** Runs the chain; the response's 'close' (heard by the proxy's handler) calls requestFinished. */
  handle(ctx: RequestContext): void {
    if (this.timeouts !== undefined) ctx.timeouts = this.timeouts;
    const res = ctx.res as TrackedResponse;
    res[kContext] = ctx;
    res[kRoute] = this;
    this.chain(ctx);
  }
}

/**
 * What the table holds for a route: its config, and its compiled chain once a request
 * needed it. One extra call on the hot path (monomorphic), no Map lookup.
 */
class TableRoute implements Route {
  readonly config: RouteConfig;
  /** Its latency series, taken when it entered the table (see ProxyMetrics.latencyFor). */
  readonly latency: HistogramSeries;
  compiled: CompiledRoute | undefined = undefined;
  /** The last retain() that found it in the live table. */
  generation = 0;
  /** It left the table (retain): a late first request compiles a chain that is released at once. */
  released = false;
  private readonly compiler: (route: TableRoute) => CompiledRoute;

  constructor(config: RouteConfig, latency: HistogramSeries, compiler: (route: TableRoute) => CompiledRoute) {
    this.config = config;
    this.latency = latency;
    this.compiler = compiler;
  }

  handle(ctx: RequestContext): void {
    (this.compiled ?? this.compiler(this)).handle(ctx);
  }
}

/**
 * Whether a route must be compiled when it enters the table rather than at its first
 * request: requests may be waiting for it (a Service that sleeps when idle), or a compiled
 * route of its source holds policy state the new one must take over before the old one
 * lets go (rate-limit buckets across an Ingress change). A route whose source never
 * served a request has no state to keep: at 10,000 Ingresses with a rate limit each,
 * compiling them all with the first table took 0.4-2 s and 50-300 MB.
 */
function compileEagerly(config: RouteConfig, statefulSources: ReadonlyMap<string, number>): boolean {
  if (config.backend.sleep !== undefined || config.backends?.some((wb) => wb.backend.sleep !== undefined)) return true;
  return config.policies.length > 0 && statefulSources.has(sourceKey(config)) && keepsState(config);
}

/** The key policies share state under: the route's Ingress or Gateway route. */
function sourceKey(config: RouteConfig): string {
  return `${config.source.namespace}/${config.source.name}`;
}

/** Status for metrics and the access log: 499 when the client left before the answer was complete. */
export function finalStatus(ctx: RequestContext): number {
  const res = ctx.res;
  if (res.writableFinished) return res.statusCode;
  // An upgrade tunnel never "finishes": what counts is the pod's status line.
  if (ctx.upstreamAddress !== '' && ctx.req.upgrade) return res.statusCode;
  return 499;
}

/**
 * A response closed: the route that handled its request (if any) counts it and logs it.
 * Called by the proxy's request handler (server.ts) from the one 'close' listener it
 * puts on every response: a listener per route besides cost about 0.1-0.3 µs a request.
 */
export function requestFinished(res: ProxyResponse): void {
  const tracked = res as TrackedResponse;
  const ctx = tracked[kContext];
  const route = tracked[kRoute];
  if (ctx === undefined || route === undefined) return;
  tracked[kContext] = undefined;
  const status = finalStatus(ctx);
  route.requests.add(status);
  if (route.accessLog !== undefined) route.accessLog(ctx, status, ctx.responseBytes, ctx.upstreamMillis, ctx.upstreamAddress);
}

/** The config of the unrouted pseudo-route: an empty id (the access log leaves route out). */
const UNROUTED_CONFIG: RouteConfig = Object.freeze({
  id: '',
  source: { kind: 'Ingress' as const, namespace: '', name: '' },
  host: '',
  path: '',
  pathType: 'Prefix',
  backend: { key: '', namespace: '', service: '', port: '', addresses: [] },
  policies: [],
  tls: false,
});

/**
 * A weighted split (Gateway API backendRefs): each request goes to one backend, at
 * random in proportion to the weights, through that backend's own filters.
 */
function split(
  config: RouteConfig,
  upstreams: UpstreamPools,
  metrics: RouteMetrics,
  shared: SharedState,
  key: string,
  gates: WakeGates<Forwarder> | undefined,
  forwarders: Forwarder[],
): Handler {
  const handlers: Handler[] = [];
  const bounds: number[] = [];
  let total = 0;
  for (const wb of config.backends!) {
    if (wb.weight <= 0) continue;
    const forwarder = new Forwarder({ ...config, backend: wb.backend }, upstreams, metrics, gates);
    forwarders.push(forwarder);
    handlers.push(wb.policies.length === 0 ? forwarder.handle : composeListed(wb.policies, forwarder.handle, shared, key, config));
    total += wb.weight;
    bounds.push(total);
  }
  if (handlers.length === 1) return handlers[0]!;
  return (ctx) => {
    const x = Math.random() * total;
    let i = 0;
    while (x >= bounds[i]!) i++;
    handlers[i]!(ctx);
  };
}

/**
 * A forwarder and the chain of policies around it, shared by the compiled routes of one
 * source (Ingress, Gateway route) with the same backend, policies and tls flag: the hosts
 * and paths of an Ingress. Its forwarder and chain read nothing else of a route (the
 * forwarder counts errors and latency under the source and Service alone; a policy that
 * reads its route has readsRoute, and such routes get chains of their own), so every
 * request runs the same code as with a chain per route. A chain and forwarder cost about
 * 600 bytes: 12 MB when the 20,000 "/" routes of 10,000 Ingresses with four policies
 * each had been requested.
 */
class SharedChain {
  /** Its config (backend, policies, tls) is its first route's. */
  readonly forwarder: Forwarder;
  readonly chain: Handler;
  /** The SharedState keys its policies read when it was made. */
  readonly sharedKeys: readonly string[];
  /** Compiled routes using it. */
  refs = 0;

  constructor(forwarder: Forwarder, chain: Handler, sharedKeys: readonly string[]) {
    this.forwarder = forwarder;
    this.chain = chain;
    this.sharedKeys = sharedKeys;
  }

  fits(config: RouteConfig): boolean {
    const first = this.forwarder.config;
    return first.backend === config.backend && first.policies === config.policies && first.tls === config.tls;
  }
}

/** Whether a route may share its chain (SharedChain): one backend that never waits (no split, no scale-to-zero) and no policy that reads the route. */
function shareable(config: RouteConfig): boolean {
  return config.backends === undefined && config.backend.sleep === undefined && !readsRoute(config.policies);
}

const NO_KEYS: readonly string[] = Object.freeze([]);
const NO_FORWARDERS: readonly Forwarder[] = Object.freeze([]);

/** A SharedState that notes each key read into `keys`. */
function recordingKeys(shared: SharedState, keys: string[]): SharedState {
  return {
    get<T>(key: string, create: () => T): T {
      keys.push(key);
      return shared.get(key, create);
    },
  };
}

export function createRouteCompiler(deps: RouteCompilerDeps): ProxyRoutes {
  const metrics = new ProxyMetrics(deps.registry);
  const routes = new Map<RouteConfig, TableRoute>();
  /** Compiled routes holding each SharedState key. */
  const sharedRefs = new Map<string, number>();
  /** The one-key lists of sharedKeys, shared by the routes holding that key (the routes of an Ingress). */
  const singleKeys = new Map<string, readonly string[]>();
  const keyList = (read: readonly string[]): readonly string[] => {
    const keys = [...new Set(read)];
    if (keys.length !== 1) return keys;
    let list = singleKeys.get(keys[0]!);
    if (list === undefined) singleKeys.set(keys[0]!, (list = keys));
    return list;
  };
  /** Compiled routes holding some SharedState, by source (sourceKey). */
  const statefulSources = new Map<string, number>();
  /** The shared chains of each source (usually one: all its routes go to one Service). */
  const sharedChains = new WeakMap<RouteSource, SharedChain | SharedChain[]>();
  const findShared = (config: RouteConfig): SharedChain | undefined => {
    const held = sharedChains.get(config.source);
    if (held === undefined) return undefined;
    if (held instanceof SharedChain) return held.fits(config) ? held : undefined;
    for (const c of held) if (c.fits(config)) return c;
    return undefined;
  };
  const addShared = (source: RouteSource, chain: SharedChain): void => {
    const held = sharedChains.get(source);
    sharedChains.set(source, held === undefined ? chain : held instanceof SharedChain ? [held, chain] : [...held, chain]);
  };
  /** A compiled route let go of `forwarder`: false when it was shared and others still use it. */
  const releaseShared = (source: RouteSource, forwarder: Forwarder): boolean => {
    const held = sharedChains.get(source);
    if (held === undefined) return true;
    const list = held instanceof SharedChain ? [held] : held;
    const i = list.findIndex((c) => c.forwarder === forwarder);
    if (i < 0) return true;
    if (--list[i]!.refs > 0) return false;
    if (list.length === 1) sharedChains.delete(source);
    else if (list.length === 2) sharedChains.set(source, list[1 - i]!);
    else sharedChains.set(source, list.filter((_, j) => j !== i));
    return true;
  };
  let generation = 0;
  // Policies may replace ctx.timeouts, never edit the shared defaults.
  const timeouts = deps.timeouts ? Object.freeze({ ...deps.timeouts }) : undefined;
  const unrouted = new CompiledRoute(UNROUTED_CONFIG, () => {}, metrics.unroutedRequests, metrics.unrouted, deps.accessLog, undefined);

  /** The chain of a table route: its forwarder(s) in its policies, its metric handles. */
  const build = (tableRoute: TableRoute): CompiledRoute => {
    const config = tableRoute.config;
    const requests = metrics.requestsFor(config);
    const key = sourceKey(config);
    // Arrays made at their size: one grown by push keeps room for 17.
    let forwarders: Forwarder | Forwarder[];
    let chain: Handler;
    let sharedKeys: readonly string[];
    let routeMetrics: RouteMetrics;
    const share = shareable(config);
    const found = share ? findShared(config) : undefined;
    if (found !== undefined) {
      found.refs++;
      forwarders = found.forwarder;
      routeMetrics = found.forwarder.metrics;
      metrics.retainErrors(config);
      chain = found.chain;
      sharedKeys = found.sharedKeys;
    } else {
      routeMetrics = metrics.forRoute(config, tableRoute.latency);
      const read: string[] = [];
      const shared = recordingKeys(deps.shared, read);
      let terminal: Handler;
      if (config.backends === undefined) {
        forwarders = new Forwarder(config, deps.upstreams, routeMetrics, deps.gates);
        terminal = forwarders.handle;
      } else {
        forwarders = [];
        terminal = split(config, deps.upstreams, routeMetrics, shared, key, deps.gates, forwarders);
      }
      chain = composeChain(config.policies, terminal, shared, key, config);
      sharedKeys = read.length === 0 ? NO_KEYS : keyList(read);
      if (share) {
        const made = new SharedChain(forwarders as Forwarder, chain, sharedKeys);
        made.refs = 1;
        addShared(config.source, made);
      }
    }
    for (const k of sharedKeys) sharedRefs.set(k, (sharedRefs.get(k) ?? 0) + 1);
    if (sharedKeys.length > 0) statefulSources.set(key, (statefulSources.get(key) ?? 0) + 1);
    const route = new CompiledRoute(config, chain, requests, routeMetrics, deps.accessLog, timeouts, sharedKeys, forwarders);
    if (tableRoute.released) {
      // Matched on a table already replaced: serve this request, hold nothing.
      releaseCompiled(route);
      return route;
    }
    tableRoute.compiled = route;
    return route;
  };

  const compile = (config: RouteConfig): Route => {
    let route = routes.get(config);
    if (route === undefined) {
      route = new TableRoute(config, metrics.latencyFor(config), build);
      routes.set(config, route);
      if (compileEagerly(config, statefulSources)) build(route);
    }
    return route;
  };

  /** A compiled chain is no longer used: its references to series and state go. */
  const releaseCompiled = (route: CompiledRoute): void => {
    metrics.release(route.requests, route.metrics);
    if (route.forwarders instanceof Forwarder) {
      if (releaseShared(route.config.source, route.forwarders)) route.forwarders.dispose();
    } else {
      for (const forwarder of route.forwarders) forwarder.dispose();
    }
    if (route.sharedKeys.length > 0) {
      const key = sourceKey(route.config);
      const left = statefulSources.get(key)! - 1;
      if (left > 0) statefulSources.set(key, left);
      else statefulSources.delete(key);
    }
    for (const k of route.sharedKeys) {
      const refs = sharedRefs.get(k)! - 1;
      if (refs > 0) {
        sharedRefs.set(k, refs);
      } else {
        sharedRefs.delete(k);
        singleKeys.delete(k);
        deps.shared.delete(k);
      }
    }
  };

  /** A route left the table. */
  const release = (route: TableRoute): void => {
    route.released = true;
    metrics.releaseLatency(route.latency);
    if (route.compiled !== undefined) releaseCompiled(route.compiled);
  };

  let retained: RoutingConfig | undefined;
  // With a delta: only the routes it removed are released. Without: mark the live routes,
  // then sweep (one Map lookup per route, work only for the routes that left).
  const retain = (config: RoutingConfig): void => {
    const changes = routeChanges(retained, config);
    retained = config;
    if (changes !== undefined) {
      for (const rc of changes.removed) {
        const route = routes.get(rc);
        if (route === undefined) continue;
        routes.delete(rc);
        release(route);
      }
      return;
    }
    const mark = ++generation;
    let live = 0;
    const keep = (rc: RouteConfig | undefined): void => {
      const route = rc === undefined ? undefined : routes.get(rc);
      if (route !== undefined && route.generation !== mark) {
        route.generation = mark;
        live++;
      }
    };
    for (const rc of config.routes) keep(rc);
    keep(config.defaultBackend);
    if (live === routes.size) return;
    // A route that comes back later is compiled afresh, with new series and state.
    for (const [rc, route] of routes) {
      if (route.generation === mark) continue;
      routes.delete(rc);
      release(route);
    }
  };

  return { compile, unrouted, retain };
}
