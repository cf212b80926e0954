// What translation produces: plain, immutable data describing what to serve.
// Nothing here holds sockets, timers or closures; the routing and proxy layers
// turn it into a live RouteTable (see src/routing/table.ts).
import type {
  Condition,
  EndpointSlice,
  Gateway,
  GatewayClass,
  GRPCRoute,
  HTTPRoute,
  Ingress,
  ListenerStatus,
  IngressClass,
  Namespace,
  ObjectRef,
  ReferenceGrant,
  RouteParentStatus,
  Secret,
  Service,
} from './k8s.ts';
import { flatString } from '../util/flat-string.ts';

const { hash } = process.getBuiltinModule('node:crypto');

/** The objects translation reads. Maps are keyed by objectKey() ("ns/name", or "name" for IngressClass). */
export interface Snapshot {
  readonly ingressClasses: ReadonlyMap<string, IngressClass>;
  readonly ingresses: ReadonlyMap<string, Ingress>;
  readonly services: ReadonlyMap<string, Service>;
  readonly endpointSlices: ReadonlyMap<string, EndpointSlice>;
  /** EndpointSlices indexed by the "ns/service" of their kubernetes.io/service-name label. */
  readonly endpointSlicesByService: ReadonlyMap<string, ReadonlyMap<string, EndpointSlice>>;
  readonly secrets: ReadonlyMap<string, Secret>;
  // Gateway API (empty when its CRDs are not installed)
  readonly gatewayClasses: ReadonlyMap<string, GatewayClass>;
  readonly gateways: ReadonlyMap<string, Gateway>;
  readonly httpRoutes: ReadonlyMap<string, HTTPRoute>;
  /** Optional so snapshots made before GRPCRoute (tests, benches) stay valid. */
  readonly grpcRoutes?: ReadonlyMap<string, GRPCRoute>;
  readonly referenceGrants: ReadonlyMap<string, ReferenceGrant>;
  /** Only needed for allowedRoutes.namespaces.from: Selector; keyed by name. */
  readonly namespaces: ReadonlyMap<string, Namespace>;
}

export interface TranslateOptions {
  /** IngressClass name this controller answers to (the --ingress-class flag). */
  readonly ingressClass: string;
  /** spec.controller value of the IngressClasses that belong to portico. */
  readonly controllerName: string;
  /** Route to ExternalName Services (off by default: an Ingress could otherwise send traffic out of the cluster). */
  readonly allowExternalName: boolean;
  /** spec.controllerName of the GatewayClasses portico serves (--gateway-controller-name). */
  readonly gatewayControllerName?: string;
  /** Ports of the Ingress listeners and their flags: a Gateway listener cannot take them. */
  readonly ingressPorts?: ReadonlyMap<number, string>;
}

export const CONTROLLER_NAME = 'portico.dev/ingress-controller';

export type Severity = 'warning' | 'error';

/** Something wrong with one object, for logs, metrics, Events and status. */
export interface Problem {
  readonly object: ObjectRef;
  readonly severity: Severity;
  /** CamelCase, as a Kubernetes Event reason: "ServiceNotFound", "PathConflict", "InvalidAnnotation"... */
  readonly reason: string;
  /** One sentence saying what is wrong and where, e.g. "spec.rules[0].http.paths[1].path: must start with '/'". */
  readonly message: string;
}

/**
 * What makes two reports the same problem: logged once, not at every rebuild that still
 * finds it. The object, then what is said of it (reason and message) as a digest: a key
 * is kept for each problem in service, and with the message itself in it a warning's key
 * held about 190 bytes (3.6 MB at 20,000 ingress-nginx warnings) where it holds 56.
 */
export function problemKey(p: Problem): string {
  let key = problemKeys.get(p);
  // Flat: as a tree of its pieces, flattened again as a Map key beside it, each key
  // would hold more.
  if (key === undefined) problemKeys.set(p, (key = flatString(`${p.object.kind}/${p.object.namespace ?? ''}/${p.object.name}|${saying(p.reason, p.message)}`)));
  return key;
}

