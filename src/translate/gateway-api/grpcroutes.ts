// GRPCRoutes -> RouteConfigs, on the same model as HTTPRoutes (route-parents.ts does
// attachment, backends and status). A gRPC call is a POST to "/<service>/<method>", so
// each match becomes a path:
//   Exact service and method -> Exact "/<service>/<method>"
//   Exact service only       -> Prefix "/<service>/"
//   Exact method only        -> RegularExpression "/[^/]+/<method>"
//   RegularExpression        -> RegularExpression "/(?:<service>)/(?:<method>)"
//   no method match          -> Prefix "/"
// and header matches become conditions. Pods are spoken to over HTTP/2: cleartext (h2c)
// unless the Service port's appProtocol is https, or the route's own
// portico.dev/upstream-protocol annotation says otherwise.
import type { BackendConfig, PolicyConfig, Problem, RouteConfig } from '../../model/config.ts';
import type { GRPCRoute, GRPCRouteMatch, GRPCRouteRule, HTTPRouteFilter } from '../../model/k8s.ts';
import type { UpstreamProtocolConfig } from '../../middleware/upstream-protocol.ts';
import { compileRegex } from '../../routing/conditions.ts';
import { filterPolicies, type MatchedPath } from './filters.ts';
import type { GatewayPass, ListenerInfo } from './gateways.ts';
import { pad } from './httproutes.ts';
import {
  annotationPolicies,
  attachRoute,
  mirrorPolicy,
  NO_BACKEND,
  resolveRuleBackends,
  splitOf,
  valueMatches,
  type Report,
  type RouteDeps,
  type RouteOutput,
  type RuleBackends,
} from './route-parents.ts';

