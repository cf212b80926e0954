// The subset of Kubernetes objects portico reads, as they appear on the wire
// (JSON from the API server, or YAML manifests in standalone mode). Only the
// fields routing needs are typed; sources strip everything else before storing.

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
}

// ---- networking.k8s.io/v1 ----

export interface ServiceBackendPort {
  number?: number;
  name?: string;
}

export interface IngressBackend {
  service?: { name: string; port?: ServiceBackendPort };
  resource?: { apiGroup?: string; kind: string; name: string };
}

export type PathType = 'Exact' | 'Prefix' | 'ImplementationSpecific';

export interface HTTPIngressPath {
  path?: string;
  pathType?: PathType;
  backend: IngressBackend;
}

export interface IngressRule {
  host?: string;
  http?: { paths: HTTPIngressPath[] };
}

export interface IngressTLS {
  hosts?: string[];
  secretName?: string;
}

export interface LoadBalancerIngress {
  ip?: string;
  hostname?: string;
  ports?: { port: number; protocol: string; error?: string }[];
}

export interface Ingress extends KubeObject {
  kind: 'Ingress';
  spec?: {
    ingressClassName?: string;
    defaultBackend?: IngressBackend;
    tls?: IngressTLS[];
    rules?: IngressRule[];
  };
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
}

export interface IngressClass extends KubeObject {
  kind: 'IngressClass';
  spec?: { controller?: string; parameters?: unknown };
}

// ---- core/v1 ----

export interface ServicePort {
  name?: string;
  protocol?: string;
  port: number;
  targetPort?: number | string;
  appProtocol?: string;
}

export interface Service extends KubeObject {
  kind: 'Service';
  spec?: {
    type?: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
    clusterIP?: string;
    externalName?: string;
    ports?: ServicePort[];
  };
  status?: { loadBalancer?: { ingress?: LoadBalancerIngress[] } };
}

export interface Secret extends KubeObject {
  kind: 'Secret';
  type?: string;
  /** base64-encoded values, as on the wire */
  data?: Record<string, string>;
  /** plain-text values; manifests may use it, the API server folds it into data */
  stringData?: Record<string, string>;
}

// ---- discovery.k8s.io/v1 ----

export interface EndpointConditions {
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
}

export interface Endpoint {
  addresses: string[];
  conditions?: EndpointConditions;
  hostname?: string;
  nodeName?: string;
  zone?: string;
  targetRef?: { kind?: string; namespace?: string; name?: string; uid?: string };
}

export interface EndpointPort {
  name?: string;
  port?: number;
  protocol?: string;
  appProtocol?: string;
}

export interface EndpointSlice extends KubeObject {
  kind: 'EndpointSlice';
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  endpoints?: Endpoint[];
  ports?: EndpointPort[];
}

// ---- coordination.k8s.io/v1 and core/v1 Events (cluster mode only) ----

export interface Lease extends KubeObject {
  kind: 'Lease';
  spec?: {
    holderIdentity?: string;
    leaseDurationSeconds?: number;
    acquireTime?: string;
    renewTime?: string;
    leaseTransitions?: number;
  };
}

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
export const TLS_SECRET_TYPE = 'kubernetes.io/tls';

/** The kinds portico routes from. */
export type RoutingKind = 'Ingress' | 'IngressClass' | 'Service' | 'EndpointSlice' | 'Secret';
export const ROUTING_KINDS: readonly RoutingKind[] = ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret'];

export interface ObjectRef {
  kind: string;
  namespace?: string;
  name: string;
}

/** "namespace/name", or "name" for cluster-scoped objects. The key every map of objects uses. */
export function objectKey(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

export function keyOf(obj: KubeObject): string {
  return objectKey(obj.metadata.namespace, obj.metadata.name);
}
