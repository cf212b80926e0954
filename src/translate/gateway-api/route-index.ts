// HTTPRoutes and GRPCRoutes by what outside them their translation reads besides
// Services: the Gateways their parentRefs name, their own namespace (whose labels
// allowedRoutes selectors read) and the other namespaces they refer to (where a
// ReferenceGrant decides). A Gateway-side change then translates only the routes it
// can change, not all of them.
import { GATEWAY_GROUP, type GRPCRoute, type HTTPRoute } from '../../model/k8s.ts';
import { KeySets } from '../../util/key-sets.ts';

export class RouteIndex {
  private readonly byGateway = new KeySets();
  private readonly byNamespace = new KeySets();
  private readonly byReferencedNamespace = new KeySets();

  /** sign 1: index `route` under `fragmentKey`; -1: take it out. */
  update(fragmentKey: string, route: HTTPRoute | GRPCRoute, sign: 1 | -1): void {
    const namespace = route.metadata.namespace ?? 'default';
    const apply = (index: KeySets, key: string) => (sign > 0 ? index.add(key, fragmentKey) : index.delete(key, fragmentKey));
    apply(this.byNamespace, namespace);
    for (const ref of route.spec?.parentRefs ?? []) {
      if ((ref.group ?? GATEWAY_GROUP) !== GATEWAY_GROUP || (ref.kind ?? 'Gateway') !== 'Gateway') continue;
      apply(this.byGateway, `${ref.namespace ?? namespace}/${ref.name}`);
    }
    for (const other of referencedNamespaces(route.spec?.rules, namespace)) apply(this.byReferencedNamespace, other);
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

/** Every `namespace` field under the rules (backendRefs, mirror filters, any ref to come) other than the route's own. */
function referencedNamespaces(value: unknown, own: string, out = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) referencedNamespaces(item, own, out);
  else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      if (key === 'namespace' && typeof item === 'string') {
        if (item !== own) out.add(item);
      } else referencedNamespaces(item, own, out);
    }
  }
  return out;
}
