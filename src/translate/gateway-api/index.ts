// Gateway API -> the same routing model as Ingress: RouteConfigs on Gateway listener
// ports, the listeners to bind with their certificates, and the status of each
// GatewayClass, Gateway, HTTPRoute and GRPCRoute. Pure, like the Ingress translation.
import { gatewaySourceKey, type CertificateConfig, type GatewayApiStatus, type ListenerConfig, type Problem, type RouteConfig, type Snapshot } from '../../model/config.ts';
import { GATEWAY_CONTROLLER_NAME, keyOf, type GRPCRoute, type HTTPRoute, type RouteParentStatus } from '../../model/k8s.ts';
import type { BackendResolver } from '../backends.ts';
import type { SecretParser } from '../tls.ts';
import { gatewayStatusOf, translateGateways, type GatewayInfo, type GatewayPass } from './gateways.ts';
import { forEachNamedBackend, RouteIndex } from './route-index.ts';
import { translateGrpcRoute } from './grpcroutes.ts';
import { translateHttpRoute } from './httproutes.ts';
import { crossKindConflicts, withoutRejected, type Rejections } from './route-conflicts.ts';
import type { Attachment, RouteOutput } from './route-parents.ts';
import { ReferenceGrants } from './reference-grants.ts';
import { PatchedMap } from '../../util/patched-map.ts';
import { deepEqual } from '../../util/deep-equal.ts';

/** What one HTTPRoute or GRPCRoute made, kept to be reused while nothing it depends on changed. */
export interface RouteFragment {
  readonly route: HTTPRoute | GRPCRoute;
  /** Ranked. */
  readonly routes: readonly RouteConfig[];
  readonly parents: readonly RouteParentStatus[];
  readonly problems: readonly Problem[];
  readonly attachments: readonly Attachment[];
  /** "ns/name" of the Services its backends name. */
  readonly reads: ReadonlySet<string>;
  /** The route's "ns/name", and its gatewaySourceKey: made once, not on every translation at 10,000 routes. */
  readonly key: string;
  readonly sourceKey: string;
  /** Its status entry while no route of the other kind takes a hostname from it (kept, so unchanged routes keep it). */
  readonly status: { readonly generation?: number; readonly parents: readonly RouteParentStatus[] };
}

export interface GatewayApiOutput {
  /** Every Gateway route, by source route (made when read: a full table build, /routes). */
  readonly routes: readonly RouteConfig[];
  readonly routeCount: number;
  readonly listeners: ReadonlyMap<number, ListenerConfig>;
  readonly status: GatewayApiStatus;
  readonly problems: readonly Problem[];
  /** By "<kind>:<ns>/<name>" ("HTTPRoute:default/web"). */
  readonly fragments: PatchedMap<string, RouteFragment>;
  /** The routes served, by gatewaySourceKey of their route (only routes that serve something). */
  readonly routesBySource: ReadonlyMap<string, readonly RouteConfig[]>;
  /** Set by updateGatewayApi: the sources whose served routes may differ from the previous output's. */
  readonly changedSources?: ReadonlySet<string>;
  /** Service "ns/name" -> the fragments that read it. Handed from output to output (updated in place). */
  readonly readers: Map<string, Set<string>>;
  /** The fragments by the Gateways and namespaces their routes name (handed on like `readers`). */
  readonly routeIndex: RouteIndex;
  /** The Gateways' pass this output attached routes to. */
  readonly pass: GatewayPass;
  /** Routes this output translated (not reused): what the change cost. */
  readonly translated: number;
  /** What updateGatewayApi patches. */
  readonly state: GatewayRouteState;
}

/** The route side of an output, kept so that a route change patches it instead of redoing all routes. */
interface GatewayRouteState {
  /** Fragments attached somewhere, as served (after cross-kind conflicts). */
  readonly served: PatchedMap<string, RouteFragment>;
  /** Listener ("gateway#index") -> routes attached. */
  readonly attached: ReadonlyMap<string, number>;
  /** Attached fragments of each kind: conflicts between the kinds are only possible when both are there. */
  readonly http: number;
  readonly grpc: number;
  /** RouteConfigs of the served fragments. */
  readonly routes: number;
  readonly passProblems: readonly Problem[];
  /** Served fragments' problems, only those that have some. */
  readonly routeProblems: PatchedMap<string, readonly Problem[]>;
}

