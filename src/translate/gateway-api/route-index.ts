// HTTPRoutes and GRPCRoutes by what outside them their translation reads besides
// Services: the Gateways their parentRefs name, their own namespace (whose labels
// allowedRoutes selectors read) and the other namespaces they refer to (where a
// ReferenceGrant decides). A Gateway-side change then translates only the routes it
// can change, not all of them. Built at the first Gateway-side change that patches an
// output (about 15 ms at 10,000 routes), not with every full translation, then kept up
// to date route by route.
import { GATEWAY_GROUP, type GRPCRoute, type HTTPRoute } from '../../model/k8s.ts';
import { KeySets } from '../../util/key-sets.ts';

export class RouteIndex {
  private readonly byGateway = new KeySets();
  private readonly byNamespace = new KeySets();
  private readonly byReferencedNamespace = new KeySets();
  private built = false;

  /** Index every route of `fragments` unless done already (then update() keeps it current). */
  build(fragments: Iterable<readonly [string, { readonly route: HTTPRoute | GRPCRoute }]>): void {
    if (this.built) return;
    this.built = true;
    for (const [fragmentKey, fragment] of fragments) this.update(fragmentKey, fragment.route, 1);
  }

  /** sign 1: index `route` under `fragmentKey`; -1: take it out (nothing until built). */
  update(fragmentKey: string, route: HTTPRoute | GRPCRoute, sign: 1 | -1): void {
    if (!this.built) return;
    const namespace = route.metadata.namespace ?? 'default';
    const apply = (index: KeySets, key: string) => (sign > 0 ? index.add(key, fragmentKey) : index.delete(key, fragmentKey));
    apply(this.byNamespace, namespace);
    for (const ref of route.spec?.parentRefs ?? []) {
      if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? 'Gateway') !== 'Gateway') continue;
      apply(this.byGateway, `${ref.namespace ?? namespace}/${ref.name}`);
    }
    for (const other of referencedNamespaces(route, namespace)) apply(this.byReferencedNamespace, other);
  }

  /** The routes whose parentRefs name Gateway "ns/name". */
  naming(gatewayKey: string): Iterable<string> {
    return this.byGateway.members(gatewayKey);
  }

  /** The routes in `namespace`. */
  inNamespace(namespace: string): Iterable<string> {
    return this.byNamespace.members(namespace);
  }

  /** The routes that refer to something in `namespace` from another one. */
  referencing(namespace: string): Iterable<string> {
    return this.byReferencedNamespace.members(namespace);
  }
}

interface NamedRef {
  readonly group?: string;
  readonly kind?: string;
  readonly name?: string;
  readonly namespace?: string;
}
interface RefFilter {
  readonly requestMirror?: { readonly backendRef?: NamedRef };
}
interface RefRule {
  readonly backendRefs?: readonly (NamedRef & { readonly filters?: readonly RefFilter[] })[];
  readonly filters?: readonly RefFilter[];
}

/**
 * Calls `visit` with every backend a route names: its rules' backendRefs and the backendRefs
 * of their mirror filters (rule and per-backend). A loop, not a generator: it runs for every
 * route a change translates, and nested generators took 8% of the CPU of
 * `bench/translate.ts 1000 10000` (a listener change at 10,000 HTTPRoutes: 71-73 ms, then 49).
 */
export function forEachNamedBackend(route: HTTPRoute | GRPCRoute, visit: (ref: NamedRef) => void): void {
  const rules = route.spec?.rules as readonly RefRule[] | undefined;
  if (rules === undefined) return;
  for (const rule of rules) {
    visitMirrors(rule.filters, visit);
    const refs = rule.backendRefs;
    if (refs === undefined) continue;
    for (const ref of refs) {
      visit(ref);
      visitMirrors(ref.filters, visit);
    }
  }
}

function visitMirrors(filters: readonly RefFilter[] | undefined, visit: (ref: NamedRef) => void): void {
  if (filters === undefined) return;
  for (const filter of filters) {
    const ref = filter.requestMirror?.backendRef;
    if (ref !== undefined) visit(ref);
  }
}

/** The namespaces other than the route's own that its backends are in: where a ReferenceGrant decides. */
function referencedNamespaces(route: HTTPRoute | GRPCRoute, own: string): Set<string> {
  const out = new Set<string>();
  forEachNamedBackend(route, (ref) => {
    if (ref.namespace !== undefined && ref.namespace !== own) out.add(ref.namespace);
  });
  return out;
}
