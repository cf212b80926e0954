// The resources the test API server serves: where each lives (group, version, plural),
// its scope, and the per-kind behaviour the real registry strategies have.

export interface ResourceKind {
  /** "" for the core group */
  group: string;
  version: string;
  /** e.g. "ingresses" */
  plural: string;
  singular: string;
  kind: string;
  namespaced: boolean;
  /** Has a /status subresource: writes to the main resource keep the stored status, and vice versa. */
  statusSubresource: boolean;
  /** What create resets .status to when the kind has a status subresource (the real strategies do this). */
  initialStatus?: () => Record<string, unknown>;
  /** PUT to a missing object creates it (the real strategies allow this for some kinds only). */
  createOnUpdate: boolean;
  /**
   * DELETE answers with the deleted object (the registry's ReturnDeletedObject); otherwise,
   * as for most kinds on a real server, with a Status of status "Success".
   */
  returnDeletedObject?: boolean;
  /** Field selectors beyond metadata.name and metadata.namespace, each mapped to the path it reads. */
  extraFields?: Record<string, string>;
  shortNames?: string[];
  /** Served only when its CustomResourceDefinitions are installed (FakeKubeApiServerOptions.withoutCrds). */
  crd?: boolean;
  /** Has a /scale subresource (an autoscaling/v1 Scale over spec.replicas), as Deployments and StatefulSets do. */
  scaleSubresource?: boolean;
  /** The registry's defaulting, run on every object a write stores (e.g. spec.replicas = 1). */
  defaults?: (obj: Record<string, unknown>) => void;
}

export const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch'];
export const STATUS_VERBS = ['get', 'patch', 'update'];

/** apps/v1 workloads: a spec without replicas means 1, as the real defaulting sets it. */
function defaultReplicas(obj: Record<string, unknown>): void {
  const spec = obj.spec;
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) obj.spec = { replicas: 1 };
  else if ((spec as Record<string, unknown>).replicas === undefined) obj.spec = { ...spec, replicas: 1 };
}

const coreEventFields: Record<string, string> = {
  'involvedObject.kind': 'involvedObject.kind',
  'involvedObject.namespace': 'involvedObject.namespace',
  'involvedObject.name': 'involvedObject.name',
  'involvedObject.uid': 'involvedObject.uid',
  'involvedObject.apiVersion': 'involvedObject.apiVersion',
  'involvedObject.resourceVersion': 'involvedObject.resourceVersion',
  'involvedObject.fieldPath': 'involvedObject.fieldPath',
  reason: 'reason',
  reportingComponent: 'reportingComponent',
  source: 'source.component',
  type: 'type',
};