/**
 * saying()'s digests by reason and message: a migrated cluster says the same few things of
 * thousands of objects. Only a thousand are kept: a message that names its object is said
 * of that object alone, and a miss costs one hash (each key is kept with its Problem).
 */
const sayings = new Map<string, Map<string, string>>();
let sayingCount = 0;
const MAX_SAYINGS = 1000;

/**
 * A reason and message as 16 characters of their SHA-256 (96 bits): two different ones
 * of one object alike by chance is not a risk worth a longer key. Remembered, bounded
 * (cleared when full, so that messages naming objects cannot grow it).
 */
function saying(reason: string, message: string): string {
  let digest = sayings.get(reason)?.get(message);
  if (digest !== undefined) return digest;
  if (sayingCount >= MAX_SAYINGS) {
    sayings.clear();
    sayingCount = 0;
  }
  let byMessage = sayings.get(reason);
  if (byMessage === undefined) sayings.set(reason, (byMessage = new Map()));
  digest = hash('sha256', `${reason}\n${message}`, 'base64url').slice(0, 16);
  byMessage.set(message, digest);
  sayingCount++;
  return digest;
}

/**
 * Keys made before, per Problem object: a new config keeps the problem objects of what it
 * did not translate again, and the controller keys every problem at each change (at 10,000
 * problems, building and hashing every key again took about 35 ms a change).
 */
const problemKeys = new WeakMap<Problem, string>();

/**
 * What changed in the problems from one config to the next: those that appeared and those
 * that went, compared by problemKey and severity (a problem found again, in a new object,
 * is in neither). Made in proportion to what was translated again, not to every problem.
 */
export interface ProblemDelta {
  readonly added: readonly Problem[];
  readonly removed: readonly Problem[];
}

export const NO_PROBLEM_CHANGES: ProblemDelta = Object.freeze({ added: Object.freeze([]), removed: Object.freeze([]) });

/** A ProblemDelta being gathered, source by source (diffProblems adds to it). */
export interface ProblemChanges {
  readonly added: Problem[];
  readonly removed: Problem[];
}

export function problemChanges(): ProblemChanges {
  return { added: [], removed: [] };
}

/** The delta `changes` gathered: NO_PROBLEM_CHANGES when nothing appeared or went (so a caller can compare by identity). */
export function problemDelta(changes: ProblemChanges): ProblemDelta {
  return changes.added.length === 0 && changes.removed.length === 0 ? NO_PROBLEM_CHANGES : changes;
}

/**
 * Adds to `into` what differs from `before` to `after` (two lists of one source: an
 * Ingress' problems, a host's conflicts...), as multisets of problemKey and severity:
 * costs the two lists, and nothing when they are the same array.
 */
export function diffProblems(before: readonly Problem[], after: readonly Problem[], into: ProblemChanges): void {
  if (before === after) return;
  if (before.length === 0 || after.length === 0) {
    for (const p of after) into.added.push(p);
    for (const p of before) into.removed.push(p);
    return;
  }
  const left = new Map<string, number>();
  for (const p of before) {
    const key = deltaKey(p);
    left.set(key, (left.get(key) ?? 0) + 1);
  }
  for (const p of after) {
    const key = deltaKey(p);
    const n = left.get(key);
    if (n === undefined) into.added.push(p);
    else if (n === 1) left.delete(key);
    else left.set(key, n - 1);
  }
  if (left.size === 0) return;
  for (const p of before) {
    const key = deltaKey(p);
    const n = left.get(key);
    if (n === undefined) continue;
    into.removed.push(p);
    if (n === 1) left.delete(key);
    else left.set(key, n - 1);
  }
}

function deltaKey(p: Problem): string {
  return `${problemKey(p)}|${p.severity}`;
}

export interface UpstreamAddress {
  /** IP address (or DNS name, for ExternalName Services when allowed). */
  readonly host: string;
  readonly port: number;
}

