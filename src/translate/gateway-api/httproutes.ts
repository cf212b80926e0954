// HTTPRoutes -> RouteConfigs on the listeners they attach to, and each route's
// status per parent. One RouteConfig per (listener port, hostname, rule, match); the
// Gateway API precedence among them is settled in index.ts (rank).
import type { BackendConfig, PolicyConfig, Problem, RouteConditions, RouteConfig, Snapshot, ValueMatch, WeightedBackend } from '../../model/config.ts';
import { GATEWAY_GROUP, type Condition, type HTTPBackendRef, type HTTPRoute, type HTTPRouteMatch, type HTTPRouteRule, type ObjectRef, type ParentReference, type RouteParentStatus } from '../../model/k8s.ts';
import { parsePolicies } from '../../middleware/registry.ts';
import type { RequestMirrorConfig } from '../../middleware/request-mirror.ts';
import type { TimeoutsConfig } from '../../middleware/timeouts.ts';
import { parseDuration } from '../../util/units.ts';
import type { BackendResolver } from '../backends.ts';
import { compileRegex } from '../../routing/conditions.ts';
import { condition } from './conditions.ts';
import { filterPolicies, type MatchedPath } from './filters.ts';
import { namespaceAllowed, type GatewayPass, type ListenerInfo } from './gateways.ts';
import { intersectHostnames } from './hostnames.ts';
import type { ReferenceGrants } from './reference-grants.ts';

export interface HttpRouteDeps {
  readonly snapshot: Snapshot;
  readonly controllerName: string;
  readonly grants: ReferenceGrants;
  readonly backends: BackendResolver;
}

/** Gateway API precedence after the path (see index.ts). */
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

export interface RouteOutput {
  readonly routes: { readonly config: RouteConfig; readonly precedence: Precedence }[];
  readonly parents: RouteParentStatus[];
  readonly problems: Problem[];
  /** The listeners the route attached to ("gateway key#listener index"), for attachedRoutes. */
  readonly attachedTo: string[];
}

const SERVICE_GROUPS = new Set(['', 'core']);

/** Why a backendRef does not resolve, as the ResolvedRefs reason. */
type RefFailure = { readonly reason: 'BackendNotFound' | 'RefNotPermitted' | 'InvalidKind'; readonly message: string };

function failed(namespace: string, name: string, port: string, failure: RefFailure): BackendConfig {
  return { key: `${namespace}/${name}:${port}|${failure.reason}`, namespace, service: name, port, addresses: [], error: failure.reason };
}

