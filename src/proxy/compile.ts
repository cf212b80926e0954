// Turns a RouteConfig into a live Route: the forwarder wrapped in the route's
// policies, with its metrics bound. Memoized by RouteConfig identity while the route
// stays in the live table, so a route that did not change keeps its compiled chain
// (and policy state) across rebuilds; retain() forgets the routes a swap left behind,
// with their metric series and policy state.
import type { Registry } from 'prom-client';
import type { ProxyResponse } from './exchange-types.ts';
import type { RouteConfig, RoutingConfig } from '../model/config.ts';
import type { Route, RouteCompiler } from '../routing/table.ts';
import { composeChain, composeListed } from '../middleware/registry.ts';
import { routeChanges } from '../routing/route-changes.ts';
import type { SharedState, SharedStateStore } from '../middleware/types.ts';
import type { AccessLogHook } from './access-log.ts';
import { kContext, type Handler, type RequestContext, type UpstreamTimeouts } from './context.ts';
import { Forwarder } from './forward.ts';
import { ProxyMetrics, type RouteMetrics } from './metrics.ts';
import type { UpstreamPools } from './upstreams.ts';
import type { WakeGates } from '../scale-to-zero/gates.ts';

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

const kRoute = Symbol('portico.route');
type TrackedResponse = ProxyResponse & { [kContext]?: RequestContext; [kRoute]?: CompiledRoute };

/** A compiled route: Route plus what the proxy needs when a request finishes. */
export class CompiledRoute implements Route {
  readonly config: RouteConfig;
  readonly metrics: RouteMetrics;
  readonly accessLog: AccessLogHook | undefined;
  /** SharedState keys its policies read: kept while the route is live. */
  readonly sharedKeys: readonly string[];
  /** The last retain() that found it in the live table. */
  generation = 0;
  /** Its forwarders (one, or one per backend of a split): they follow their backends' addresses while the route is live. */
  readonly forwarders: readonly Forwarder[];
  private readonly chain: Handler;
  private readonly timeouts: UpstreamTimeouts | undefined;

  constructor(
    config: RouteConfig,
    chain: Handler,
    metrics: RouteMetrics,
    accessLog: AccessLogHook | undefined,
    timeouts: UpstreamTimeouts | undefined,
    sharedKeys: readonly string[] = [],
    forwarders: readonly Forwarder[] = [],
  ) {
    this.forwarders = forwarders;
    this.config = config;
    this.chain = chain;
    this.metrics = metrics;
    this.accessLog = accessLog;
    this.timeouts = timeouts;
    this.sharedKeys = sharedKeys;
    this.handle = this.handle.bind(this);
  }

  handle(ctx: RequestContext): void {
    if (this.timeouts !== undefined) ctx.timeouts = this.timeouts;
    const res = ctx.res as TrackedResponse;
    res[kContext] = ctx;
    res[kRoute] = this;
    res.on('close', onRequestFinished);
    this.chain(ctx);
  }
}

/** Status for metrics and the access log: 499 when the client left before the answer was complete. */
export function finalStatus(ctx: RequestContext): number {
  const res = ctx.res;
  if (res.writableFinished) return res.statusCode;
  // An upgrade tunnel never "finishes": what counts is the pod's status line.
  if (ctx.upstreamAddress !== '' && ctx.req.upgrade) return res.statusCode;
  return 499;
}

function onRequestFinished(this: TrackedResponse): void {
  const ctx = this[kContext];
  const route = this[kRoute];
  if (ctx === undefined || route === undefined) return;
  this[kContext] = undefined;
  const status = finalStatus(ctx);
  route.metrics.countResponse(status);
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

const NO_KEYS: readonly string[] = Object.freeze([]);

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
  const compiled = new Map<RouteConfig, CompiledRoute>();
  /** Compiled routes holding each SharedState key. */
  const sharedRefs = new Map<string, number>();
  let generation = 0;
  // Policies may replace ctx.timeouts, never edit the shared defaults.
  const timeouts = deps.timeouts ? Object.freeze({ ...deps.timeouts }) : undefined;
  const unrouted = new CompiledRoute(UNROUTED_CONFIG, () => {}, metrics.unrouted, deps.accessLog, undefined);

  const compile = (config: RouteConfig): Route => {
    let route = compiled.get(config);
    if (route === undefined) {
      const routeMetrics = metrics.forRoute(config);
      const key = `${config.source.namespace}/${config.source.name}`;
      const read: string[] = [];
      const shared = recordingKeys(deps.shared, read);
      // Arrays made at their size: one grown by push keeps room for 17 (40,000 routes).
      let forwarders: Forwarder[];
      let terminal: Handler;
      if (config.backends === undefined) {
        const forwarder = new Forwarder(config, deps.upstreams, routeMetrics, deps.gates);
        forwarders = [forwarder];
        terminal = forwarder.handle;
      } else {
        forwarders = [];
        terminal = split(config, deps.upstreams, routeMetrics, shared, key, deps.gates, forwarders);
      }
      const chain = composeChain(config.policies, terminal, shared, key, config);
      const sharedKeys = read.length === 0 ? NO_KEYS : [...new Set(read)];
      for (const k of sharedKeys) sharedRefs.set(k, (sharedRefs.get(k) ?? 0) + 1);
      route = new CompiledRoute(config, chain, routeMetrics, deps.accessLog, timeouts, sharedKeys, forwarders);
      compiled.set(config, route);
    }
    return route;
  };

  /** A compiled route left the table: its references to series and state go. */
  const release = (route: CompiledRoute): void => {
    metrics.release(route.metrics);
    for (const forwarder of route.forwarders) forwarder.dispose();
    for (const k of route.sharedKeys) {
      const refs = sharedRefs.get(k)! - 1;
      if (refs > 0) {
        sharedRefs.set(k, refs);
      } else {
        sharedRefs.delete(k);
        deps.shared.delete(k);
      }
    }
  };

  let retained: RoutingConfig | undefined;
  // With a delta: only the routes it removed are released. Without: mark the live routes,
  // then sweep (one Map lookup per route, work only for the routes that left).
  const retain = (config: RoutingConfig): void => {
    const changes = routeChanges(retained, config);
    retained = config;
    if (changes !== undefined) {
      for (const rc of changes.removed) {
        const route = compiled.get(rc);
        if (route === undefined) continue;
        compiled.delete(rc);
        release(route);
      }
      return;
    }
    const mark = ++generation;
    let live = 0;
    const keep = (rc: RouteConfig | undefined): void => {
      const route = rc === undefined ? undefined : compiled.get(rc);
      if (route !== undefined && route.generation !== mark) {
        route.generation = mark;
        live++;
      }
    };
    for (const rc of config.routes) keep(rc);
    keep(config.defaultBackend);
    if (live === compiled.size) return;
    // A route that comes back later is compiled afresh, with new series and state.
    for (const [rc, route] of compiled) {
      if (route.generation === mark) continue;
      compiled.delete(rc);
      release(route);
    }
  };

  return { compile, unrouted, retain };
}
