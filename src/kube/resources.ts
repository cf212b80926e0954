// Where each kind portico reads lives in the Kubernetes API.
import type { RoutingKind } from '../model/k8s.ts';

/** K: the kinds routing reads, or another kind read the same way (CacheInvalidation). */
export interface ResourceInfo<K extends string = RoutingKind> {
  kind: K;
  /** "/api/v1" or "/apis/<group>/<version>" */
  base: string;
  plural: string;
  namespaced: boolean;
  /** Server-side filter: what the cache does not need is never sent. */
  fieldSelector?: string;
}

export const RESOURCES: Record<RoutingKind, ResourceInfo> = {
  IngressClass: { kind: 'IngressClass', base: '/apis/networking.k8s.io/v1', plural: 'ingressclasses', namespaced: false },
  Ingress: { kind: 'Ingress', base: '/apis/networking.k8s.io/v1', plural: 'ingresses', namespaced: true },
  Service: { kind: 'Service', base: '/api/v1', plural: 'services', namespaced: true },
  EndpointSlice: { kind: 'EndpointSlice', base: '/apis/discovery.k8s.io/v1', plural: 'endpointslices', namespaced: true },
  // Only TLS Secrets: the API server filters by type, so other Secrets (tokens,
  // passwords, Helm releases) never reach portico's memory or the network.
  Secret: { kind: 'Secret', base: '/api/v1', plural: 'secrets', namespaced: true, fieldSelector: 'type=kubernetes.io/tls' },
  GatewayClass: { kind: 'GatewayClass', base: '/apis/gateway.networking.k8s.io/v1', plural: 'gatewayclasses', namespaced: false },
  Gateway: { kind: 'Gateway', base: '/apis/gateway.networking.k8s.io/v1', plural: 'gateways', namespaced: true },
  HTTPRoute: { kind: 'HTTPRoute', base: '/apis/gateway.networking.k8s.io/v1', plural: 'httproutes', namespaced: true },
  GRPCRoute: { kind: 'GRPCRoute', base: '/apis/gateway.networking.k8s.io/v1', plural: 'grpcroutes', namespaced: true },
  ReferenceGrant: { kind: 'ReferenceGrant', base: '/apis/gateway.networking.k8s.io/v1beta1', plural: 'referencegrants', namespaced: true },
  Namespace: { kind: 'Namespace', base: '/api/v1', plural: 'namespaces', namespaced: false },
};

/** portico's own CacheInvalidation (deploy/helm/portico/crds/): not routing input, read the same way. */
export const CACHE_INVALIDATIONS: ResourceInfo<'CacheInvalidation'> = {
  kind: 'CacheInvalidation',
  base: '/apis/portico.dev/v1alpha1',
  plural: 'cacheinvalidations',
  namespaced: true,
};

/** Collection path, across all namespaces or in one. */
export function collectionPath(r: ResourceInfo<string>, namespace?: string): string {
  return r.namespaced && namespace ? `${r.base}/namespaces/${namespace}/${r.plural}` : `${r.base}/${r.plural}`;
}

export function objectPath(r: ResourceInfo<string>, namespace: string | undefined, name: string, subresource?: string): string {
  const p = r.namespaced ? `${r.base}/namespaces/${namespace}/${r.plural}/${name}` : `${r.base}/${r.plural}/${name}`;
  return subresource ? `${p}/${subresource}` : p;
}