export interface GatewayApiDeps {
  readonly backends: BackendResolver;
  readonly secrets: SecretParser;
  readonly controllerName?: string;
  readonly reservedPorts: ReadonlyMap<number, string>;
  /**
   * The previous fragment of a route ("<kind>:<ns>/<name>") when it is still valid (the
   * caller knows what changed); translating the route is skipped then.
   */
  readonly reuse?: (key: string, route: HTTPRoute | GRPCRoute) => RouteFragment | undefined;
  /**
   * The fragments of the previous output, when every route is translated again (a
   * Gateway, class, grant, namespace or certificate changed): a route that comes out the
   * same keeps its previous fragment, so the table and the workers patch only the routes
   * the change made different, not all of them.
   */
  readonly previous?: { get(key: string): RouteFragment | undefined };
}

const NO_GRPC_ROUTES: ReadonlyMap<string, GRPCRoute> = new Map();
const NO_REJECTIONS: Rejections = new Map();

function fragmentOf(route: HTTPRoute | GRPCRoute, out: RouteOutput): RouteFragment {
  // The backends the route names, resolved or not (a ref of another kind only costs a
  // needless re-translation): its routes read those Services, and so do its status and
  // problems even when it makes no routes (no listener takes it, every match is
  // rejected), so one appearing or going must translate it again.
  const namespace = route.metadata.namespace ?? 'default';
  const reads = new Set<string>();
  forEachNamedBackend(route, (ref) => {
    if (typeof ref.name === 'string') reads.add(`${ref.namespace ?? namespace}/${ref.name}`);
  });
  const key = keyOf(route);
  return {
    route,
    routes: out.routes,
    parents: out.parents,
    problems: out.problems,
    attachments: out.attachments,
    reads,
    key,
    sourceKey: gatewaySourceKey({ kind: route.kind, namespace: route.metadata.namespace ?? 'default', name: route.metadata.name }),
    status: { generation: route.metadata.generation, parents: out.parents },
  };
}

export function translateGatewayApi(snapshot: Snapshot, deps: GatewayApiDeps): GatewayApiOutput {
  const controllerName = deps.controllerName ?? GATEWAY_CONTROLLER_NAME;
  const grants = new ReferenceGrants(snapshot);
  const pass = translateGateways({ snapshot, controllerName, grants, secrets: deps.secrets, reservedPorts: deps.reservedPorts });

  const fragments = new Map<string, RouteFragment>();
  const served = new Map<string, RouteFragment>();
  const routeProblems = new Map<string, readonly Problem[]>();
  const attachedCounts = new Map<string, number>();
  let http = 0;
  let grpc = 0;
  let routeCount = 0;
  let translated = 0;
  if (pass.gateways.size > 0) {
    const routeDeps = { snapshot, controllerName, grants, backends: deps.backends };
    const attached: [string, RouteFragment][] = [];
    const translateAll = <R extends HTTPRoute | GRPCRoute>(kind: string, routes: ReadonlyMap<string, R>, translate: (route: R) => RouteOutput) => {
      for (const [key, route] of routes) {
        const fragmentKey = `${kind}:${key}`;
        let fragment = deps.reuse?.(fragmentKey, route);
        if (fragment === undefined) {
          translated++;
          const made = fragmentOf(route, translate(route));
          const before = deps.previous?.get(fragmentKey);
          fragment = before !== undefined && sameFragment(before, made) ? before : made;
        }
        fragments.set(fragmentKey, fragment);
        if (fragment.parents.length > 0) attached.push([fragmentKey, fragment]);
      }
    };
    translateAll('HTTPRoute', snapshot.httpRoutes, (route) => translateHttpRoute(routeDeps, route, pass));
    http = attached.length;
    translateAll('GRPCRoute', snapshot.grpcRoutes ?? NO_GRPC_ROUTES, (route) => translateGrpcRoute(routeDeps, route, pass));
    grpc = attached.length - http;
    // An HTTPRoute and a GRPCRoute may not share a hostname on a listener: one of each such pair is rejected there.
    const rejected = grpc > 0 && http > 0 ? crossKindConflicts(attached.map(([, f]) => f)) : NO_REJECTIONS;
    for (const [fragmentKey, fragment] of attached) {
      const lost = rejected.get(fragment);
      let version = fragment;
      if (lost !== undefined) {
        const cut = withoutRejected(fragment, lost);
        version = { ...cut, status: { generation: fragment.route.metadata.generation, parents: cut.parents } };
      }
      served.set(fragmentKey, version);
      routeCount += version.routes.length;
      countAttachments(attachedCounts, version, 1);
      if (version.problems.length > 0) routeProblems.set(fragmentKey, version.problems);
    }
  }
  const readers = new Map<string, Set<string>>();
  const routeIndex = new RouteIndex();
  for (const [fragmentKey, fragment] of fragments) indexFragment(readers, routeIndex, fragmentKey, fragment, 1);
  const state: GatewayRouteState = {
    served: PatchedMap.of(served),
    attached: attachedCounts,
    http,
    grpc,
    routes: routeCount,
    passProblems: pass.problems,
    routeProblems: PatchedMap.of(routeProblems),
  };
  return assemble(pass, PatchedMap.of(fragments), state, { readers, routeIndex, translated }, undefined);
}

