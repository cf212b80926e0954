// The live route table: an immutable object built from a RoutingConfig, swapped as
// a whole (see RouteTableHolder), so a request always sees one consistent version.
import type { CertificateConfig, RouteConfig, RoutingConfig } from '../model/config.ts';
import { NO_GATEWAYS } from '../model/config.ts';
import type { Handler } from '../proxy/context.ts';
import type { Matcher, MatcherFactory } from './matcher.ts';
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
  /** See Matcher.match; falls back to the default backend. */
  match(host: string, path: string): Route | undefined;
  readonly size: number;
  /** ms spent building (translation excluded) */
  readonly buildMillis: number;
}

class ImmutableRouteTable implements RouteTable {
  readonly version: number;
  readonly config: RoutingConfig;
  readonly defaultRoute: Route | undefined;
  readonly buildMillis: number;
  private readonly matcher: Matcher<Route>;

  constructor(version: number, config: RoutingConfig, matcher: Matcher<Route>, defaultRoute: Route | undefined, buildMillis: number) {
    this.version = version;
    this.config = config;
    this.matcher = matcher;
    this.defaultRoute = defaultRoute;
    this.buildMillis = buildMillis;
  }

  match(host: string, path: string): Route | undefined {
    return this.matcher.match(host, path) ?? this.defaultRoute;
  }

  get size(): number {
    return this.matcher.size;
  }
}

export function buildRouteTable(
  version: number,
  config: RoutingConfig,
  compile: RouteCompiler,
  createMatcher: MatcherFactory = createPrefixMapMatcher,
): RouteTable {
  const started = performance.now();
  const entries = config.routes.map((rc) => ({ host: rc.host, path: rc.path, pathType: rc.pathType, value: compile(rc) }));
  const matcher = createMatcher(entries);
  const defaultRoute = config.defaultBackend ? compile(config.defaultBackend) : undefined;
  return new ImmutableRouteTable(version, config, matcher, defaultRoute, performance.now() - started);
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