export const KINDS: ResourceKind[] = [
  {
    group: 'networking.k8s.io', version: 'v1', plural: 'ingresses', singular: 'ingress', kind: 'Ingress', namespaced: true,
    statusSubresource: true, initialStatus: () => ({ loadBalancer: {} }), createOnUpdate: false, shortNames: ['ing'],
  },
  {
    group: 'networking.k8s.io', version: 'v1', plural: 'ingressclasses', singular: 'ingressclass', kind: 'IngressClass', namespaced: false,
    statusSubresource: false, createOnUpdate: false,
  },
  {
    group: '', version: 'v1', plural: 'services', singular: 'service', kind: 'Service', namespaced: true,
    statusSubresource: true, initialStatus: () => ({ loadBalancer: {} }), createOnUpdate: true, shortNames: ['svc'],
    returnDeletedObject: true,
  },
  {
    group: '', version: 'v1', plural: 'secrets', singular: 'secret', kind: 'Secret', namespaced: true,
    statusSubresource: false, createOnUpdate: false, extraFields: { type: 'type' },
  },
  {
    group: '', version: 'v1', plural: 'events', singular: 'event', kind: 'Event', namespaced: true,
    statusSubresource: false, createOnUpdate: true, extraFields: coreEventFields, shortNames: ['ev'],
  },
  {
    group: '', version: 'v1', plural: 'namespaces', singular: 'namespace', kind: 'Namespace', namespaced: false,
    statusSubresource: true, initialStatus: () => ({ phase: 'Active' }), createOnUpdate: false,
    extraFields: { 'status.phase': 'status.phase' }, shortNames: ['ns'],
  },
  {
    group: 'discovery.k8s.io', version: 'v1', plural: 'endpointslices', singular: 'endpointslice', kind: 'EndpointSlice', namespaced: true,
    statusSubresource: false, createOnUpdate: false,
  },
  {
    group: 'apps', version: 'v1', plural: 'deployments', singular: 'deployment', kind: 'Deployment', namespaced: true,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, shortNames: ['deploy'],
    scaleSubresource: true, defaults: defaultReplicas,
  },
  {
    group: 'apps', version: 'v1', plural: 'statefulsets', singular: 'statefulset', kind: 'StatefulSet', namespaced: true,
    statusSubresource: true, initialStatus: () => ({ replicas: 0, availableReplicas: 0 }), createOnUpdate: false, shortNames: ['sts'],
    scaleSubresource: true, defaults: defaultReplicas,
  },
  {
    group: 'coordination.k8s.io', version: 'v1', plural: 'leases', singular: 'lease', kind: 'Lease', namespaced: true,
    statusSubresource: false, createOnUpdate: true,
  },
  {
    group: 'events.k8s.io', version: 'v1', plural: 'events', singular: 'event', kind: 'Event', namespaced: true,
    statusSubresource: false, createOnUpdate: true, shortNames: ['ev'],
    extraFields: {
      'regarding.kind': 'regarding.kind',
      'regarding.namespace': 'regarding.namespace',
      'regarding.name': 'regarding.name',
      'regarding.uid': 'regarding.uid',
      'regarding.apiVersion': 'regarding.apiVersion',
      reason: 'reason',
      reportingController: 'reportingController',
      type: 'type',
    },
  },
  // Gateway API, as its standard-channel CRDs install it (a real cluster needs them applied).
  {
    group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gatewayclasses', singular: 'gatewayclass', kind: 'GatewayClass', namespaced: false,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, crd: true,
  },
  {
    group: 'gateway.networking.k8s.io', version: 'v1', plural: 'gateways', singular: 'gateway', kind: 'Gateway', namespaced: true,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, crd: true,
  },
  {
    group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', singular: 'httproute', kind: 'HTTPRoute', namespaced: true,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, crd: true,
  },
  {
    group: 'gateway.networking.k8s.io', version: 'v1', plural: 'grpcroutes', singular: 'grpcroute', kind: 'GRPCRoute', namespaced: true,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, crd: true,
  },
  {
    group: 'gateway.networking.k8s.io', version: 'v1beta1', plural: 'referencegrants', singular: 'referencegrant', kind: 'ReferenceGrant', namespaced: true,
    statusSubresource: false, createOnUpdate: false, crd: true,
  },
  // portico's own CRD (deploy/helm/portico/crds/): the status subresource every replica writes.
  {
    group: 'portico.dev', version: 'v1alpha1', plural: 'cacheinvalidations', singular: 'cacheinvalidation', kind: 'CacheInvalidation', namespaced: true,
    statusSubresource: true, initialStatus: () => ({}), createOnUpdate: false, crd: true, shortNames: ['cinv'],
  },
];

/** "v1" or "<group>/<version>" */
export function groupVersion(r: ResourceKind): string {
  return r.group ? `${r.group}/${r.version}` : r.version;
}

/** "ingresses.networking.k8s.io" or "services": how the real server names a resource in messages. */
export function qualifiedResource(r: ResourceKind): string {
  return r.group ? `${r.plural}.${r.group}` : r.plural;
}

/** "Ingress.networking.k8s.io" or "Service": the group kind used in Invalid messages. */
export function qualifiedKind(r: ResourceKind): string {
  return r.group ? `${r.kind}.${r.group}` : r.kind;
}

/** A stable id for a resource within the server: "networking.k8s.io/v1/ingresses". */
export function resourceId(r: ResourceKind): string {
  return `${groupVersion(r)}/${r.plural}`;
}

export function findByPath(group: string, version: string, plural: string): ResourceKind | undefined {
  return KINDS.find((r) => r.group === group && r.version === version && r.plural === plural);
}

/**
 * The resource for an object or a kind name. "Event" alone is the core v1 Event; an apiVersion
 * (or "events.k8s.io/v1/Event") picks the other one.
 */
export function findByKind(kind: string, apiVersion?: string): ResourceKind | undefined {
  let k = kind;
  let av = apiVersion;
  const slash = kind.lastIndexOf('/');
  if (slash > 0) {
    av = kind.slice(0, slash);
    k = kind.slice(slash + 1);
  }
  const matches = KINDS.filter((r) => r.kind === k || r.plural === k);
  if (av) return matches.find((r) => groupVersion(r) === av);
  return matches.find((r) => r.group === '') ?? matches[0];
}
