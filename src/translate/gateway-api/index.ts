// Gateway API -> the same routing model as Ingress: RouteConfigs on Gateway listener
// ports, the listeners to bind with their certificates, and the status of each
// GatewayClass, Gateway, HTTPRoute and GRPCRoute. Pure, like the Ingress translation.
import { gatewaySourceKey, type CertificateConfig, type GatewayApiStatus, type ListenerConfig, type Problem, type RouteConfig, type Snapshot } from '../../model/config.ts';
import { GATEWAY_CONTROLLER_NAME, keyOf, type GRPCRoute, type HTTPRoute, type RouteParentStatus } from '../../model/k8s.ts';
import type { RequestMirrorConfig } from '../../middleware/request-mirror.ts';
import type { BackendResolver } from '../backends.ts';
import type { SecretParser } from '../tls.ts';
import { gatewayStatusOf, translateGateways } from './gateways.ts';
import { translateGrpcRoute } from './grpcroutes.ts';
import { translateHttpRoute } from './httproutes.ts';
import { crossKindConflicts, withoutRejected, type Rejections } from './route-conflicts.ts';
import type { Attachment, RouteOutput } from './route-parents.ts';
import { ReferenceGrants } from './reference-grants.ts';

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
  readonly routes: RouteConfig[];
  readonly listeners: ReadonlyMap<number, ListenerConfig>;
  readonly status: GatewayApiStatus;
  readonly problems: Problem[];
  /** By "<kind>:<ns>/<name>" ("HTTPRoute:default/web"). */
  readonly fragments: ReadonlyMap<string, RouteFragment>;
  /** The routes served, by gatewaySourceKey of their route (only routes that serve something). */
  readonly routesBySource: ReadonlyMap<string, readonly RouteConfig[]>;
  /** The fragments made by this translation (the others were reused). */
  readonly translated: readonly RouteFragment[];
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
}

const NO_GRPC_ROUTES: ReadonlyMap<string, GRPCRoute> = new Map();
const NO_REJECTIONS: Rejections = new Map();

function fragmentOf(route: HTTPRoute | GRPCRoute, out: RouteOutput): RouteFragment {
  const reads = new Set<string>();
  for (const r of out.routes) {
    reads.add(`${r.backend.namespace}/${r.backend.service}`);
    for (const b of r.backends ?? []) reads.add(`${b.backend.namespace}/${b.backend.service}`);
    for (const p of r.policies) {
      if (p.name === 'request-mirror') {
        for (const m of (p.config as RequestMirrorConfig).mirrors) reads.add(`${m.backend.namespace}/${m.backend.service}`);
      }
    }
  }
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
  const problems = [...pass.problems];

  const routeConfigs: RouteConfig[] = [];
  const fragments = new Map<string, RouteFragment>();
  const httpRoutes = new Map<string, { generation?: number; parents: readonly RouteParentStatus[] }>();
  const grpcRoutes = new Map<string, { generation?: number; parents: readonly RouteParentStatus[] }>();
  const routesBySource = new Map<string, readonly RouteConfig[]>();
  const translated: RouteFragment[] = [];
  if (pass.gateways.size > 0) {
    const listenersById = new Map<string, { attached: number }>();
    for (const gw of pass.gateways.values()) for (const l of gw.listeners) listenersById.set(`${l.gatewayKey}#${l.index}`, l);
    const routeDeps = { snapshot, controllerName, grants, backends: deps.backends };
    const attached: RouteFragment[] = [];
    let attachedGrpc = 0;
    const translateAll = <R extends HTTPRoute | GRPCRoute>(kind: string, routes: ReadonlyMap<string, R>, translate: (route: R) => RouteOutput) => {
      for (const [key, route] of routes) {
        const fragmentKey = `${kind}:${key}`;
        let fragment = deps.reuse?.(fragmentKey, route);
        if (fragment === undefined) translated.push((fragment = fragmentOf(route, translate(route))));
        fragments.set(fragmentKey, fragment);
        if (fragment.parents.length > 0) attached.push(fragment);
      }
    };
    translateAll('HTTPRoute', snapshot.httpRoutes, (route) => translateHttpRoute(routeDeps, route, pass));
    const httpAttached = attached.length;
    translateAll('GRPCRoute', snapshot.grpcRoutes ?? NO_GRPC_ROUTES, (route) => translateGrpcRoute(routeDeps, route, pass));
    attachedGrpc = attached.length - httpAttached;
    // An HTTPRoute and a GRPCRoute may not share a hostname on a listener: one of each such pair is rejected there.
    const rejected = attachedGrpc > 0 && httpAttached > 0 ? crossKindConflicts(attached) : NO_REJECTIONS;
    for (const fragment of attached) {
      const lost = rejected.get(fragment);
      const served = lost === undefined ? fragment : withoutRejected(fragment, lost);
      for (const a of served.attachments) listenersById.get(a.listener)!.attached++;
      (fragment.route.kind === 'GRPCRoute' ? grpcRoutes : httpRoutes).set(fragment.key, lost === undefined ? fragment.status : { generation: fragment.route.metadata.generation, parents: served.parents });
      for (const r of served.routes) routeConfigs.push(r);
      if (served.routes.length > 0) routesBySource.set(fragment.sourceKey, served.routes);
      for (const p of served.problems) problems.push(p);
    }
  }

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

  return { routes: routeConfigs, listeners: listenerConfigs, status: { gatewayClasses: pass.classes, gateways, httpRoutes, grpcRoutes }, problems, fragments, routesBySource, translated };
}
