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
  /** base64-encoded values, as on the wire (a sanitized Secret has none: see stringData) */
  data?: Record<string, string>;
  /** plain-text values; manifests may use it, the API server folds it into data. A sanitized Secret keeps its TLS values here, decoded (src/sources/sanitize.ts). */
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

// ---- gateway.networking.k8s.io/v1 (ReferenceGrant: v1beta1) ----
// Fields as the Gateway API spec names them; defaults (group, kind, weight...) are
// left unset here and applied by translation, so a manifest round-trips as written.

export interface LabelSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message?: string;
  observedGeneration?: number;
  lastTransitionTime?: string;
}

export interface GatewayClass extends KubeObject {
  kind: 'GatewayClass';
  spec?: { controllerName?: string; description?: string };
  status?: { conditions?: Condition[] };
}

/** A reference to a Secret (certificateRefs), a Service (backendRefs) or a parent (parentRefs). */
export interface ObjectReference {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
}

export interface RouteGroupKind {
  group?: string;
  kind: string;
}

export interface GatewayListener {
  name: string;
  hostname?: string;
  port: number;
  /** HTTP, HTTPS, TLS, TCP, UDP or a domain-prefixed custom protocol; portico serves HTTP and HTTPS. */
  protocol: string;
  tls?: { mode?: 'Terminate' | 'Passthrough'; certificateRefs?: ObjectReference[]; options?: Record<string, string> };
  allowedRoutes?: {
    namespaces?: { from?: 'All' | 'Same' | 'Selector'; selector?: LabelSelector };
    kinds?: RouteGroupKind[];
  };
}

export interface ListenerStatus {
  name: string;
  supportedKinds: RouteGroupKind[];
  attachedRoutes: number;
  conditions: Condition[];
}

export interface GatewayStatusAddress {
  type?: 'IPAddress' | 'Hostname' | string;
  value: string;
}

export interface Gateway extends KubeObject {
  kind: 'Gateway';
  spec?: {
    gatewayClassName?: string;
    listeners?: GatewayListener[];
    addresses?: GatewayStatusAddress[];
  };
  status?: { addresses?: GatewayStatusAddress[]; conditions?: Condition[]; listeners?: ListenerStatus[] };
}

export interface ParentReference extends ObjectReference {
  sectionName?: string;
  port?: number;
}

export interface HTTPHeader {
  name: string;
  value: string;
}

export interface HTTPHeaderFilter {
  set?: HTTPHeader[];
  add?: HTTPHeader[];
  remove?: string[];
}

export interface HTTPPathModifier {
  type: 'ReplaceFullPath' | 'ReplacePrefixMatch';
  replaceFullPath?: string;
  replacePrefixMatch?: string;
}

export interface HTTPRouteFilter {
  type: 'RequestHeaderModifier' | 'ResponseHeaderModifier' | 'RequestRedirect' | 'URLRewrite' | 'RequestMirror' | 'ExtensionRef' | string;
  requestHeaderModifier?: HTTPHeaderFilter;
  responseHeaderModifier?: HTTPHeaderFilter;
  requestRedirect?: {
    scheme?: string;
    hostname?: string;
    path?: HTTPPathModifier;
    port?: number;
    statusCode?: number;
  };
  urlRewrite?: { hostname?: string; path?: HTTPPathModifier };
  requestMirror?: { backendRef: BackendObjectReference; percent?: number; fraction?: { numerator: number; denominator?: number } };
  extensionRef?: { group: string; kind: string; name: string };
}

export interface BackendObjectReference extends ObjectReference {
  port?: number;
}

export interface HTTPBackendRef extends BackendObjectReference {
  weight?: number;
  filters?: HTTPRouteFilter[];
}

export interface HTTPRouteMatch {
  path?: { type?: 'Exact' | 'PathPrefix' | 'RegularExpression'; value?: string };
  headers?: { type?: 'Exact' | 'RegularExpression'; name: string; value: string }[];
  queryParams?: { type?: 'Exact' | 'RegularExpression'; name: string; value: string }[];
  method?: string;
}

export interface HTTPRouteRule {
  name?: string;
  matches?: HTTPRouteMatch[];
  filters?: HTTPRouteFilter[];
  backendRefs?: HTTPBackendRef[];
  timeouts?: { request?: string; backendRequest?: string };
}

export interface RouteParentStatus {
  parentRef: ParentReference;
  controllerName: string;
  conditions: Condition[];
}

export interface HTTPRoute extends KubeObject {
  kind: 'HTTPRoute';
  spec?: {
    parentRefs?: ParentReference[];
    hostnames?: string[];
    rules?: HTTPRouteRule[];
  };
  status?: { parents?: RouteParentStatus[] };
}

export interface GRPCMethodMatch {
  /** Exact (default) or RegularExpression. */
  type?: 'Exact' | 'RegularExpression';
  service?: string;
  method?: string;
}

export interface GRPCRouteMatch {
  method?: GRPCMethodMatch;
  headers?: { type?: 'Exact' | 'RegularExpression'; name: string; value: string }[];
}

/** GRPCRoute filters are a subset of HTTPRoute's (RequestHeaderModifier, ResponseHeaderModifier, RequestMirror, ExtensionRef). */
export interface GRPCRouteRule {
  name?: string;
  matches?: GRPCRouteMatch[];
  filters?: HTTPRouteFilter[];
  backendRefs?: HTTPBackendRef[];
}

export interface GRPCRoute extends KubeObject {
  kind: 'GRPCRoute';
  spec?: {
    parentRefs?: ParentReference[];
    hostnames?: string[];
    rules?: GRPCRouteRule[];
  };
  status?: { parents?: RouteParentStatus[] };
}

export interface ReferenceGrant extends KubeObject {
  kind: 'ReferenceGrant';
  spec?: {
    from?: { group: string; kind: string; namespace: string }[];
    to?: { group: string; kind: string; name?: string }[];
  };
}

/** Only the labels matter: listeners select the namespaces routes may attach from. */
export interface Namespace extends KubeObject {
  kind: 'Namespace';
}

export const GATEWAY_GROUP = 'gateway.networking.k8s.io';
export const GATEWAY_CONTROLLER_NAME = 'portico.dev/gateway-controller';
/** Set on every namespace by the API server; standalone mode assumes it for namespaces without a manifest. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

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
export type IngressKind = 'Ingress' | 'IngressClass' | 'Service' | 'EndpointSlice' | 'Secret';
export type GatewayKind = 'GatewayClass' | 'Gateway' | 'HTTPRoute' | 'GRPCRoute' | 'ReferenceGrant' | 'Namespace';
export type RoutingKind = IngressKind | GatewayKind;
export const INGRESS_KINDS: readonly IngressKind[] = ['IngressClass', 'Ingress', 'Service', 'EndpointSlice', 'Secret'];
/** Read only where the Gateway API CRDs are installed (cluster mode), or from manifests. */
export const GATEWAY_KINDS: readonly GatewayKind[] = ['GatewayClass', 'Gateway', 'HTTPRoute', 'GRPCRoute', 'ReferenceGrant', 'Namespace'];
export const ROUTING_KINDS: readonly RoutingKind[] = [...INGRESS_KINDS, ...GATEWAY_KINDS];

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
