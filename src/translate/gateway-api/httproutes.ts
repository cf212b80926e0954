// HTTPRoutes -> RouteConfigs on the listeners they attach to, and each route's
// status per parent (route-parents.ts). One RouteConfig per (listener port, hostname,
// rule, match), ranked by the HTTPRoute precedence after the path (precedenceKey).
import type { PolicyConfig, Problem, RouteConditions, RouteConfig, WeightedBackend } from '../../model/config.ts';
import type { HTTPRoute, HTTPRouteMatch, HTTPRouteRule } from '../../model/k8s.ts';
import type { TimeoutsConfig } from '../../middleware/timeouts.ts';
import { parseDuration } from '../../util/units.ts';
import { compileRegex } from '../../routing/conditions.ts';
import { filterPolicies, type MatchedPath } from './filters.ts';
import type { GatewayPass, ListenerInfo } from './gateways.ts';
import { annotationPolicies, attachRoute, mirrorPolicy, NO_BACKEND, resolveRuleBackends, splitOf, valueMatches, type Report, type RouteDeps, type RouteOutput, type RuleBackends } from './route-parents.ts';

/** Gateway API precedence after the path (see precedenceKey). */
export interface Precedence {
  readonly method: boolean;
  readonly headers: number;
  readonly query: number;
  /** Characters of the hostname when it is not a wildcard, then characters of the hostname. */
  readonly exactHost: number;
  readonly host: number;
  readonly created: string;
  readonly name: string;
  readonly rule: number;
  readonly match: number;
}

export const pad = (n: number, width: number) => String(Math.max(0, n)).padStart(width, '0');

/**
 * The HTTPRoute spec's precedence after the path (which the matcher settles), as a
 * string that sorts first for the rule that wins: a method match, more header matches,
 * more query matches, then (routes with intersecting hostnames) the longer
 * non-wildcard hostname and the longer hostname, the older route, namespace/name, then
 * rule and match order. A string, not a position, so a route's rank (and so its
 * RouteConfig) stays the same when other routes come and go. " " separates the parts:
 * it sorts before every character of a name or timestamp.
 */
export function precedenceKey(p: Precedence): string {
  return [
    `${p.method ? 0 : 1}${pad(999 - p.headers, 3)}${pad(999 - p.query, 3)}${pad(9999 - p.exactHost, 4)}${pad(9999 - p.host, 4)}`,
    p.created,
    p.name,
    `${pad(p.rule, 6)}${pad(p.match, 6)}`,
  ].join(' ');
}

function pathOf(match: HTTPRouteMatch): MatchedPath | { error: string } {
  const type = match.path?.type ?? 'PathPrefix';
  const value = match.path?.value ?? '/';
  if (type === 'RegularExpression') {
    try {
      compileRegex(value);
    } catch {
      return { error: `path ${JSON.stringify(value)} is not a valid regular expression` };
    }
    return { type, value };
  }
  if (!value.startsWith('/')) return { error: `path ${JSON.stringify(value)} must start with "/"` };
  if (type === 'Exact') return { type: 'Exact', value };
  if (type === 'PathPrefix') return { type: 'Prefix', value };
  return { error: `path type ${String(type)} is not supported` };
}

function conditionsOf(match: HTTPRouteMatch): RouteConditions | undefined | { error: string } {
  const headers = valueMatches(match.headers, true);
  if ('error' in headers) return headers;
  const query = valueMatches(match.queryParams, false);
  if ('error' in query) return query;
  if (match.method === undefined && headers.length === 0 && query.length === 0) return undefined;
  return { ...(match.method !== undefined ? { method: match.method.toUpperCase() } : {}), headers, query };
}

function timeoutsOf(rule: HTTPRouteRule): TimeoutsConfig | undefined {
  const request = rule.timeouts?.request !== undefined ? parseDuration(rule.timeouts.request) : undefined;
  const backend = rule.timeouts?.backendRequest !== undefined ? parseDuration(rule.timeouts.backendRequest) : undefined;
  // "0s" means no timeout; portico's timeouts bound the wait for the pod's response headers.
  const limits = [request, backend].filter((ms): ms is number => ms !== undefined && ms > 0);
  return limits.length > 0 ? { responseHeaders: Math.min(...limits) } : undefined;
}

export function translateHttpRoute(deps: RouteDeps, route: HTTPRoute, gateways: GatewayPass): RouteOutput {
  const problems: Problem[] = [];
  const ref = { kind: 'HTTPRoute', namespace: route.metadata.namespace ?? 'default', name: route.metadata.name };
  const report: Report = (reason, message, severity = 'error') => problems.push({ object: ref, severity, reason, message });
  // Backends and annotation policies do not depend on the parent.
  const backends = resolveRuleBackends(deps, route, report);
  const policies = annotationPolicies(route, problems);
  const rules = route.spec?.rules ?? [];
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

function routeConfig(
  deps: RouteDeps,
  id: string,
  route: HTTPRoute,
  rule: HTTPRouteRule,
  r: number,
  match: HTTPRouteMatch,
  m: number,
  host: string,
  listener: ListenerInfo,
  backends: RuleBackends,
  annotationPolicies: readonly PolicyConfig[],
  report: Report,
): RouteConfig | undefined {
  const namespace = route.metadata.namespace ?? 'default';
  const field = `spec.rules[${r}].matches[${m}]`;
  const path = pathOf(match);
  if ('error' in path) {
    report('UnsupportedValue', `${field}: ${path.error}; this match is not served`);
    return undefined;
  }
  const conditions = conditionsOf(match);
  if (conditions !== undefined && 'error' in conditions) {
    report('UnsupportedValue', `${field}: ${conditions.error}; this match is not served`);
    return undefined;
  }
  const filterCtx = { path, listenerPort: listener.spec.port, listenerProtocol: listener.protocol! };
  const filtered = filterPolicies(rule.filters, filterCtx);
  let backend = backends.backend;
  let policies: PolicyConfig[] = [...annotationPolicies];
  let split: WeightedBackend[] | undefined;
  if ('error' in filtered) {
    report('UnsupportedValue', `spec.rules[${r}].${filtered.error}; the rule answers 500`);
    backend = NO_BACKEND(namespace, route.metadata.name, 'unsupported filter');
  } else {
    policies.push(...filtered.policies);
    if (filtered.mirrors.length > 0) policies.push(mirrorPolicy(deps, route, filtered.mirrors));
    split = splitOf(backends, (filters) => {
      const own = filterPolicies(filters, filterCtx);
      return 'error' in own ? [] : own.policies;
    });
  }
  const timeouts = timeoutsOf(rule);
  if (timeouts !== undefined && !policies.some((p) => p.name === 'timeouts')) policies.push({ name: 'timeouts', config: timeouts });
  if (policies.length === 0) policies = [];
  const precedence: Precedence = {
    method: conditions?.method !== undefined,
    headers: conditions?.headers.length ?? 0,
    query: conditions?.query.length ?? 0,
    exactHost: host.startsWith('*.') ? 0 : host.length,
    host: host.length,
    created: route.metadata.creationTimestamp ?? '9999',
    name: `${namespace}/${route.metadata.name}`,
    rule: r,
    match: m,
  };
  return {
    id,
    source: { kind: 'HTTPRoute', namespace, name: route.metadata.name },
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
    rank: precedenceKey(precedence),
  };
}
