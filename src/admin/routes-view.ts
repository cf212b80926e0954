// The /routes document: what the live route table serves, in a shape meant for
// people and scripts (jq) debugging "why does this request go there?".
import { activePolicies } from '../middleware/registry.ts';
import type { IgnoredIngress, BackendConfig, Problem, RouteConfig, RoutingConfig, UpstreamAddress } from '../model/config.ts';

export interface BackendView {
  /** "ns/service:port" */
  service: string;
  port: string;
  endpoints: string[];
  /** "ok", or why the backend cannot take traffic (the reason the proxy answers 503 with) */
  state: string;
}

export interface PathView {
  pathType: string;
  /** "ns/name" */
  ingress: string;
  backend: BackendView;
  policies: string[];
}

export interface RoutesView {
  version: number;
  routes: number;
  /** host ("*" for rules without host) -> path -> route */
  hosts: Record<string, Record<string, PathView>>;
  defaultBackend: PathView | null;
  /** TLS host -> "ns/name" of its Secret */
  certificates: Record<string, string>;
  problems: Problem[];
  /** Ingresses portico does not serve, with why (class of another controller, a typo, no default class). */
  ignoredIngresses: IgnoredIngress[];
  /** Gateway API: listeners, the rules served on them, and the status of each object (as the leader writes it in a cluster). */
  gatewayApi: GatewayApiView;
}

export interface GatewayRouteView {
  /** "ns/name" of the HTTPRoute or GRPCRoute the rule comes from (one of the two is set). */
  httpRoute?: string;
  grpcRoute?: string;
  port: number;
  /** "*" for any host */
  host: string;
  path: string;
  pathType: string;
  method?: string;
  headers?: string[];
  query?: string[];
  /** In precedence order among rules of the same host and path (lower first). */
  rank: string;
  backends: (BackendView & { weight: number })[];
  policies: string[];
}

export interface GatewayApiView {
  listeners: { port: number; protocol: string; hostnames: string[] }[];
  routes: GatewayRouteView[];
  gatewayClasses: Record<string, unknown>;
  gateways: Record<string, unknown>;
  httpRoutes: Record<string, unknown>;
  grpcRoutes: Record<string, unknown>;
}

/** Key for rules without a host, which match any host. */
export const ANY_HOST = '*';

/** A backend's ready addresses now (its route's may be older when only endpoints moved since: see EndpointRegistry). */
export type AddressesOf = (backend: BackendConfig) => readonly UpstreamAddress[];
const OWN_ADDRESSES: AddressesOf = (backend) => backend.addresses;

export function buildRoutesView(version: number, config: RoutingConfig, at: AddressesOf = OWN_ADDRESSES): RoutesView {
  // Null-prototype objects: hosts and paths are user data and may be "__proto__".
  const hosts: Record<string, Record<string, PathView>> = Object.create(null);
  for (const [host, routes] of groupByHost(ingressRoutes(config))) hosts[host] = pathsView(routes, at);
  return {
    version,
    routes: config.routes.length,
    hosts,
    defaultBackend: config.defaultBackend ? pathView(config.defaultBackend, at) : null,
    certificates: certificatesView(config),
    problems: [...config.problems],
    ignoredIngresses: [...config.ignoredIngresses],
    gatewayApi: gatewayApiView(config, at),
  };
}

/** Ingress routes: Gateway routes live on their own listeners and are shown apart. */
function ingressRoutes(config: RoutingConfig): readonly RouteConfig[] {
  return config.listeners.size === 0 ? config.routes : config.routes.filter((r) => r.port === undefined);
}

