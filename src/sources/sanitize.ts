// Wire JSON (from the API server or a manifest file) -> the trimmed, frozen objects
// the store keeps. Only the fields routing and status need survive; everything else
// (managedFields, other Secret keys, last-applied annotations...) is dropped so memory
// holds only what routing reads. Objects come out deeply frozen: translation memoizes
// by object identity, so nothing may change an object once it is stored.
import {
  TLS_SECRET_TYPE,
  type Endpoint,
  type EndpointPort,
  type EndpointSlice,
  type Gateway,
  type GatewayClass,
  type HTTPIngressPath,
  type HTTPRoute,
  type GRPCRoute,
  type Ingress,
  type IngressBackend,
  type IngressClass,
  type IngressRule,
  type IngressTLS,
  type LoadBalancerIngress,
  type Namespace,
  type ObjectMeta,
  type PathType,
  type ReferenceGrant,
  type RoutingKind,
  type Secret,
  type Service,
  type ServicePort,
} from '../model/k8s.ts';

import {
  Invalid,
  fail,
  isPlainObject,
  optObject,
  reqObject,
  optArray,
  optString,
  reqString,
  optSharedString,
  reqSharedString,
  optBool,
  optInt,
  optPort,
  reqPort,
  optStringList,
  optStringMap,
  describe,
  compact,
  exactObject,
  deepFreeze,
  shared,
  type Json,
} from './sanitize-json.ts';
import { internString } from '../util/flat-string.ts';
import { sanitizeGateway, sanitizeGatewayClass, sanitizeGRPCRoute, sanitizeHTTPRoute, sanitizeNamespace, sanitizeReferenceGrant } from './sanitize-gateway.ts';

export type RoutingObject = Ingress | IngressClass | Service | EndpointSlice | Secret | GatewayClass | Gateway | HTTPRoute | GRPCRoute | ReferenceGrant | Namespace;

export interface SanitizeResult {
  /** The object to store, when it is one of the kinds portico routes from and well-formed. */
  object?: RoutingObject;
  /** Set for kinds portico does not read (Deployments, ConfigMaps, non-TLS Secrets...): not an error. */
  ignored?: true;
  /** Why a known kind is malformed: "spec.rules[0].host: must be a string". */
  error?: string;
  /** Which object failed, when its kind and name could be read (lets a source keep its last good version). */
  ref?: { kind: RoutingKind; namespace?: string; name: string };
}

/** apiVersion of each kind portico reads. */
export const ROUTING_API_VERSIONS: Readonly<Record<RoutingKind, string>> = {
  Ingress: 'networking.k8s.io/v1',
  IngressClass: 'networking.k8s.io/v1',
  Service: 'v1',
  EndpointSlice: 'discovery.k8s.io/v1',
  Secret: 'v1',
  GatewayClass: 'gateway.networking.k8s.io/v1',
  Gateway: 'gateway.networking.k8s.io/v1',
  HTTPRoute: 'gateway.networking.k8s.io/v1',
  GRPCRoute: 'gateway.networking.k8s.io/v1',
  ReferenceGrant: 'gateway.networking.k8s.io/v1beta1',
  Namespace: 'v1',
};

/** Other versions still served by clusters, read as the main one (same fields for what portico reads). */
const ALSO_ACCEPTED: Readonly<Record<string, readonly string[]>> = {
  GatewayClass: ['gateway.networking.k8s.io/v1beta1'],
  Gateway: ['gateway.networking.k8s.io/v1beta1'],
  HTTPRoute: ['gateway.networking.k8s.io/v1beta1'],
  GRPCRoute: ['gateway.networking.k8s.io/v1alpha2'],
  ReferenceGrant: ['gateway.networking.k8s.io/v1'],
};

/** API versions Kubernetes no longer serves: reported, since silently ignoring them would hide routes. */
const REMOVED_API_VERSIONS: Readonly<Record<string, readonly string[]>> = {
  Ingress: ['extensions/v1beta1', 'networking.k8s.io/v1beta1'],
  IngressClass: ['networking.k8s.io/v1beta1'],
  EndpointSlice: ['discovery.k8s.io/v1beta1'],
};

const NAMESPACED: ReadonlySet<string> = new Set(['Ingress', 'Service', 'EndpointSlice', 'Secret', 'Gateway', 'HTTPRoute', 'GRPCRoute', 'ReferenceGrant']);

