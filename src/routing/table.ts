// The live route table: an immutable object built from a RoutingConfig, swapped as
// a whole (see RouteTableHolder), so a request always sees one consistent version.
import type { CertificateConfig, RouteConfig, RoutingConfig } from '../model/config.ts';
import { NO_GATEWAYS } from '../model/config.ts';
import type { Handler } from '../proxy/context.ts';
import { GATEWAY_MATCHING, INGRESS_MATCHING, type MatchRequest, type Matcher, type MatcherFactory, type RouteEntry } from './matcher.ts';
import { ListenerHosts } from './listener-hosts.ts';
import { createPrefixMapMatcher } from './prefix-map/index.ts';

/** A route ready to serve: its config and the compiled handler chain (middleware + forwarder). */
export interface Route {
  readonly config: RouteConfig;
  readonly handle: Handler;
}

/** Turns a RouteConfig into a Route. Implemented by the proxy (src/proxy/compile.ts). */
export type RouteCompiler = (config: RouteConfig) => Route;

export interface RouteTable {
  readonly version: number;
  readonly config: RoutingConfig;
  readonly defaultRoute: Route | undefined;
  /**
   * See Matcher.match. `port` is the Gateway listener port the request came in on;
   * without it, the Ingress routes, falling back to the default backend.
   */
  match(host: string, path: string, request?: MatchRequest, query?: string, port?: number): Route | undefined;
  readonly size: number;
  /** ms spent building (translation excluded) */
  readonly buildMillis: number;
}

class ImmutableRouteTable implements RouteTable {
  readonly version: number;
  readonly config: RoutingConfig;
  readonly defaultRoute: Route | undefined;
  readonly buildMillis: number;
  readonly matcher: Matcher<Route>;
  /** Gateway routes, by listener port, then by listener hostname. */
  readonly portMatchers: ReadonlyMap<number, ListenerHosts<Matcher<Route>>>;

  constructor(
    version: number,
    config: RoutingConfig,
    matcher: Matcher<Route>,
    portMatchers: ReadonlyMap<number, ListenerHosts<Matcher<Route>>>,
    defaultRoute: Route | undefined,
    buildMillis: number,
  ) {
    this.version = version;
    this.config = config;
    this.matcher = matcher;
    this.portMatchers = portMatchers;
    this.defaultRoute = defaultRoute;
    this.buildMillis = buildMillis;
  }

  match(host: string, path: string, request?: MatchRequest, query?: string, port?: number): Route | undefined {
    if (port !== undefined) return this.portMatchers.get(port)?.select(host)?.match(host, path, request, query);
    return this.matcher.match(host, path, request, query) ?? this.defaultRoute;
  }

  get size(): number {
    return this.config.routeCount ?? this.config.routes.length;
  }
}

/**
 * Builds the live table for `config`. With `previous` (the table in service) and a
 * config whose delta follows it, only the Ingress hosts the delta names are compiled
 * and matched again, and the Gateway matchers are kept unless Gateway output changed:
 * the work is proportional to the change, not to the table.
 */
export function buildRouteTable(
  version: number,
  config: RoutingConfig,
  compile: RouteCompiler,
  createMatcher: MatcherFactory = createPrefixMapMatcher,
  previous?: RouteTable,
): RouteTable {
  const started = performance.now();
  const delta = config.delta;
  const base = previous instanceof ImmutableRouteTable && delta !== undefined && previous.config.serial === delta.base && config.ingressHosts !== undefined ? previous : undefined;
  let matcher: Matcher<Route>;
  let portMatchers: ReadonlyMap<number, ListenerHosts<Matcher<Route>>>;
  if (base !== undefined) {
    const changes = new Map<string, RouteEntry<Route>[]>();
    for (const host of delta!.hosts) changes.set(host, (config.ingressHosts!.get(host) ?? []).map((rc) => entryOf(rc, compile)));
    matcher = base.matcher.withHosts(changes);
    portMatchers = delta!.gateway ? buildPortMatchers(config, compile, createMatcher) : base.portMatchers;
  } else {
    matcher = createMatcher(
      config.routes.filter((rc) => rc.port === undefined).map((rc) => entryOf(rc, compile)),
      INGRESS_MATCHING,
    );
    portMatchers = buildPortMatchers(config, compile, createMatcher);
  }
  const defaultRoute = config.defaultBackend ? compile(config.defaultBackend) : undefined;
  return new ImmutableRouteTable(version, config, matcher, portMatchers, defaultRoute, performance.now() - started);
}

function entryOf(rc: RouteConfig, compile: RouteCompiler): RouteEntry<Route> {
  return { host: rc.host, path: rc.path, pathType: rc.pathType, conditions: rc.conditions, rank: rc.rank, byRank: rc.byRank, value: compile(rc) };
}

/** Gateway routes by listener port, then by listener hostname (listener isolation). */
function buildPortMatchers(config: RoutingConfig, compile: RouteCompiler, createMatcher: MatcherFactory): Map<number, ListenerHosts<Matcher<Route>>> {
  const byPort = new Map<number, Map<string, RouteEntry<Route>[]>>();
  for (const rc of config.routes) {
    if (rc.port === undefined) continue;
    let listeners = byPort.get(rc.port);
    if (listeners === undefined) byPort.set(rc.port, (listeners = new Map()));
    const listenerHost = rc.listenerHost ?? '';
    let list = listeners.get(listenerHost);
    if (list === undefined) listeners.set(listenerHost, (list = []));
    list.push(entryOf(rc, compile));
  }
  const portMatchers = new Map<number, ListenerHosts<Matcher<Route>>>();
  for (const [port, listeners] of byPort) {
    const matchers = new Map<string, Matcher<Route>>();
    for (const [hostname, entries] of listeners) matchers.set(hostname, createMatcher(entries, GATEWAY_MATCHING));
    portMatchers.set(port, new ListenerHosts(matchers));
  }
  return portMatchers;
}

/** An empty table: everything answers 404 until the first real table is installed. */
export function emptyRoutingConfig(): RoutingConfig {
  return { routes: [], certificates: new Map<string, CertificateConfig>(), servedIngresses: [], ignoredIngresses: [], problems: [], ...NO_GATEWAYS };
}

/**
 * The one mutable reference the proxy reads. Swapping is a single assignment, so
 * requests in flight keep the table they started with and new ones see the new table.
 */
export class RouteTableHolder {
  current: RouteTable;
  /** true once a table built from real sources was installed (drives /readyz) */
  ready = false;
  /** With workers: true once every worker serves the current table too. */
  readyGate: (() => boolean) | undefined = undefined;

  /** What /readyz reports. */
  get isReady(): boolean {
    return this.ready && (this.readyGate?.() ?? true);
  }
  private readonly listeners: ((table: RouteTable) => void)[] = [];

  constructor(initial: RouteTable) {
    this.current = initial;
  }

  swap(table: RouteTable): void {
    this.current = table;
    this.ready = true;
    for (const listener of this.listeners) listener(table);
  }

  onSwap(listener: (table: RouteTable) => void): void {
    this.listeners.push(listener);
  }
}