function gatewayApiView(config: RoutingConfig, at: AddressesOf): GatewayApiView {
  const routes: GatewayRouteView[] = [];
  for (const r of config.routes) {
    if (r.port === undefined) continue;
    const c = r.conditions;
    const split = r.backends ?? [{ backend: r.backend, weight: 1, policies: [] }];
    routes.push({
      [r.source.kind === 'GRPCRoute' ? 'grpcRoute' : 'httpRoute']: `${r.source.namespace}/${r.source.name}`,
      port: r.port,
      host: r.host === '' ? ANY_HOST : r.host,
      path: r.path,
      pathType: r.pathType,
      ...(c?.method !== undefined ? { method: c.method } : {}),
      ...(c !== undefined && c.headers.length > 0 ? { headers: c.headers.map((h) => `${h.name} ${h.type} ${h.value}`) } : {}),
      ...(c !== undefined && c.query.length > 0 ? { query: c.query.map((q) => `${q.name} ${q.type} ${q.value}`) } : {}),
      rank: r.rank ?? '',
      backends: split.map((b) => ({ ...backendView(b.backend, at), weight: b.weight })),
      policies: activePolicies(r),
    });
  }
  routes.sort((a, b) => a.port - b.port || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0) || (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
  const record = <V>(map: ReadonlyMap<string, V>): Record<string, V> => Object.assign(Object.create(null) as Record<string, V>, Object.fromEntries(map));
  return {
    listeners: [...config.listeners.values()].map((l) => ({ port: l.port, protocol: l.protocol, hostnames: [...l.certificates.keys()] })).sort((a, b) => a.port - b.port),
    routes,
    gatewayClasses: record(config.gatewayStatus.gatewayClasses),
    gateways: record(config.gatewayStatus.gateways),
    httpRoutes: record(config.gatewayStatus.httpRoutes),
    grpcRoutes: record(config.gatewayStatus.grpcRoutes),
  };
}

/**
 * The same document as JSON.stringify(buildRoutesView(...)), serialized one host
 * at a time with a pause every `routesPerSlice` routes: the admin server shares
 * the event loop with the proxy, and a 30,000-route table takes ~100 ms in one go.
 */
export async function serializeRoutesView(version: number, config: RoutingConfig, routesPerSlice = 2000, at: AddressesOf = OWN_ADDRESSES): Promise<Buffer> {
  const parts: string[] = [`{"version":${version},"routes":${config.routes.length},"hosts":{`];
  let sinceYield = 0;
  let first = true;
  for (const [host, routes] of groupByHost(ingressRoutes(config))) {
    parts.push(`${first ? '' : ','}${JSON.stringify(host)}:${JSON.stringify(pathsView(routes, at))}`);
    first = false;
    sinceYield += routes.length;
    if (sinceYield >= routesPerSlice) {
      sinceYield = 0;
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
  }
  const defaultBackend = config.defaultBackend ? pathView(config.defaultBackend, at) : null;
  parts.push(
    `},"defaultBackend":${JSON.stringify(defaultBackend)},"certificates":${JSON.stringify(certificatesView(config))},"problems":${JSON.stringify(config.problems)},"ignoredIngresses":${JSON.stringify(config.ignoredIngresses)},"gatewayApi":${JSON.stringify(gatewayApiView(config, at))}}\n`,
  );
  return Buffer.from(parts.join(''));
}

/** Routes by host key, in first-seen order. */
function groupByHost(routes: readonly RouteConfig[]): Map<string, RouteConfig[]> {
  const groups = new Map<string, RouteConfig[]>();
  for (const route of routes) {
    const key = route.host === '' ? ANY_HOST : route.host;
    const group = groups.get(key);
    if (group) group.push(route);
    else groups.set(key, [route]);
  }
  return groups;
}

function pathsView(routes: readonly RouteConfig[], at: AddressesOf): Record<string, PathView> {
  const paths: Record<string, PathView> = Object.create(null);
  for (const route of routes) {
    // The same path can be served both as Exact and as Prefix: keep both visible.
    const key = paths[route.path] === undefined ? route.path : `${route.path} (${route.pathType})`;
    paths[key] = pathView(route, at);
  }
  return paths;
}

function certificatesView(config: RoutingConfig): Record<string, string> {
  const certificates: Record<string, string> = Object.create(null);
  for (const [host, certificate] of config.certificates) certificates[host] = certificate.secret;
  return certificates;
}

function pathView(route: RouteConfig, at: AddressesOf): PathView {
  return {
    pathType: route.pathType,
    ingress: `${route.source.namespace}/${route.source.name}`,
    backend: backendView(route.backend, at),
    policies: activePolicies(route),
  };
}

function backendView(backend: BackendConfig, at: AddressesOf): BackendView {
  return {
    service: `${backend.namespace}/${backend.service}`,
    port: backend.port,
    endpoints: at(backend).map(formatAddress),
    state: backend.error ?? 'ok',
  };
}

function formatAddress(address: UpstreamAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
