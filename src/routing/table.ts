// The live route table: an immutable object built from a RoutingConfig, swapped as
// a whole (see RouteTableHolder), so a request always sees one consistent version.
import type { CertificateConfig, RouteConfig, RoutingConfig } from '../model/config.ts';
import { gatewaySourceKey, NO_GATEWAYS } from '../model/config.ts';
import { PatchedMap } from '../util/patched-map.ts';
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
  /** The entries behind portMatchers, by gatewayGroupKey: a change rebuilds only its groups. */
  readonly gatewayEntries: GatewayEntries;

  constructor(
    version: number,
    config: RoutingConfig,
    matcher: Matcher<Route>,
    gateway: GatewayMatchers,
    defaultRoute: Route | undefined,
    buildMillis: number,
  ) {
    this.version = version;
    this.config = config;
    this.matcher = matcher;
    this.portMatchers = gateway.portMatchers;
    this.gatewayEntries = gateway.entries;
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
  let gateway: GatewayMatchers;
  if (base !== undefined) {
    const changes = new Map<string, RouteEntry<Route>[]>();
    for (const host of delta!.hosts) changes.set(host, (config.ingressHosts!.get(host) ?? []).map((rc) => entryOf(rc, compile)));
    matcher = base.matcher.withHosts(changes);
    const kept: GatewayMatchers = { portMatchers: base.portMatchers, entries: base.gatewayEntries };
    if (!delta!.gateway) gateway = kept;
    else if (delta!.gatewayRoutes !== undefined && config.gatewayRoutes !== undefined && base.config.gatewayRoutes !== undefined) {
      gateway = patchPortMatchers(kept, base.config.gatewayRoutes, config.gatewayRoutes, delta!.gatewayRoutes, compile, createMatcher);
    } else gateway = buildPortMatchers(config, compile, createMatcher);
  } else {
    matcher = createMatcher(
      config.routes.filter((rc) => rc.port === undefined).map((rc) => entryOf(rc, compile)),
      INGRESS_MATCHING,
    );
    gateway = buildPortMatchers(config, compile, createMatcher);
  }
  const defaultRoute = config.defaultBackend ? compile(config.defaultBackend) : undefined;
  return new ImmutableRouteTable(version, config, matcher, gateway, defaultRoute, performance.now() - started);
}

function entryOf(rc: RouteConfig, compile: RouteCompiler): RouteEntry<Route> {
  return { host: rc.host, path: rc.path, pathType: rc.pathType, conditions: rc.conditions, rank: rc.rank, byRank: rc.byRank, value: compile(rc) };
}

type GatewayEntries = PatchedMap<string, readonly RouteEntry<Route>[]>;

interface GatewayMatchers {
  readonly portMatchers: ReadonlyMap<number, ListenerHosts<Matcher<Route>>>;
  readonly entries: GatewayEntries;
}

/** Port, listener hostname and route hostname: the entries one host of one listener's matcher holds. */
function gatewayGroupKey(port: number, listenerHost: string, host: string): string {
  return `${port}\n${listenerHost}\n${host}`;
}

/** Gateway routes by listener port, then by listener hostname (listener isolation). */
function buildPortMatchers(config: RoutingConfig, compile: RouteCompiler, createMatcher: MatcherFactory): GatewayMatchers {
  const byPort = new Map<number, Map<string, RouteEntry<Route>[]>>();
  const entries = new Map<string, RouteEntry<Route>[]>();
  for (const rc of config.routes) {
    if (rc.port === undefined) continue;
    let listeners = byPort.get(rc.port);
    if (listeners === undefined) byPort.set(rc.port, (listeners = new Map()));
    const listenerHost = rc.listenerHost ?? '';
    let list = listeners.get(listenerHost);
    if (list === undefined) listeners.set(listenerHost, (list = []));
    const entry = entryOf(rc, compile);
    list.push(entry);
    const key = gatewayGroupKey(rc.port, listenerHost, rc.host);
    const group = entries.get(key);
    if (group === undefined) entries.set(key, [entry]);
    else group.push(entry);
  }
  const portMatchers = new Map<number, ListenerHosts<Matcher<Route>>>();
  for (const [port, listeners] of byPort) {
    const matchers = new Map<string, Matcher<Route>>();
    for (const [hostname, list] of listeners) matchers.set(hostname, createMatcher(list, GATEWAY_MATCHING));
    portMatchers.set(port, new ListenerHosts(matchers));
  }
  return { portMatchers, entries: PatchedMap.of<string, readonly RouteEntry<Route>[]>(entries) };
}

/**
 * The Gateway matchers of `base` with the routes of `changed` sources replaced: only the
 * hosts of the listeners those routes were or are on are matched again, so one HTTPRoute
 * changed among 10,000 costs its own hosts. The result matches what buildPortMatchers
 * makes from the whole config (listeners left without routes are dropped, as there).
 */
function patchPortMatchers(
  base: GatewayMatchers,
  before: ReadonlyMap<string, readonly RouteConfig[]>,
  now: ReadonlyMap<string, readonly RouteConfig[]>,
  changed: ReadonlySet<string>,
  compile: RouteCompiler,
  createMatcher: MatcherFactory,
): GatewayMatchers {
  /** Group key -> its entries after the change. */
  const groups = new Map<string, RouteEntry<Route>[]>();
  const touch = (rc: RouteConfig) => {
    const key = gatewayGroupKey(rc.port!, rc.listenerHost ?? '', rc.host);
    if (!groups.has(key)) groups.set(key, (base.entries.get(key) ?? []).filter((e) => !changed.has(gatewaySourceKey(e.value.config.source))));
    return key;
  };
  for (const source of changed) for (const rc of before.get(source) ?? []) touch(rc);
  for (const source of changed) for (const rc of now.get(source) ?? []) groups.get(touch(rc))!.push(entryOf(rc, compile));

  /** Port -> listener hostname -> route host -> entries. */
  const byListener = new Map<number, Map<string, Map<string, RouteEntry<Route>[]>>>();
  for (const [key, list] of groups) {
    const [port, listenerHost, host] = key.split('\n') as [string, string, string];
    let listeners = byListener.get(Number(port));
    if (listeners === undefined) byListener.set(Number(port), (listeners = new Map()));
    let hosts = listeners.get(listenerHost);
    if (hosts === undefined) listeners.set(listenerHost, (hosts = new Map()));
    hosts.set(host, list);
  }
  const portMatchers = new Map(base.portMatchers);
  for (const [port, listeners] of byListener) {
    const matchers = new Map(base.portMatchers.get(port)?.byHostname ?? []);
    for (const [listenerHost, hosts] of listeners) {
      const current = matchers.get(listenerHost);
      const next = current !== undefined ? current.withHosts(hosts) : createMatcher([...hosts.values()].flat(), GATEWAY_MATCHING);
      if (next.size > 0) matchers.set(listenerHost, next);
      else matchers.delete(listenerHost);
    }
    if (matchers.size > 0) portMatchers.set(port, new ListenerHosts(matchers));
    else portMatchers.delete(port);
  }
  return { portMatchers, entries: base.entries.with([...groups].map(([key, list]) => [key, list.length > 0 ? list : undefined] as const)) };
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