/** What changed on the Gateway side, besides Gateways and classes (whose effect is found by comparing the passes). */
export interface GatewaySideChanges {
  /** Namespaces of changed ReferenceGrants: routes referring into them from elsewhere may change. */
  readonly grantNamespaces: ReadonlySet<string>;
  /** Namespaces whose object (labels) changed: their routes may change. */
  readonly namespaces: ReadonlySet<string>;
}

const NO_SIDE_CHANGES: GatewaySideChanges = { grantNamespaces: new Set(), namespaces: new Set() };

/**
 * The previous output with the routes named in `redo` ("<kind>:<ns>/<name>": changed, or
 * reading a changed Service) translated again, and those a Gateway-side change can
 * change: the routes naming a Gateway whose listeners, as routes see them, differ from
 * the previous pass (a Gateway or class changed, a certificate, a listener conflict
 * between Gateways), and those `side` names. Work for those routes, not for the 10,000
 * others. Only while no listener has routes of both kinds (then hostname conflicts
 * between them can move anywhere): undefined, translate it all.
 */
export function updateGatewayApi(snapshot: Snapshot, deps: GatewayApiDeps, previous: GatewayApiOutput, redo: ReadonlySet<string>, side: GatewaySideChanges = NO_SIDE_CHANGES): GatewayApiOutput | undefined {
  const before = previous.state;
  if (before.http > 0 && before.grpc > 0) return undefined;
  if (previous.pass.gateways.size === 0) return undefined; // no route was attached then: nothing to patch
  const controllerName = deps.controllerName ?? GATEWAY_CONTROLLER_NAME;
  const grants = new ReferenceGrants(snapshot);
  const pass = translateGateways({ snapshot, controllerName, grants, secrets: deps.secrets, reservedPorts: deps.reservedPorts });
  if (pass.gateways.size === 0) return undefined;
  const routeDeps = { snapshot, controllerName, grants, backends: deps.backends };
  const index = previous.routeIndex;
  index.build(previous.fragments);
  // Routes translated again whatever reuse() says: what they read outside themselves changed.
  const forced = new Set<string>();
  for (const key of new Set([...previous.pass.gateways.keys(), ...pass.gateways.keys()])) {
    if (!sameForRoutes(previous.pass.gateways.get(key), pass.gateways.get(key))) for (const f of index.naming(key)) forced.add(f);
  }
  for (const ns of side.namespaces) for (const f of index.inNamespace(ns)) forced.add(f);
  for (const ns of side.grantNamespaces) for (const f of index.referencing(ns)) forced.add(f);
  const todo = forced.size === 0 ? redo : new Set([...redo, ...forced]);
  let translated = 0;

  const fragmentChanges: [string, RouteFragment | undefined][] = [];
  const servedChanges: [string, RouteFragment | undefined][] = [];
  const problemChanges: [string, readonly Problem[] | undefined][] = [];
  const attached = new Map(before.attached);
  const changedSources = new Set<string>();
  let { http, grpc, routes: routeCount } = before;
  const readers = previous.readers;
  for (const fragmentKey of todo) {
    const colon = fragmentKey.indexOf(':');
    const kind = fragmentKey.slice(0, colon);
    const key = fragmentKey.slice(colon + 1);
    const route = kind === 'HTTPRoute' ? snapshot.httpRoutes.get(key) : kind === 'GRPCRoute' ? snapshot.grpcRoutes?.get(key) : undefined;
    const old = previous.fragments.get(fragmentKey);
    let next: RouteFragment | undefined;
    if (route !== undefined) {
      if (!forced.has(fragmentKey)) next = deps.reuse?.(fragmentKey, route);
      if (next === undefined) {
        translated++;
        const out = kind === 'HTTPRoute' ? translateHttpRoute(routeDeps, route as HTTPRoute, pass) : translateGrpcRoute(routeDeps, route as GRPCRoute, pass);
        next = fragmentOf(route, out);
        // The same output keeps its fragment: the table and the workers patch only what differs.
        if (old !== undefined && sameFragment(old, next)) next = old;
      }
    }
    if (next === old) continue;
    fragmentChanges.push([fragmentKey, next]);
    if (old !== undefined) indexFragment(readers, index, fragmentKey, old, -1);
    if (next !== undefined) indexFragment(readers, index, fragmentKey, next, 1);
    const wasServed = before.served.get(fragmentKey);
    const nowServed = next !== undefined && next.parents.length > 0 ? next : undefined;
    if (wasServed !== undefined) {
      routeCount -= wasServed.routes.length;
      countAttachments(attached, wasServed, -1);
      if (kind === 'GRPCRoute') grpc--;
      else http--;
      changedSources.add(wasServed.sourceKey);
    }
    if (nowServed !== undefined) {
      routeCount += nowServed.routes.length;
      countAttachments(attached, nowServed, 1);
      if (kind === 'GRPCRoute') grpc++;
      else http++;
      changedSources.add(nowServed.sourceKey);
    }
    servedChanges.push([fragmentKey, nowServed]);
    problemChanges.push([fragmentKey, nowServed !== undefined && nowServed.problems.length > 0 ? nowServed.problems : undefined]);
  }
  // Both kinds now: which of them keep a shared hostname depends on every route's age.
  if (http > 0 && grpc > 0) {
    for (const [fragmentKey, next] of fragmentChanges) {
      const old = previous.fragments.get(fragmentKey);
      if (next !== undefined) indexFragment(readers, index, fragmentKey, next, -1);
      if (old !== undefined) indexFragment(readers, index, fragmentKey, old, 1);
    }
    return undefined;
  }
  const state: GatewayRouteState = {
    served: before.served.with(servedChanges),
    attached,
    http,
    grpc,
    routes: routeCount,
    passProblems: pass.problems,
    routeProblems: before.routeProblems.with(problemChanges),
  };
  return assemble(pass, previous.fragments.with(fragmentChanges), state, { readers, routeIndex: index, translated }, changedSources);
}