/** Huge and useless for routing; for a Secret it would even hold a second copy of every key. */
const DROPPED_ANNOTATIONS: ReadonlySet<string> = new Set(['kubectl.kubernetes.io/last-applied-configuration']);

// ca.crt: the CA an upstream-ca-secret policy verifies pods against (cert-manager writes it in TLS Secrets).
const TLS_KEYS = ['tls.crt', 'tls.key', 'ca.crt'] as const;

// ---- common ----

function sanitizeMeta(raw: unknown, kind: RoutingKind): ObjectMeta {
  const m = reqObject(raw, 'metadata');
  const namespaced = NAMESPACED.has(kind);
  return compact<ObjectMeta>({
    name: reqString(m.name, 'metadata.name'),
    // Cluster-scoped kinds have no namespace, whatever a manifest says.
    namespace: namespaced ? (optSharedString(m.namespace, 'metadata.namespace') || 'default') : undefined,
    uid: optString(m.uid, 'metadata.uid'),
    resourceVersion: optString(m.resourceVersion, 'metadata.resourceVersion'),
    generation: optInt(m.generation, 'metadata.generation'),
    creationTimestamp: optTimestamp(m.creationTimestamp, 'metadata.creationTimestamp'),
    labels: optStringMap(m.labels, 'metadata.labels', undefined, true),
    annotations: optStringMap(m.annotations, 'metadata.annotations', DROPPED_ANNOTATIONS),
  });
}

/** Shared: the objects of one apply (a helm install, a directory of manifests) are created in the same second. */
function optTimestamp(v: unknown, field: string): string | undefined {
  if (v instanceof Date) return internString(v.toISOString()); // YAML 1.1 loaders turn unquoted timestamps into dates
  return optSharedString(v, field);
}

function sanitizeLoadBalancer(raw: unknown, field: string): { loadBalancer?: { ingress?: LoadBalancerIngress[] } } | undefined {
  const status = optObject(raw, field);
  const lb = optObject(status?.loadBalancer, `${field}.loadBalancer`);
  const entries = optArray(lb?.ingress, `${field}.loadBalancer.ingress`);
  if (!entries) return undefined;
  // The same on every Ingress portico writes it to: one copy for all.
  return shared('status', {
    loadBalancer: {
      ingress: entries.map((e, i) => {
        const f = `${field}.loadBalancer.ingress[${i}]`;
        const o = reqObject(e, f);
        return compact<LoadBalancerIngress>({
          ip: optString(o.ip, `${f}.ip`),
          hostname: optString(o.hostname, `${f}.hostname`),
          ports: optArray(o.ports, `${f}.ports`)?.map((p, j) => {
            const pf = `${f}.ports[${j}]`;
            const po = reqObject(p, pf);
            return compact({
              port: reqPort(po.port, `${pf}.port`),
              protocol: optSharedString(po.protocol, `${pf}.protocol`) ?? 'TCP',
              error: optString(po.error, `${pf}.error`),
            });
          }),
        });
      }),
    },
  });
}

/** A port list shared with every equal one: the Services (and the slices) of a cluster use a few shapes. */
function sharedList<T>(what: string, list: T[] | undefined): T[] | undefined {
  return list === undefined ? undefined : shared(what, list);
}

// ---- networking.k8s.io/v1 ----

function sanitizeBackend(raw: unknown, field: string): IngressBackend {
  const b = reqObject(raw, field);
  const svc = optObject(b.service, `${field}.service`);
  const res = optObject(b.resource, `${field}.resource`);
  const port = optObject(svc?.port, `${field}.service.port`);
  // Paths of one Ingress, and Ingresses, often send to the same Service port.
  return shared('backend', compact<IngressBackend>({
    service: svc
      ? compact({
          name: reqSharedString(svc.name, `${field}.service.name`),
          port: port
            ? compact({ number: optPort(port.number, `${field}.service.port.number`), name: optSharedString(port.name, `${field}.service.port.name`) })
            : undefined,
        })
      : undefined,
    resource: res
      ? compact({
          apiGroup: optString(res.apiGroup, `${field}.resource.apiGroup`),
          kind: reqString(res.kind, `${field}.resource.kind`),
          name: reqString(res.name, `${field}.resource.name`),
        })
      : undefined,
  }));
}

