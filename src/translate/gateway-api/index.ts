// Gateway API -> the same routing model as Ingress: RouteConfigs on Gateway listener
// ports, the listeners to bind with their certificates, and the status of each
// GatewayClass, Gateway and HTTPRoute. Pure, like the Ingress translation.
import type { CertificateConfig, GatewayApiStatus, ListenerConfig, Problem, RouteConfig, Snapshot } from '../../model/config.ts';
import { GATEWAY_CONTROLLER_NAME, type HTTPRoute, type RouteParentStatus } from '../../model/k8s.ts';
import type { RequestMirrorConfig } from '../../middleware/request-mirror.ts';
import type { BackendResolver } from '../backends.ts';
import type { SecretParser } from '../tls.ts';
import { gatewayStatusOf, translateGateways } from './gateways.ts';
import { translateHttpRoute, type Precedence } from './httproutes.ts';
import { ReferenceGrants } from './reference-grants.ts';

/** What one HTTPRoute made, kept to be reused while nothing it depends on changed. */
export interface RouteFragment {
  readonly route: HTTPRoute;
  /** Ranked. */
  readonly routes: readonly RouteConfig[];
  readonly parents: RouteParentStatus[];
  readonly problems: readonly Problem[];
  readonly attachedTo: readonly string[];
  /** "ns/name" of the Services its backends name. */
  readonly reads: ReadonlySet<string>;
}

export interface GatewayApiOutput {
  readonly routes: RouteConfig[];
  readonly listeners: ReadonlyMap<number, ListenerConfig>;
  readonly status: GatewayApiStatus;
  readonly problems: Problem[];
  /** By HTTPRoute key. */
  readonly fragments: ReadonlyMap<string, RouteFragment>;
}

export interface GatewayApiDeps {
  readonly backends: BackendResolver;
  readonly secrets: SecretParser;
  readonly controllerName?: string;
  readonly reservedPorts: ReadonlyMap<number, string>;
  /**
   * The previous fragment of an HTTPRoute when it is still valid (the caller knows what
   * changed); translating the route is skipped then.
   */
  readonly reuse?: (key: string, route: HTTPRoute) => RouteFragment | undefined;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

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

export function translateGatewayApi(snapshot: Snapshot, deps: GatewayApiDeps): GatewayApiOutput {
  const controllerName = deps.controllerName ?? GATEWAY_CONTROLLER_NAME;
  const grants = new ReferenceGrants(snapshot);
  const pass = translateGateways({ snapshot, controllerName, grants, secrets: deps.secrets, reservedPorts: deps.reservedPorts });
  const problems = [...pass.problems];

  const routeConfigs: RouteConfig[] = [];
  const fragments = new Map<string, RouteFragment>();
  const httpRoutes = new Map<string, { generation?: number; parents: RouteParentStatus[] }>();
  if (pass.gateways.size > 0) {
    const listenersById = new Map<string, { attached: number }>();
    for (const gw of pass.gateways.values()) for (const l of gw.listeners) listenersById.set(`${l.gatewayKey}#${l.index}`, l);
    for (const [key, route] of snapshot.httpRoutes) {
      let fragment = deps.reuse?.(key, route);
      if (fragment !== undefined) {
        for (const id of fragment.attachedTo) listenersById.get(id)!.attached++;
      } else {
        const out = translateHttpRoute({ snapshot, controllerName, grants, backends: deps.backends }, key, route, pass);
        const reads = new Set<string>();
        const ranked = out.routes.map((r) => {
          reads.add(`${r.config.backend.namespace}/${r.config.backend.service}`);
          for (const b of r.config.backends ?? []) reads.add(`${b.backend.namespace}/${b.backend.service}`);
          for (const p of r.config.policies) {
            if (p.name === 'request-mirror') {
              for (const m of (p.config as RequestMirrorConfig).mirrors) reads.add(`${m.backend.namespace}/${m.backend.service}`);
            }
          }
          return { ...r.config, rank: precedenceKey(r.precedence) };
        });
        fragment = { route, routes: ranked, parents: out.parents, problems: out.problems, attachedTo: out.attachedTo, reads };
      }
      fragments.set(key, fragment);
      if (fragment.parents.length === 0) continue;
      httpRoutes.set(key, { generation: route.metadata.generation, parents: fragment.parents });
      for (const r of fragment.routes) routeConfigs.push(r);
      for (const p of fragment.problems) problems.push(p);
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

  return { routes: routeConfigs, listeners: listenerConfigs, status: { gatewayClasses: pass.classes, gateways, httpRoutes }, problems, fragments };
}