function countAttachments(counts: Map<string, number>, fragment: RouteFragment, sign: 1 | -1): void {
  for (const a of fragment.attachments) counts.set(a.listener, (counts.get(a.listener) ?? 0) + sign);
}

/**
 * A Gateway as the routes that name it see it: the same listeners (spec, protocol,
 * hostname, readiness, kinds) in the same namespace. Its status, certificates and
 * attachment counts are not read by routes.
 */
function sameForRoutes(a: GatewayInfo | undefined, b: GatewayInfo | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  if ((a.gateway.metadata.namespace ?? 'default') !== (b.gateway.metadata.namespace ?? 'default') || a.listeners.length !== b.listeners.length) return false;
  return a.listeners.every((x, i) => {
    const y = b.listeners[i]!;
    return x.protocol === y.protocol && x.hostname === y.hostname && x.ready === y.ready && deepEqual(x.supportedKinds, y.supportedKinds) && (x.spec === y.spec || deepEqual(x.spec, y.spec));
  });
}

function indexFragment(readers: Map<string, Set<string>>, routeIndex: RouteIndex, fragmentKey: string, fragment: RouteFragment, sign: 1 | -1): void {
  indexReads(readers, fragmentKey, fragment, sign);
  routeIndex.update(fragmentKey, fragment.route, sign);
}

function indexReads(readers: Map<string, Set<string>>, fragmentKey: string, fragment: RouteFragment, sign: 1 | -1): void {
  for (const read of fragment.reads) {
    let set = readers.get(read);
    if (sign > 0) {
      if (set === undefined) readers.set(read, (set = new Set()));
      set.add(fragmentKey);
    } else if (set !== undefined) {
      set.delete(fragmentKey);
      if (set.size === 0) readers.delete(read);
    }
  }
}

/** The same route made the same output: its own object, and equal routes, parents, problems, attachments and status (plain data; a Map or a Set in them only when the very same). */
function sameFragment(a: RouteFragment, b: RouteFragment): boolean {
  return a.route === b.route && deepEqual(a.routes, b.routes) && deepEqual(a.parents, b.parents) && deepEqual(a.problems, b.problems) && deepEqual(a.attachments, b.attachments) && deepEqual(a.status, b.status);
}