function sanitizePath(raw: unknown, field: string): HTTPIngressPath {
  const p = reqObject(raw, field);
  return compact<HTTPIngressPath>({
    path: optSharedString(p.path, `${field}.path`),
    // Any string: translation reports an unknown pathType against the Ingress, with its field.
    pathType: optSharedString(p.pathType, `${field}.pathType`) as PathType | undefined,
    backend: sanitizeBackend(p.backend, `${field}.backend`),
  });
}

function sanitizeRule(raw: unknown, field: string): IngressRule {
  const r = reqObject(raw, field);
  const http = optObject(r.http, `${field}.http`);
  const paths = http ? optArray(http.paths, `${field}.http.paths`) ?? fail(`${field}.http.paths`, 'is required') : undefined;
  return compact<IngressRule>({
    host: optString(r.host, `${field}.host`),
    http: paths ? { paths: paths.map((p, i) => sanitizePath(p, `${field}.http.paths[${i}]`)) } : undefined,
  });
}

/**
 * The hosts of spec.tls as the very strings of the rules that name them (cert-manager's
 * Ingresses list each host in both): one copy of each, where each was read twice
 * (0.8 MB at 20,000 TLS hosts). Equal strings, so nothing that reads them sees a difference.
 */
function tlsHostsOf(hosts: string[] | undefined, rules: readonly IngressRule[] | undefined): string[] | undefined {
  if (hosts === undefined || rules === undefined) return hosts;
  return hosts.map((host) => rules.find((rule) => rule.host === host)?.host ?? host);
}

function sanitizeIngress(o: Json, metadata: ObjectMeta): Ingress {
  const spec = optObject(o.spec, 'spec');
  return compact<Ingress>({
    apiVersion: ROUTING_API_VERSIONS.Ingress,
    kind: 'Ingress',
    metadata,
    spec: spec ? sanitizeIngressSpec(spec) : undefined,
    status: sanitizeLoadBalancer(o.status, 'status'),
  });
}

function sanitizeIngressSpec(spec: Json): NonNullable<Ingress['spec']> {
  // Fields in this order, so that the first mistake reported is the same as ever.
  const ingressClassName = optSharedString(spec.ingressClassName, 'spec.ingressClassName');
  const defaultBackend = spec.defaultBackend == null ? undefined : sanitizeBackend(spec.defaultBackend, 'spec.defaultBackend');
  const tls = optArray(spec.tls, 'spec.tls')?.map((t, i) => {
    const entry = reqObject(t, `spec.tls[${i}]`);
    return { hosts: optStringList(entry.hosts, `spec.tls[${i}].hosts`), secretName: optString(entry.secretName, `spec.tls[${i}].secretName`) };
  });
  const rules = optArray(spec.rules, 'spec.rules')?.map((r, i) => sanitizeRule(r, `spec.rules[${i}]`));
  return compact<NonNullable<Ingress['spec']>>({
    ingressClassName,
    defaultBackend,
    tls: tls?.map((entry) => compact<IngressTLS>({ hosts: tlsHostsOf(entry.hosts, rules), secretName: entry.secretName })),
    rules,
  });
}

function sanitizeIngressClass(o: Json, metadata: ObjectMeta): IngressClass {
  const spec = optObject(o.spec, 'spec');
  return compact<IngressClass>({
    apiVersion: ROUTING_API_VERSIONS.IngressClass,
    kind: 'IngressClass',
    metadata,
    // spec.parameters is for other controllers' configuration; portico does not read it.
    spec: spec ? compact({ controller: optString(spec.controller, 'spec.controller') }) : undefined,
  });
}

// ---- core/v1 ----

const SERVICE_TYPES: ReadonlySet<string> = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);

