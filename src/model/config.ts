// What translation produces: plain, immutable data describing what to serve.
// Nothing here holds sockets, timers or closures; the routing and proxy layers
// turn it into a live RouteTable (see src/routing/table.ts).
import type {
  EndpointSlice,
  Gateway,
  GatewayClass,
  HTTPRoute,
  Ingress,
  IngressClass,
  Namespace,
  ObjectRef,
  ReferenceGrant,
  Secret,
  Service,
} from './k8s.ts';

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

export interface UpstreamAddress {
  /** IP address (or DNS name, for ExternalName Services when allowed). */
  readonly host: string;
  readonly port: number;
}

/** Why a backend cannot take traffic; the proxy answers 503 with this reason. */
export type BackendError = 'ServiceNotFound' | 'PortNotFound' | 'NoEndpoints' | 'ExternalNameDisabled' | 'InvalidBackend';

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
}

/** A policy attached to a route: the name of a middleware in src/middleware/registry.ts and its parsed config. */
export interface PolicyConfig {
  readonly name: string;
  readonly config: unknown;
}

export type MatchType = 'Exact' | 'Prefix';

export interface RouteConfig {
  /** Unique and stable: "ns/ingress|host|Type|path", or "ns/ingress|default" for a default backend. */
  readonly id: string;
  readonly ingress: { readonly namespace: string; readonly name: string };
  /** Lowercase host, "*.suffix" for a wildcard, or "" for a rule without host. */
  readonly host: string;
  /** As written in the Ingress ("/" for a default backend). */
  readonly path: string;
  /** ImplementationSpecific is served as Prefix. */
  readonly pathType: MatchType;
  readonly backend: BackendConfig;
  /** Policies from the Ingress' annotations, in the order they run. */
  readonly policies: readonly PolicyConfig[];
  /** The host has a certificate on this Ingress (spec.tls); drives the default HTTPS redirect. */
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

export interface RoutingConfig {
  /** Every served path rule, after conflicts were resolved; in a deterministic order. */
  readonly routes: readonly RouteConfig[];
  /** Catches what no rule matches (spec.defaultBackend of the oldest Ingress that has one). */
  readonly defaultBackend?: RouteConfig;
  /** Certificate per TLS host: exact lowercase host, or "*.suffix". */
  readonly certificates: ReadonlyMap<string, CertificateConfig>;
  /** Ingresses portico serves (by class), as "ns/name"; the leader writes their status. */
  readonly servedIngresses: readonly string[];
  /** Ingresses portico does not serve, as "ns/name", with why (a class of another controller, a typo...). */
  readonly ignoredIngresses: readonly IgnoredIngress[];
  readonly problems: readonly Problem[];
}

export interface IgnoredIngress {
  /** "ns/name" */
  readonly ingress: string;
  readonly reason: string;
}