/** Why a backend cannot take traffic; the proxy answers 503 with this reason. */
export type BackendError =
  | 'ServiceNotFound'
  | 'PortNotFound'
  | 'NoEndpoints'
  | 'ExternalNameDisabled'
  | 'InvalidBackend'
  // Gateway API: a backendRef that does not resolve gets 500, as the spec says.
  | 'BackendNotFound'
  | 'RefNotPermitted'
  | 'InvalidKind';

export interface BackendConfig {
  /** "ns/service:port" (port as written in the Ingress: number or name). Stable across rebuilds. */
  readonly key: string;
  readonly namespace: string;
  readonly service: string;
  readonly port: string;
  /** Ready endpoints, in a stable order. Empty when error is set. */
  readonly addresses: readonly UpstreamAddress[];
  readonly error?: BackendError;
  /** Service port's appProtocol, if any (e.g. "kubernetes.io/h2c"). */
  readonly appProtocol?: string;
  /** The Service sleeps when idle (portico.dev/scale-to-zero): without endpoints, requests are held until it wakes. */
  readonly sleep?: SleepPolicy;
}

/**
 * The ready addresses of one backend ("ns/service:port") changed, and nothing else did:
 * applied to the live pools without translating or rebuilding routes. null: portico no
 * longer follows this backend (no route reads it); its routes' own addresses are current.
 */
export type EndpointUpdate = readonly [key: string, addresses: readonly UpstreamAddress[] | null];

/** A Service's scale-to-zero settings, from its annotations (src/scale-to-zero/policy.ts). */
export interface SleepPolicy {
  /** No request through any replica for this long: scale the workload to 0. */
  readonly sleepAfterMs: number;
  /** A held request not forwarded by then gets 503 with Retry-After. */
  readonly wakeTimeoutMs: number;
  /** Held requests per Service per process beyond which new ones get 503 at once. */
  readonly maxHeld: number;
  /** The workload scaled through its scale subresource. */
  readonly target: { readonly kind: 'Deployment' | 'StatefulSet'; readonly name: string };
}

/** A policy attached to a route: the name of a middleware in src/middleware/registry.ts and its parsed config. */
export interface PolicyConfig {
  readonly name: string;
  readonly config: unknown;
}

export type MatchType = 'Exact' | 'Prefix' | 'RegularExpression';

/** A header or query parameter condition (Gateway API). */
export interface ValueMatch {
  /** Header names lowercase; query parameter names as written (they are case-sensitive). */
  readonly name: string;
  readonly type: 'Exact' | 'RegularExpression';
  readonly value: string;
}

/** What a request must have besides host and path; all must hold. Ingress rules have none. */
export interface RouteConditions {
  /** Uppercase, e.g. "GET". */
  readonly method?: string;
  readonly headers: readonly ValueMatch[];
  readonly query: readonly ValueMatch[];
}

/** One backend of a weighted split (Gateway API backendRefs). */
export interface WeightedBackend {
  readonly backend: BackendConfig;
  /** Relative; 0 takes no traffic. */
  readonly weight: number;
  /** Filters of this backendRef only, run after the route's own. */
  readonly policies: readonly PolicyConfig[];
}

/** Which object a route comes from. */
export interface RouteSource {
  readonly kind: 'Ingress' | 'HTTPRoute' | 'GRPCRoute';
  readonly namespace: string;
  readonly name: string;
}

/**
 * One rule of a virtual host: host + path + conditions -> policies -> backend(s).
 * Ingress path rules and HTTPRoute matches both translate into it.
 */