function sanitizeService(o: Json, metadata: ObjectMeta): Service {
  const spec = optObject(o.spec, 'spec');
  const type = optSharedString(spec?.type, 'spec.type');
  if (type !== undefined && !SERVICE_TYPES.has(type)) fail('spec.type', `must be one of ClusterIP, NodePort, LoadBalancer, ExternalName, not ${describe(type)}`);
  return compact<Service>({
    apiVersion: ROUTING_API_VERSIONS.Service,
    kind: 'Service',
    metadata,
    spec: spec
      ? compact({
          type: type as NonNullable<Service['spec']>['type'],
          clusterIP: optString(spec.clusterIP, 'spec.clusterIP'),
          externalName: optString(spec.externalName, 'spec.externalName'),
          ports: sharedList('service ports', optArray(spec.ports, 'spec.ports')?.map((p, i) => {
            const f = `spec.ports[${i}]`;
            const port = reqObject(p, f);
            const target = port.targetPort;
            return compact<ServicePort>({
              name: optSharedString(port.name, `${f}.name`),
              protocol: optSharedString(port.protocol, `${f}.protocol`),
              port: reqPort(port.port, `${f}.port`),
              targetPort: typeof target === 'string' ? optSharedString(target, `${f}.targetPort`) : optPort(target, `${f}.targetPort`),
              appProtocol: optSharedString(port.appProtocol, `${f}.appProtocol`),
            });
          })),
        })
      : undefined,
    status: sanitizeLoadBalancer(o.status, 'status'),
  });
}

/** Base64 as the API server accepts it (Go's decoder skips line breaks). */
function base64Value(v: unknown, field: string): string | undefined {
  const s = optString(v, field);
  if (s === undefined) return undefined;
  const clean = s.replace(/[\r\n]/g, '');
  if (clean.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) fail(field, 'must be base64 (use stringData for plain text)');
  return clean;
}

/**
 * A TLS Secret's values, decoded (PEM text), in stringData: the certificate config and the
 * TLS layer use these very strings, where keeping the wire's base64 as well held each PEM
 * twice (10 MB at 10,000 certificates). wireData (translate/tls.ts) encodes them again
 * for what reads a Secret as the API serves it.
 */
function sanitizeSecret(o: Json, metadata: ObjectMeta): Secret {
  const data = optObject(o.data, 'data');
  const stringData = optObject(o.stringData, 'stringData');
  const keys: string[] = [];
  const values: string[] = [];
  for (const key of TLS_KEYS) {
    // stringData wins over data, as when the API server merges them on write.
    const plain = optString(stringData?.[key], `stringData[${JSON.stringify(key)}]`);
    const encoded = plain === undefined ? base64Value(data?.[key], `data[${JSON.stringify(key)}]`) : undefined;
    const value = plain ?? (encoded === undefined ? undefined : Buffer.from(encoded, 'base64').toString('utf8'));
    if (value !== undefined) {
      keys.push(key);
      values.push(value);
    }
  }
  return { apiVersion: ROUTING_API_VERSIONS.Secret, kind: 'Secret', metadata, type: TLS_SECRET_TYPE, stringData: exactObject(keys, values) as Record<string, string> };
}

// ---- discovery.k8s.io/v1 ----

const ADDRESS_TYPES: ReadonlySet<string> = new Set(['IPv4', 'IPv6', 'FQDN']);

type Conditions = NonNullable<Endpoint['conditions']>;
/** The 27 possible conditions objects, made once and frozen: 50,000 endpoints share a handful. */
const CONDITIONS = new Map<string, Conditions>();

function sharedConditions(ready: boolean | undefined, serving: boolean | undefined, terminating: boolean | undefined): Conditions {
  const key = `${ready} ${serving} ${terminating}`;
  let shared = CONDITIONS.get(key);
  if (shared === undefined) CONDITIONS.set(key, (shared = Object.freeze(compact<Conditions>({ ready, serving, terminating }))));
  return shared;
}

function sanitizeEndpoint(raw: unknown, field: string): Endpoint {
  const e = reqObject(raw, field);
  const conditions = optObject(e.conditions, `${field}.conditions`);
  const ref = optObject(e.targetRef, `${field}.targetRef`);
  return compact<Endpoint>({
    addresses: optStringList(e.addresses, `${field}.addresses`) ?? fail(`${field}.addresses`, 'is required'),
    conditions: conditions
      ? sharedConditions(
          optBool(conditions.ready, `${field}.conditions.ready`),
          optBool(conditions.serving, `${field}.conditions.serving`),
          optBool(conditions.terminating, `${field}.conditions.terminating`),
        )
      : undefined,
    hostname: optString(e.hostname, `${field}.hostname`),
    nodeName: optSharedString(e.nodeName, `${field}.nodeName`),
    zone: optSharedString(e.zone, `${field}.zone`),
    targetRef: ref
      ? compact({
          kind: optSharedString(ref.kind, `${field}.targetRef.kind`),
          namespace: optSharedString(ref.namespace, `${field}.targetRef.namespace`),
          name: optString(ref.name, `${field}.targetRef.name`),
          uid: optString(ref.uid, `${field}.targetRef.uid`),
        })
      : undefined,
  });
}

