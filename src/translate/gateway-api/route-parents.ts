// What HTTPRoutes and GRPCRoutes share: attaching to parent Gateways (parentRefs,
// listener kinds and namespaces, hostnames), resolving backendRefs (ReferenceGrants,
// weights), the status of each parent, and header matches. The kinds differ only in
// how a match becomes a RouteConfig (httproutes.ts, grpcroutes.ts).
import type { BackendConfig, PolicyConfig, Problem, RouteConfig, Snapshot, ValueMatch, WeightedBackend } from '../../model/config.ts';
import { GATEWAY_GROUP, type Condition, type HTTPBackendRef, type HTTPRouteFilter, type ObjectMeta, type ObjectRef, type ParentReference, type RouteParentStatus } from '../../model/k8s.ts';
import { parsePolicies } from '../../middleware/registry.ts';
import type { RequestMirrorConfig } from '../../middleware/request-mirror.ts';
import type { BackendResolver } from '../backends.ts';
import { compileRegex } from '../../routing/conditions.ts';
import { condition } from './conditions.ts';
import { namespaceAllowed, type GatewayPass, type ListenerInfo } from './gateways.ts';
import { intersectHostnames } from './hostnames.ts';
import type { ReferenceGrants } from './reference-grants.ts';

export type RouteKind = 'HTTPRoute' | 'GRPCRoute';

/** The fields of a route object this module reads (HTTPRoute and GRPCRoute have them all). */
export interface RouteObject {
  readonly kind: RouteKind;
  readonly metadata: ObjectMeta;
  readonly spec?: {
    readonly parentRefs?: readonly ParentReference[];
    readonly hostnames?: readonly string[];
    readonly rules?: readonly { readonly backendRefs?: readonly HTTPBackendRef[] }[];
  };
}

export interface RouteDeps {
  readonly snapshot: Snapshot;
  readonly controllerName: string;
  readonly grants: ReferenceGrants;
  readonly backends: BackendResolver;
}

/** A listener a route attached to, with the hostnames it serves there. */
export interface Attachment {
  /** "gateway key#listener index" */
  readonly listener: string;
  /** The listener's name. */
  readonly section: string;
  /** Index in spec.parentRefs (and in the output's parents). */
  readonly parent: number;
  readonly port: number;
  /** The listener's hostname ("" for none): with the port, it names the routes made for this listener. */
  readonly listenerHost: string;
  readonly hostnames: readonly string[];
}

export interface RouteOutput {
  /** Ranked (RouteConfig.rank set). */
  readonly routes: RouteConfig[];
  readonly parents: RouteParentStatus[];
  readonly problems: Problem[];
  /** Where the route attached, for attachedRoutes and for HTTPRoute/GRPCRoute hostname conflicts. */
  readonly attachments: Attachment[];
}

/** Why a backendRef does not resolve, as the ResolvedRefs reason. */
export type RefFailure = { readonly reason: 'BackendNotFound' | 'RefNotPermitted' | 'InvalidKind'; readonly message: string };

const SERVICE_GROUPS = new Set(['', 'core']);

function failed(namespace: string, name: string, port: string, failure: RefFailure): BackendConfig {
  return { key: `${namespace}/${name}:${port}|${failure.reason}`, namespace, service: name, port, addresses: [], error: failure.reason };
}

export const NO_BACKEND = (namespace: string, name: string, why: string): BackendConfig => ({
  key: `${namespace}/${name}|no-backend`,
  namespace,
  service: why,
  port: '',
  addresses: [],
  error: 'InvalidBackend',
});