export interface RouteConfig {
  /** Unique and stable: "ns/ingress|host|Type|path", "ns/ingress|default", or "HTTPRoute/ns/name|port|host|rule|match". */
  readonly id: string;
  readonly source: RouteSource;
  /** Gateway listener port; absent for Ingress routes, served on --http-port and --https-port. */
  readonly port?: number;
  /** Gateway: the hostname of the listener the route is attached to ("" for none); listeners on one port are chosen by it first. */
  readonly listenerHost?: string;
  /** Lowercase host, "*.suffix" for a wildcard, or "" for a rule without host. */
  readonly host: string;
  /** As written in the Ingress or HTTPRoute ("/" for a default backend). */
  readonly path: string;
  /** Ingress ImplementationSpecific is served as Prefix. */
  readonly pathType: MatchType;
  /** Gateway API method/header/query conditions. */
  readonly conditions?: RouteConditions;
  /**
   * Among routes with the same host and path key, lower ranks are tried first (Gateway
   * API precedence: method, header count, query count, hostname, route age, ns/name,
   * rule order), compared as strings, so a route keeps its rank when others change.
   * Absent: "".
   */
  readonly rank?: string;
  /**
   * The rank alone orders this route against the others of its kind, whatever their
   * path types (GRPCRoute precedence: a service-only match beats a method-only one,
   * which a path order would not). See RouteEntry.byRank.
   */
  readonly byRank?: boolean;
  /** Where the request goes when there is no split: the only backend. */
  readonly backend: BackendConfig;
  /** A weighted split (more than one backendRef, or backendRef filters): replaces `backend` when set. */
  readonly backends?: readonly WeightedBackend[];
  /** Policies from the Ingress' annotations or the rule's filters, in the order they run. */
  readonly policies: readonly PolicyConfig[];
  /** The host has a certificate (spec.tls, or an HTTPS listener); drives the default HTTPS redirect. */
  readonly tls: boolean;
}

export interface CertificateConfig {
  /** "ns/name" of the kubernetes.io/tls Secret. */
  readonly secret: string;
  /** PEM */
  readonly cert: string;
  /** PEM */
  readonly key: string;
}

/** A port portico binds for Gateway listeners (several listeners may share it). */
export interface ListenerConfig {
  readonly port: number;
  readonly protocol: 'HTTP' | 'HTTPS';
  /** HTTPS: certificate per hostname ("" for listeners without hostname), for SNI. */
  readonly certificates: ReadonlyMap<string, CertificateConfig>;
}

/** Gateway API status portico wants on each object; lastTransitionTime is added by the writer. */
export interface GatewayApiStatus {
  readonly gatewayClasses: ReadonlyMap<string, { readonly generation?: number; readonly conditions: readonly Condition[] }>;
  readonly gateways: ReadonlyMap<
    string,
    { readonly generation?: number; readonly conditions: readonly Condition[]; readonly listeners: readonly ListenerStatus[] }
  >;
  /** Only the parents portico is the controller of. */
  readonly httpRoutes: ReadonlyMap<string, { readonly generation?: number; readonly parents: readonly RouteParentStatus[] }>;
  readonly grpcRoutes: ReadonlyMap<string, { readonly generation?: number; readonly parents: readonly RouteParentStatus[] }>;
}

export interface RoutingConfig {
  /** Every served path rule, after conflicts were resolved; in a deterministic order. May be made on first use (withLazyRoutes). */
  readonly routes: readonly RouteConfig[];
  /** routes.length, known without making `routes`. */
  readonly routeCount?: number;
  /** Catches what no rule matches (spec.defaultBackend of the oldest Ingress that has one). */
  readonly defaultBackend?: RouteConfig;
  /** Certificate per TLS host: exact lowercase host, or "*.suffix". */
  readonly certificates: ReadonlyMap<string, CertificateConfig>;
  /** Ingresses portico serves (by class), as "ns/name"; the leader writes their status. */
  readonly servedIngresses: readonly string[];
  /** Ingresses portico does not serve, as "ns/name", with why (a class of another controller, a typo...). */
  readonly ignoredIngresses: readonly IgnoredIngress[];
  /** Sorted by object (kind, namespace, name). May be made on first use (withLazyRoutes): a change passes on `delta.problems`. */
  readonly problems: readonly Problem[];
  /** Gateway listeners, by port. */
  readonly listeners: ReadonlyMap<number, ListenerConfig>;
  readonly gatewayStatus: GatewayApiStatus;
  /** The Ingress routes of `routes`, by host: lets the route table rebuild only the hosts a change touched. */
  readonly ingressHosts?: ReadonlyMap<string, readonly RouteConfig[]>;
  /** The Gateway routes of `routes`, by the route they come from (gatewaySourceKey): lets the table patch only the routes a change touched. */
  readonly gatewayRoutes?: ReadonlyMap<string, readonly RouteConfig[]>;
  /** Numbers the configs one translator makes, so a delta can name the config it follows. */
  readonly serial?: number;
  /**
   * What changed since the config numbered `base`: the Ingress hosts whose routes differ,
   * whether Gateway API output did, and then (when known) which Gateway routes' RouteConfigs
   * differ (gatewaySourceKey; a key without routes now: removed), and (when known) the
   * hosts whose certificate is not the very object of base's (a host without one now:
   * removed). Without `certificates`, compare the two maps. `problems`, when known: how
   * `problems` differs from the config numbered `base`'s (absent after a full re-check:
   * compare the whole lists).
   */
  readonly delta?: {
    readonly base: number;
    readonly hosts: ReadonlySet<string>;
    readonly gateway: boolean;
    readonly gatewayRoutes?: ReadonlySet<string>;
    readonly problems?: ProblemDelta;
    readonly certificates?: ReadonlySet<string>;
  };
}

