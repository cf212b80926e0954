// The /routes document: what the live route table serves, in a shape meant for
// people and scripts (jq) debugging "why does this request go there?".
import type { BackendConfig, Problem, RouteConfig, RoutingConfig, UpstreamAddress } from '../model/config.ts';

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
}

/** Key for rules without a host, which match any host. */
export const ANY_HOST = '*';

export function buildRoutesView(version: number, config: RoutingConfig): RoutesView {
  // Null-prototype objects: hosts and paths are user data and may be "__proto__".
  const hosts: Record<string, Record<string, PathView>> = Object.create(null);
  for (const route of config.routes) {
    const hostKey = route.host === '' ? ANY_HOST : route.host;
    const paths = (hosts[hostKey] ??= Object.create(null) as Record<string, PathView>);
    // The same path can be served both as Exact and as Prefix: keep both visible.
    const pathKey = paths[route.path] === undefined ? route.path : `${route.path} (${route.pathType})`;
    paths[pathKey] = pathView(route);
  }
  const certificates: Record<string, string> = Object.create(null);
  for (const [host, certificate] of config.certificates) certificates[host] = certificate.secret;
  return {
    version,
    routes: config.routes.length,
    hosts,
    defaultBackend: config.defaultBackend ? pathView(config.defaultBackend) : null,
    certificates,
    problems: [...config.problems],
  };
}

function pathView(route: RouteConfig): PathView {
  return {
    pathType: route.pathType,
    ingress: `${route.ingress.namespace}/${route.ingress.name}`,
    backend: backendView(route.backend),
    policies: route.policies.map((p) => p.name),
  };
}

function backendView(backend: BackendConfig): BackendView {
  return {
    service: `${backend.namespace}/${backend.service}`,
    port: backend.port,
    endpoints: backend.addresses.map(formatAddress),
    state: backend.error ?? 'ok',
  };
}

function formatAddress(address: UpstreamAddress): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