function sanitizeEndpointSlice(o: Json, metadata: ObjectMeta): EndpointSlice {
  const addressType = reqSharedString(o.addressType, 'addressType');
  if (!ADDRESS_TYPES.has(addressType)) fail('addressType', `must be IPv4, IPv6 or FQDN, not ${describe(addressType)}`);
  return compact<EndpointSlice>({
    apiVersion: ROUTING_API_VERSIONS.EndpointSlice,
    kind: 'EndpointSlice',
    metadata,
    addressType: addressType as EndpointSlice['addressType'],
    endpoints: optArray(o.endpoints, 'endpoints')?.map((e, i) => sanitizeEndpoint(e, `endpoints[${i}]`)),
    ports: sharedList('slice ports', optArray(o.ports, 'ports')?.map((p, i) => {
      const f = `ports[${i}]`;
      const port = reqObject(p, f);
      return compact<EndpointPort>({
        name: optSharedString(port.name, `${f}.name`),
        port: optPort(port.port, `${f}.port`),
        protocol: optSharedString(port.protocol, `${f}.protocol`),
        appProtocol: optSharedString(port.appProtocol, `${f}.appProtocol`),
      });
    })),
  });
}

const SANITIZERS: Record<RoutingKind, (o: Json, metadata: ObjectMeta) => RoutingObject> = {
  Ingress: sanitizeIngress,
  IngressClass: sanitizeIngressClass,
  Service: sanitizeService,
  EndpointSlice: sanitizeEndpointSlice,
  Secret: sanitizeSecret,
  GatewayClass: sanitizeGatewayClass,
  Gateway: sanitizeGateway,
  HTTPRoute: sanitizeHTTPRoute,
  GRPCRoute: sanitizeGRPCRoute,
  ReferenceGrant: sanitizeReferenceGrant,
  Namespace: sanitizeNamespace,
};

function routingKindOf(kind: string): RoutingKind | undefined {
  return Object.hasOwn(ROUTING_API_VERSIONS, kind) ? (kind as RoutingKind) : undefined;
}

/** Recognizes, validates, trims and freezes one object. Never throws. */
export function sanitize(raw: unknown): SanitizeResult {
  if (!isPlainObject(raw)) return { error: `not a Kubernetes object: expected a mapping, got ${describe(raw)}` };
  const { apiVersion, kind: kindName } = raw;
  if (typeof kindName !== 'string' || kindName === '') {
    return { error: typeof apiVersion === 'string' ? 'kind is required' : 'not a Kubernetes object: apiVersion and kind are required' };
  }
  const kind = routingKindOf(kindName);
  if (!kind) return { ignored: true };
  if (apiVersion !== ROUTING_API_VERSIONS[kind] && !(typeof apiVersion === 'string' && ALSO_ACCEPTED[kind]?.includes(apiVersion))) {
    if (typeof apiVersion !== 'string' || apiVersion === '') return { error: `apiVersion is required (${ROUTING_API_VERSIONS[kind]} for ${kind})` };
    if (REMOVED_API_VERSIONS[kind]?.includes(apiVersion)) {
      return { error: `${apiVersion} ${kind} is no longer served by Kubernetes; use apiVersion ${ROUTING_API_VERSIONS[kind]}` };
    }
    return { ignored: true }; // a same-named kind of another API group (a Knative Service...)
  }
  // Only TLS Secrets matter; cluster mode does not even list the others.
  if (kind === 'Secret' && raw.type !== TLS_SECRET_TYPE) return { ignored: true };

  let metadata: ObjectMeta;
  try {
    metadata = sanitizeMeta(raw.metadata, kind);
  } catch (err) {
    if (err instanceof Invalid) return { error: err.message };
    throw err;
  }
  const ref = compact({ kind, namespace: metadata.namespace, name: metadata.name });
  try {
    return { object: deepFreeze(SANITIZERS[kind](raw, metadata)) };
  } catch (err) {
    if (err instanceof Invalid) return { error: err.message, ref };
    throw err;
  }
}