/** "<kind>/<ns>/<name>" of a Gateway route's source: an HTTPRoute and a GRPCRoute of one name stay apart. */
export function gatewaySourceKey(source: RouteSource): string {
  return `${source.kind}/${source.namespace}/${source.name}`;
}

export interface IgnoredIngress {
  /** "ns/name" */
  readonly ingress: string;
  readonly reason: string;
  /**
   * The class its spec.ingressClassName names when no IngressClass of that name exists: no
   * controller that reads IngressClasses serves it, and it may be meant for portico (a typo,
   * a class not created yet), so it is logged as a warning. Absent for the Ingresses of
   * other controllers' classes (logged at debug level: a cluster has many of them).
   */
  readonly missingClass?: string;
}

/** The Gateway API part of a RoutingConfig when there is none (no Gateway objects, or tests of Ingress only). */
export const NO_GATEWAYS: Pick<RoutingConfig, 'listeners' | 'gatewayStatus'> = Object.freeze({
  listeners: new Map<number, ListenerConfig>(),
  gatewayStatus: Object.freeze({ gatewayClasses: new Map(), gateways: new Map(), httpRoutes: new Map(), grpcRoutes: new Map() }),
});

/**
 * `config` with a `routes` array made on first use: a change patches the host maps, and
 * the whole list (30,000 routes at 10,000 Ingresses) is only made if someone reads it
 * (/routes, a worker's first config). The property stays enumerable: a spread makes it.
 */
export function withLazyRoutes(
  config: Omit<RoutingConfig, 'routes' | 'problems'> & { readonly problems?: readonly Problem[] },
  routes: () => readonly RouteConfig[],
  /** The sorted problem list, made on first use too (a change passes on delta.problems; /routes and a full report read the list). */
  problems?: () => readonly Problem[],
): RoutingConfig {
  let made: readonly RouteConfig[] | undefined;
  Object.defineProperty(config, 'routes', { enumerable: true, get: () => (made ??= routes()) });
  if (problems !== undefined) Object.defineProperty(config, 'problems', lazyProblems(problems));
  return config as RoutingConfig;
}

/** `config` with other problems (a list, or a function that makes it on first use), keeping a lazy `routes` and a lazy `problems` lazy. */
export function withProblems(config: RoutingConfig, problems: readonly Problem[] | (() => readonly Problem[])): RoutingConfig {
  const descriptors = Object.getOwnPropertyDescriptors(config) as PropertyDescriptorMap;
  descriptors['problems'] = typeof problems === 'function' ? lazyProblems(problems) : { value: problems, enumerable: true };
  return Object.defineProperties({}, descriptors) as RoutingConfig;
}

function lazyProblems(problems: () => readonly Problem[]): PropertyDescriptor {
  let made: readonly Problem[] | undefined;
  return { enumerable: true, get: () => (made ??= problems()) };
}