function resolveBackendRef(deps: HttpRouteDeps, route: HTTPRoute, ref: HTTPBackendRef): { config: BackendConfig; failure?: RefFailure } {
  const routeNs = route.metadata.namespace ?? 'default';
  const namespace = ref.namespace ?? routeNs;
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const port = ref.port === undefined ? '' : String(ref.port);
  if (!SERVICE_GROUPS.has(group) || kind !== 'Service') {
    const failure: RefFailure = { reason: 'InvalidKind', message: `backendRef ${group === '' ? '' : group + '/'}${kind} ${ref.name} is not supported; portico routes to Services` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  if (!deps.grants.permits({ group: GATEWAY_GROUP, kind: 'HTTPRoute', namespace: routeNs }, { group: '', kind: 'Service', namespace, name: ref.name })) {
    const failure: RefFailure = { reason: 'RefNotPermitted', message: `backendRef Service ${namespace}/${ref.name} is in another namespace and no ReferenceGrant there allows it` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  if (ref.port === undefined) {
    const failure: RefFailure = { reason: 'BackendNotFound', message: `backendRef Service ${namespace}/${ref.name} needs a port` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  if (!deps.snapshot.services.has(`${namespace}/${ref.name}`)) {
    const failure: RefFailure = { reason: 'BackendNotFound', message: `backendRef Service ${namespace}/${ref.name} not found` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  const result = deps.backends.resolve(namespace, { service: { name: ref.name, port: { number: ref.port } } });
  if (result.config.error === 'PortNotFound') {
    const failure: RefFailure = { reason: 'BackendNotFound', message: `Service ${namespace}/${ref.name} has no port ${ref.port}` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  return { config: result.config };
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

function valueMatches(list: HTTPRouteMatch['headers'], lower: boolean): ValueMatch[] | { error: string } {
  const seen = new Set<string>();
  const out: ValueMatch[] = [];
  for (const m of list ?? []) {
    const name = lower ? m.name.toLowerCase() : m.name;
    // "Only the first entry with an equivalent name MUST be considered."
    if (seen.has(name)) continue;
    seen.add(name);
    const type = m.type ?? 'Exact';
    if (type === 'RegularExpression') {
      try {
        compileRegex(m.value);
      } catch {
        return { error: `${m.name}: ${JSON.stringify(m.value)} is not a valid regular expression` };
      }
    } else if (type !== 'Exact') return { error: `${m.name}: match type ${String(type)} is not supported` };
    out.push({ name, type, value: m.value });
  }
  return out;
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

/** A rule's backends, resolved once for every listener it attaches to. */
interface RuleBackends {
  readonly backend: BackendConfig;
  readonly split?: readonly { ref: HTTPBackendRef; backend: BackendConfig; weight: number }[];
}

const NO_BACKEND = (namespace: string, name: string, why: string): BackendConfig => ({
  key: `${namespace}/${name}|no-backend`,
  namespace,
  service: why,
  port: '',
  addresses: [],
  error: 'InvalidBackend',
});

export function translateHttpRoute(deps: HttpRouteDeps, key: string, route: HTTPRoute, gateways: GatewayPass): RouteOutput {
  const namespace = route.metadata.namespace ?? 'default';
  const name = route.metadata.name;
  const generation = route.metadata.generation;
  const ref: ObjectRef = { kind: 'HTTPRoute', namespace, name };
  const problems: Problem[] = [];
  const report = (reason: string, message: string, severity: Problem['severity'] = 'error') => problems.push({ object: ref, severity, reason, message });

  // Backends and annotation policies do not depend on the parent.
  let refFailure: RefFailure | undefined;
  const rules = route.spec?.rules ?? [];
  const ruleBackends: RuleBackends[] = rules.map((rule, r) => {
    const refs = rule.backendRefs ?? [];
    const resolved = refs.map((b, i) => {
      const out = resolveBackendRef(deps, route, b);
      if (out.failure !== undefined) {
        refFailure ??= out.failure;
        report(out.failure.reason, `spec.rules[${r}].backendRefs[${i}]: ${out.failure.message}`);
      }
      return { ref: b, backend: out.config, weight: b.weight ?? 1 };
    });
    const live = resolved.filter((b) => b.weight > 0);
    if (live.length === 0) return { backend: NO_BACKEND(namespace, name, refs.length === 0 ? 'no backendRefs' : 'all backendRefs have weight 0') };
    if (live.length === 1 && (live[0]!.ref.filters ?? []).length === 0) return { backend: live[0]!.backend };
    return { backend: live[0]!.backend, split: live };
  });
  const annotationPolicies = parsePolicies(route.metadata.annotations, ref, problems);

  const routes: RouteOutput['routes'] = [];
  const parents: RouteParentStatus[] = [];
  const attachedTo: string[] = [];
  const ids = new Set<string>();
  for (const parentRef of route.spec?.parentRefs ?? []) {
    if ((parentRef.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (parentRef.kind ?? 'Gateway') !== 'Gateway') continue;
    const gatewayKey = `${parentRef.namespace ?? namespace}/${parentRef.name}`;
    const gateway = gateways.gateways.get(gatewayKey);
    if (gateway === undefined) continue; // not ours (or not there): another controller may own it
    const accepted = attach(deps, route, parentRef, gateway.listeners);
    const conditions: Condition[] = [accepted.condition(generation)];
    conditions.push(
      refFailure === undefined
        ? condition('ResolvedRefs', true, 'ResolvedRefs', 'all references resolved', generation)
        : condition('ResolvedRefs', false, refFailure.reason, refFailure.message, generation),
    );
    parents.push({ parentRef: { ...parentRef }, controllerName: deps.controllerName, conditions });
    for (const { listener, hostnames } of accepted.attached) {
      listener.attached++;
      attachedTo.push(`${listener.gatewayKey}#${listener.index}`);
      for (const host of hostnames) {
        for (const [r, rule] of rules.entries()) {
          const matches = rule.matches !== undefined && rule.matches.length > 0 ? rule.matches : [{}];
          for (const [m, match] of matches.entries()) {
            const id = `HTTPRoute/${namespace}/${name}|${listener.spec.port}|${host}|r${r}|m${m}`;
            if (ids.has(id)) continue;
            ids.add(id);
            const made = routeConfig(deps, id, route, rule, r, match, m, host, listener, ruleBackends[r]!, annotationPolicies, report);
            if (made !== undefined) routes.push(made);
          }
        }
      }
    }
  }
  return { routes, parents, problems, attachedTo };
}

interface Attachment {
  readonly attached: { listener: ListenerInfo; hostnames: string[] }[];
  condition(generation: number | undefined): Condition;
}

function attach(deps: HttpRouteDeps, route: HTTPRoute, parentRef: ParentReference, listeners: readonly ListenerInfo[]): Attachment {
  const namespace = route.metadata.namespace ?? 'default';
  const candidates = listeners.filter((l) => (parentRef.sectionName === undefined || l.spec.name === parentRef.sectionName) && (parentRef.port === undefined || l.spec.port === parentRef.port));
  const fail = (reason: string, message: string): Attachment => ({ attached: [], condition: (g) => condition('Accepted', false, reason, message, g) });
  if (candidates.length === 0) {
    const which = [parentRef.sectionName !== undefined ? `sectionName ${parentRef.sectionName}` : '', parentRef.port !== undefined ? `port ${parentRef.port}` : ''].filter(Boolean).join(' and ');
    return fail('NoMatchingParent', `the Gateway has no listener with ${which || 'any listener'}`);
  }
  const allowed = candidates.filter((l) => l.ready && l.supportedKinds.length > 0 && namespaceAllowed(l, namespace, deps.snapshot));
  if (allowed.length === 0) return fail('NotAllowedByListeners', `no listener allows HTTPRoutes from namespace ${namespace}`);
  const attached: Attachment['attached'] = [];
  for (const listener of allowed) {
    const hostnames = intersectHostnames(listener.hostname === '' ? undefined : listener.hostname, route.spec?.hostnames);
    if (hostnames.length > 0) attached.push({ listener, hostnames });
  }
  if (attached.length === 0) return fail('NoMatchingListenerHostname', 'no hostname of the route matches a listener hostname');
  return { attached, condition: (g) => condition('Accepted', true, 'Accepted', 'route attached', g) };
}

function routeConfig(
  deps: HttpRouteDeps,
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
  report: (reason: string, message: string, severity?: Problem['severity']) => void,
): RouteOutput['routes'][number] | undefined {
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
    if (filtered.mirrors.length > 0) {
      const mirrors = filtered.mirrors.map((mirror) => {
        const target = resolveBackendRef(deps, route, { ...mirror.requestMirror!.backendRef });
        const fraction = mirror.requestMirror?.fraction;
        const percent = mirror.requestMirror?.percent ?? (fraction ? (100 * fraction.numerator) / (fraction.denominator ?? 100) : 100);
        return { backend: target.config, percent };
      });
      const config: RequestMirrorConfig = { mirrors };
      policies.push({ name: 'request-mirror', config });
    }
    if (backends.split !== undefined) {
      split = backends.split.map((b) => {
        const own = filterPolicies(b.ref.filters, filterCtx);
        return { backend: b.backend, weight: b.weight, policies: 'error' in own ? [] : own.policies };
      });
    }
  }
  const timeouts = timeoutsOf(rule);
  if (timeouts !== undefined && !policies.some((p) => p.name === 'timeouts')) policies.push({ name: 'timeouts', config: timeouts });
  if (policies.length === 0) policies = [];
  const config: RouteConfig = {
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
  };
  return {
    config,
    precedence: {
      method: conditions?.method !== undefined,
      headers: conditions?.headers.length ?? 0,
      query: conditions?.query.length ?? 0,
      exactHost: host.startsWith('*.') ? 0 : host.length,
      host: host.length,
      created: route.metadata.creationTimestamp ?? '9999',
      name: `${namespace}/${route.metadata.name}`,
      rule: r,
      match: m,
    },
  };
}