export function resolveBackendRef(deps: RouteDeps, route: RouteObject, ref: HTTPBackendRef): { config: BackendConfig; failure?: RefFailure } {
  const routeNs = route.metadata.namespace ?? 'default';
  const namespace = ref.namespace ?? routeNs;
  const group = ref.group ?? '';
  const kind = ref.kind ?? 'Service';
  const port = ref.port === undefined ? '' : String(ref.port);
  if (!SERVICE_GROUPS.has(group) || kind !== 'Service') {
    const failure: RefFailure = { reason: 'InvalidKind', message: `backendRef ${group === '' ? '' : group + '/'}${kind} ${ref.name} is not supported; portico routes to Services` };
    return { config: failed(namespace, ref.name, port, failure), failure };
  }
  if (!deps.grants.permits({ group: GATEWAY_GROUP, kind: route.kind, namespace: routeNs }, { group: '', kind: 'Service', namespace, name: ref.name })) {
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

/** A rule's backends, resolved once for every listener it attaches to. */
export interface RuleBackends {
  readonly backend: BackendConfig;
  readonly split?: readonly { ref: HTTPBackendRef; backend: BackendConfig; weight: number }[];
}

export type Report = (reason: string, message: string, severity?: Problem['severity']) => void;

/** Each rule's backends, and the first backendRef that did not resolve (for ResolvedRefs). */
export function resolveRuleBackends(deps: RouteDeps, route: RouteObject, report: Report): { rules: RuleBackends[]; failure: RefFailure | undefined } {
  const namespace = route.metadata.namespace ?? 'default';
  const name = route.metadata.name;
  let failure: RefFailure | undefined;
  const rules = (route.spec?.rules ?? []).map((rule, r): RuleBackends => {
    const refs = rule.backendRefs ?? [];
    const resolved = refs.map((b, i) => {
      const out = resolveBackendRef(deps, route, b);
      if (out.failure !== undefined) {
        failure ??= out.failure;
        report(out.failure.reason, `spec.rules[${r}].backendRefs[${i}]: ${out.failure.message}`);
      }
      return { ref: b, backend: out.config, weight: b.weight ?? 1 };
    });
    const live = resolved.filter((b) => b.weight > 0);
    if (live.length === 0) return { backend: NO_BACKEND(namespace, name, refs.length === 0 ? 'no backendRefs' : 'all backendRefs have weight 0') };
    if (live.length === 1 && (live[0]!.ref.filters ?? []).length === 0) return { backend: live[0]!.backend };
    return { backend: live[0]!.backend, split: live };
  });
  return { rules, failure };
}

/** The request-mirror policy of a rule's RequestMirror filters. */
export function mirrorPolicy(deps: RouteDeps, route: RouteObject, mirrors: readonly HTTPRouteFilter[]): PolicyConfig {
  const config: RequestMirrorConfig = {
    mirrors: mirrors.map((mirror) => {
      const target = resolveBackendRef(deps, route, { ...mirror.requestMirror!.backendRef });
      const fraction = mirror.requestMirror?.fraction;
      const percent = mirror.requestMirror?.percent ?? (fraction ? (100 * fraction.numerator) / (fraction.denominator ?? 100) : 100);
      return { backend: target.config, percent };
    }),
  };
  return { name: 'request-mirror', config };
}

/** Weighted backends of a split, each with the policies of its own filters. */
export function splitOf(backends: RuleBackends, policiesOf: (filters: readonly HTTPRouteFilter[] | undefined) => PolicyConfig[]): WeightedBackend[] | undefined {
  return backends.split?.map((b) => ({ backend: b.backend, weight: b.weight, policies: policiesOf(b.ref.filters) }));
}

/** Header (or query) matches; only the first entry of a name counts, as the spec says. */
export function valueMatches(list: readonly { type?: string; name: string; value: string }[] | undefined, lower: boolean): ValueMatch[] | { error: string } {
  const seen = new Set<string>();
  const out: ValueMatch[] = [];
  for (const m of list ?? []) {
    const name = lower ? m.name.toLowerCase() : m.name;
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

/** Makes the ranked RouteConfigs of one listener and hostname; `id` prefixes their ids. */
export type MakeRoutes = (listener: ListenerInfo, host: string, id: string, ids: Set<string>) => void;

/**
 * Attaches `route` to the parents it names that are ours, and writes each one's status;
 * `make` is called once per (listener, hostname) it attached to.
 */
export function attachRoute(deps: RouteDeps, route: RouteObject, gateways: GatewayPass, refFailure: RefFailure | undefined, make: MakeRoutes): Pick<RouteOutput, 'parents' | 'attachments'> {
  const namespace = route.metadata.namespace ?? 'default';
  const name = route.metadata.name;
  const generation = route.metadata.generation;
  const parents: RouteParentStatus[] = [];
  const attachments: Attachment[] = [];
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
    const parent = parents.length;
    parents.push({ parentRef: { ...parentRef }, controllerName: deps.controllerName, conditions });
    for (const { listener, hostnames } of accepted.attached) {
      attachments.push({ listener: `${listener.gatewayKey}#${listener.index}`, section: listener.spec.name, parent, port: listener.spec.port, listenerHost: listener.hostname, hostnames });
      for (const host of hostnames) make(listener, host, `${route.kind}/${namespace}/${name}|${listener.spec.port}|${host}`, ids);
    }
  }
  return { parents, attachments };
}

interface Attached {
  readonly attached: { listener: ListenerInfo; hostnames: string[] }[];
  condition(generation: number | undefined): Condition;
}

function attach(deps: RouteDeps, route: RouteObject, parentRef: ParentReference, listeners: readonly ListenerInfo[]): Attached {
  const namespace = route.metadata.namespace ?? 'default';
  const candidates = listeners.filter((l) => (parentRef.sectionName === undefined || l.spec.name === parentRef.sectionName) && (parentRef.port === undefined || l.spec.port === parentRef.port));
  const fail = (reason: string, message: string): Attached => ({ attached: [], condition: (g) => condition('Accepted', false, reason, message, g) });
  if (candidates.length === 0) {
    const which = [parentRef.sectionName !== undefined ? `sectionName ${parentRef.sectionName}` : '', parentRef.port !== undefined ? `port ${parentRef.port}` : ''].filter(Boolean).join(' and ');
    return fail('NoMatchingParent', `the Gateway has no listener with ${which || 'any listener'}`);
  }
  const ready = candidates.filter((l) => l.ready);
  if (ready.length === 0) return fail('NotAllowedByListeners', 'no listener is ready (see the Gateway listener conditions)');
  const kindAllowed = ready.filter((l) => l.supportedKinds.some((k) => k.kind === route.kind));
  if (kindAllowed.length === 0) return fail('NotAllowedByListeners', `no listener allows ${route.kind}s (allowedRoutes.kinds)`);
  const allowed = kindAllowed.filter((l) => namespaceAllowed(l, namespace, deps.snapshot));
  if (allowed.length === 0) return fail('NotAllowedByListeners', `no listener allows ${route.kind}s from namespace ${namespace}`);
  const attached: Attached['attached'] = [];
  for (const listener of allowed) {
    const hostnames = intersectHostnames(listener.hostname === '' ? undefined : listener.hostname, route.spec?.hostnames);
    if (hostnames.length > 0) attached.push({ listener, hostnames });
  }
  if (attached.length === 0) return fail('NoMatchingListenerHostname', 'no hostname of the route matches a listener hostname');
  return { attached, condition: (g) => condition('Accepted', true, 'Accepted', 'route attached', g) };
}

/** The policies from a route's portico.dev/* annotations (they act on all its rules). */
export function annotationPolicies(route: RouteObject, problems: Problem[]): PolicyConfig[] {
  const ref: ObjectRef = { kind: route.kind, namespace: route.metadata.namespace ?? 'default', name: route.metadata.name };
  return parsePolicies(route.metadata.annotations, ref, problems);
}