/** The output from the Gateways' pass and the routes' state: statuses, listeners, problems, route lists. */
function assemble(
  pass: ReturnType<typeof translateGateways>,
  fragments: PatchedMap<string, RouteFragment>,
  state: GatewayRouteState,
  handed: { readonly readers: Map<string, Set<string>>; readonly routeIndex: RouteIndex; readonly translated: number },
  changedSources: ReadonlySet<string> | undefined,
): GatewayApiOutput {
  for (const gw of pass.gateways.values()) for (const l of gw.listeners) l.attached = state.attached.get(`${l.gatewayKey}#${l.index}`) ?? 0;
  const listeners = new Map<number, { protocol: 'HTTP' | 'HTTPS'; certificates: Map<string, CertificateConfig> }>();
  const gateways = new Map<string, ReturnType<typeof gatewayStatusOf>>();
  for (const info of pass.gateways.values()) {
    gateways.set(info.key, gatewayStatusOf(info));
    for (const l of info.listeners) {
      if (!l.ready || l.protocol === undefined) continue;
      let entry = listeners.get(l.spec.port);
      if (entry === undefined) listeners.set(l.spec.port, (entry = { protocol: l.protocol, certificates: new Map() }));
      if (l.certificate !== undefined && !entry.certificates.has(l.hostname)) entry.certificates.set(l.hostname, l.certificate);
    }
  }
  const listenerConfigs = new Map<number, ListenerConfig>();
  for (const [port, l] of listeners) listenerConfigs.set(port, { port, protocol: l.protocol, certificates: l.certificates });

  // Per route kind and per source: views over the served fragments (a lookup is one
  // probe; iterating makes the whole map, in key order, once).
  const served = state.served;
  const statusOf = (kind: string) =>
    new ServedView<{ generation?: number; parents: readonly RouteParentStatus[] }>(
      served,
      (key) => `${kind}:${key}`,
      (f) => (f.route.kind === kind ? [f.key, f.status] : undefined),
    );
  const routesBySource = new ServedView<readonly RouteConfig[]>(
    served,
    // "HTTPRoute/ns/name" -> "HTTPRoute:ns/name"
    (sourceKey) => sourceKey.replace('/', ':'),
    (f) => (f.routes.length > 0 ? [f.sourceKey, f.routes] : undefined),
  );
  const routeCount = state.routes;
  let routes: readonly RouteConfig[] | undefined;
  // Made on first use too: a route change passes on the problems of the routes it names (see changedSources).
  let problems: Problem[] | undefined;
  return {
    get routes() {
      return (routes ??= [...routesBySource.values()].flat());
    },
    get problems() {
      if (problems === undefined) {
        problems = [...state.passProblems];
        for (const list of state.routeProblems.values()) for (const p of list) problems.push(p);
      }
      return problems;
    },
    routeCount,
    listeners: listenerConfigs,
    status: { gatewayClasses: pass.classes, gateways, httpRoutes: statusOf('HTTPRoute'), grpcRoutes: statusOf('GRPCRoute') },
    fragments,
    routesBySource,
    ...(changedSources !== undefined ? { changedSources } : {}),
    ...handed,
    pass,
    state,
  };
}

/** A read-only map over the served fragments: `entryOf` says what a fragment is in it (or nothing). */
class ServedView<V> implements ReadonlyMap<string, V> {
  private made: Map<string, V> | undefined;
  private readonly served: ReadonlyMap<string, RouteFragment>;
  private readonly fragmentKeyOf: (key: string) => string;
  private readonly entryOf: (fragment: RouteFragment) => readonly [string, V] | undefined;

  constructor(served: ReadonlyMap<string, RouteFragment>, fragmentKeyOf: (key: string) => string, entryOf: (fragment: RouteFragment) => readonly [string, V] | undefined) {
    this.served = served;
    this.fragmentKeyOf = fragmentKeyOf;
    this.entryOf = entryOf;
  }

  get(key: string): V | undefined {
    if (this.made !== undefined) return this.made.get(key);
    const fragment = this.served.get(this.fragmentKeyOf(key));
    if (fragment === undefined) return undefined;
    const entry = this.entryOf(fragment);
    return entry !== undefined && entry[0] === key ? entry[1] : undefined;
  }

  has(key: string): boolean {
    return this.get(key) !== undefined;
  }

  private all(): Map<string, V> {
    if (this.made === undefined) {
      const made = new Map<string, V>();
      for (const fragmentKey of [...this.served.keys()].sort()) {
        const entry = this.entryOf(this.served.get(fragmentKey)!);
        if (entry !== undefined) made.set(entry[0], entry[1]);
      }
      this.made = made;
    }
    return this.made;
  }

  get size(): number {
    return this.all().size;
  }

  forEach(callback: (value: V, key: string, map: ReadonlyMap<string, V>) => void): void {
    for (const [key, value] of this.all()) callback(value, key, this);
  }

  entries(): MapIterator<[string, V]> {
    return this.all().entries();
  }

  keys(): MapIterator<string> {
    return this.all().keys();
  }

  values(): MapIterator<V> {
    return this.all().values();
  }

  [Symbol.iterator](): MapIterator<[string, V]> {
    return this.all()[Symbol.iterator]();
  }
}