/** What the CRD allows for Exact matches (standalone manifests are not validated by it). */
const SERVICE_NAME = /^\.?[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$/;
const METHOD_NAME = /^[A-Za-z_][A-Za-z_0-9]*$/;

/** Filters the GRPCRoute spec defines (ExtensionRef is refused as for HTTPRoute). */
const GRPC_FILTERS: ReadonlySet<string> = new Set(['RequestHeaderModifier', 'ResponseHeaderModifier', 'RequestMirror']);

/** The path a method match selects, and the characters of service and method it names (for precedence). */
interface MethodPath extends MatchedPath {
  readonly service: number;
  readonly method: number;
}

export function methodPath(match: GRPCRouteMatch): MethodPath | { error: string } {
  const m = match.method;
  if (m === undefined) return { type: 'Prefix', value: '/', service: 0, method: 0 };
  const service = m.service ?? '';
  const method = m.method ?? '';
  if (service === '' && method === '') return { error: 'method: one of service and method must be set' };
  const type = m.type ?? 'Exact';
  if (type === 'RegularExpression') {
    const value = `/(?:${service === '' ? '[^/]+' : service})/(?:${method === '' ? '[^/]+' : method})`;
    try {
      compileRegex(value);
    } catch {
      return { error: `method: ${JSON.stringify(service === '' ? method : method === '' ? service : `${service}/${method}`)} is not a valid regular expression` };
    }
    return { type: 'RegularExpression', value, service: service.length, method: method.length };
  }
  if (type !== 'Exact') return { error: `method.type ${String(type)} is not supported (Exact or RegularExpression)` };
  if (service !== '' && !SERVICE_NAME.test(service)) return { error: `method.service ${JSON.stringify(service)} is not a gRPC service name` };
  if (method !== '' && !METHOD_NAME.test(method)) return { error: `method.method ${JSON.stringify(method)} is not a gRPC method name` };
  if (method === '') return { type: 'Prefix', value: `/${service}/`, service: service.length, method: 0 };
  if (service === '') return { type: 'RegularExpression', value: `/[^/]+/${method}`, service: 0, method: method.length };
  return { type: 'Exact', value: `/${service}/${method}`, service: service.length, method: method.length };
}

/** GRPCRoute precedence after the path, as a string that sorts first for the rule that wins. */
export interface GrpcPrecedence {
  /** Characters of the hostname when it is not a wildcard, then characters of the hostname. */
  readonly exactHost: number;
  readonly host: number;
  readonly service: number;
  readonly method: number;
  readonly headers: number;
  readonly created: string;
  readonly name: string;
  readonly rule: number;
  readonly match: number;
}

/**
 * The GRPCRoute spec's order: the longer non-wildcard hostname, the longer hostname,
 * more characters of service, of method, more header matches; then the older route,
 * namespace/name, rule and match order. Like precedenceKey (httproutes.ts), a string so
 * a route keeps its rank when others change.
 */
export function grpcPrecedenceKey(p: GrpcPrecedence): string {
  return [
    `${pad(9999 - p.exactHost, 4)}${pad(9999 - p.host, 4)}${pad(9999 - p.service, 4)}${pad(9999 - p.method, 4)}${pad(999 - p.headers, 3)}`,
    p.created,
    p.name,
    `${pad(p.rule, 6)}${pad(p.match, 6)}`,
  ].join(' ');
}

/** How portico speaks to a GRPCRoute's pods: HTTP/2, over TLS only when the port's appProtocol is https. */
export function grpcUpstream(backend: BackendConfig): PolicyConfig {
  const config: UpstreamProtocolConfig = { protocol: backend.appProtocol?.toLowerCase() === 'https' ? 'h2' : 'h2c' };
  return { name: 'upstream-protocol', config };
}

export function translateGrpcRoute(deps: RouteDeps, route: GRPCRoute, gateways: GatewayPass): RouteOutput {
  const problems: Problem[] = [];
  const ref = { kind: 'GRPCRoute', namespace: route.metadata.namespace ?? 'default', name: route.metadata.name };
  const report: Report = (reason, message, severity = 'error') => problems.push({ object: ref, severity, reason, message });
  const backends = resolveRuleBackends(deps, route, report);
  const policies = annotationPolicies(route, problems);
  const rules = route.spec?.rules ?? [];
  for (const [r, rule] of rules.entries()) {
    const i = (rule.filters ?? []).findIndex((f) => f.type === 'RequestMirror');
    // request-mirror.ts copies bodiless requests only, and every gRPC call has a body.
    if (i >= 0) report('UnsupportedValue', `spec.rules[${r}].filters[${i}] (RequestMirror): gRPC calls have a body, which portico does not mirror yet; calls go to the backend only`, 'warning');
  }
  const routes: RouteConfig[] = [];
  const attached = attachRoute(deps, route, gateways, backends.failure, (listener, host, prefix, ids) => {
    for (const [r, rule] of rules.entries()) {
      const matches = rule.matches !== undefined && rule.matches.length > 0 ? rule.matches : [{}];
      for (const [m, match] of matches.entries()) {
        const id = `${prefix}|r${r}|m${m}`;
        if (ids.has(id)) continue;
        ids.add(id);
        const made = routeConfig(deps, id, route, rule, r, match, m, host, listener, backends.rules[r]!, policies, report);
        if (made !== undefined) routes.push(made);
      }
    }
  });
  return { routes, problems, ...attached };
}

/** The policies of GRPCRoute filters; an error names a filter GRPCRoute does not have. */
function grpcFilters(filters: readonly HTTPRouteFilter[] | undefined, listener: ListenerInfo): { policies: PolicyConfig[]; mirrors: HTTPRouteFilter[] } | { error: string } {
  for (const [i, f] of (filters ?? []).entries()) {
    if (!GRPC_FILTERS.has(f.type)) return { error: `filters[${i}] (${f.type}): filter type ${f.type} is not supported on a GRPCRoute` };
  }
  // Path modifiers are HTTPRoute-only, so the path given here is never read.
  return filterPolicies(filters, { path: { type: 'Prefix', value: '/' }, listenerPort: listener.spec.port, listenerProtocol: listener.protocol! });
}

function routeConfig(
  deps: RouteDeps,
  id: string,
  route: GRPCRoute,
  rule: GRPCRouteRule,
  r: number,
  match: GRPCRouteMatch,
  m: number,
  host: string,
  listener: ListenerInfo,
  backends: RuleBackends,
  annotations: readonly PolicyConfig[],
  report: Report,
): RouteConfig | undefined {
  const namespace = route.metadata.namespace ?? 'default';
  const field = `spec.rules[${r}].matches[${m}]`;
  const path = methodPath(match);
  if ('error' in path) {
    report('UnsupportedValue', `${field}.${path.error}; this match is not served`);
    return undefined;
  }
  const headers = valueMatches(match.headers, true);
  if ('error' in headers) {
    report('UnsupportedValue', `${field}.headers: ${headers.error}; this match is not served`);
    return undefined;
  }
  const filtered = grpcFilters(rule.filters, listener);
  let backend = backends.backend;
  const policies: PolicyConfig[] = [...annotations];
  let split = undefined as ReturnType<typeof splitOf>;
  if ('error' in filtered) {
    report('UnsupportedValue', `spec.rules[${r}].${filtered.error}; the rule answers with an error`);
    backend = NO_BACKEND(namespace, route.metadata.name, 'unsupported filter');
  } else {
    policies.push(...filtered.policies);
    if (filtered.mirrors.length > 0) policies.push(mirrorPolicy(deps, route, filtered.mirrors));
    split = splitOf(backends, (filters) => {
      const own = grpcFilters(filters, listener);
      return 'error' in own ? [] : own.policies;
    });
  }
  // HTTP/2 to the pods, unless the route's annotations chose a protocol.
  if (!policies.some((p) => p.name === 'upstream-protocol')) {
    const upstream = grpcUpstream(backend);
    policies.push(upstream);
    if (split !== undefined) {
      // A backend whose port says otherwise than the first one gets its own.
      split = split.map((b) => {
        const own = grpcUpstream(b.backend);
        return (own.config as UpstreamProtocolConfig).protocol === (upstream.config as UpstreamProtocolConfig).protocol ? b : { ...b, policies: [...b.policies, own] };
      });
    }
  }
  const conditions = headers.length > 0 ? { headers, query: [] } : undefined;
  const rank = grpcPrecedenceKey({
    exactHost: host.startsWith('*.') ? 0 : host.length,
    host: host.length,
    service: path.service,
    method: path.method,
    headers: headers.length,
    created: route.metadata.creationTimestamp ?? '9999',
    name: `${namespace}/${route.metadata.name}`,
    rule: r,
    match: m,
  });
  return {
    id,
    source: { kind: 'GRPCRoute', namespace, name: route.metadata.name },
    port: listener.spec.port,
    listenerHost: listener.hostname,
    host,
    path: path.value,
    pathType: path.type,
    ...(conditions !== undefined ? { conditions } : {}),
    backend,
    ...(split !== undefined ? { backends: split } : {}),
    policies,
    tls: listener.protocol === 'HTTPS',
    rank,
    byRank: true,
  };
}
