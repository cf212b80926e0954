// Literal Kubernetes objects and snapshots for translation tests.
import { generate } from 'selfsigned';
import type { Snapshot, TranslateOptions } from '../../../src/model/config.ts';
import { CONTROLLER_NAME } from '../../../src/model/config.ts';
import {
  SERVICE_NAME_LABEL,
  keyOf,
  type EndpointSlice,
  type Ingress,
  type IngressBackend,
  type IngressClass,
  type KubeObject,
  type RoutingKind,
  type Secret,
  type Service,
  type ServicePort,
} from '../../../src/model/k8s.ts';
import type { ObjectChange } from '../../../src/sources/store.ts';

export const OPTIONS: TranslateOptions = { ingressClass: 'portico', controllerName: CONTROLLER_NAME, allowExternalName: false };

/** Builds a Snapshot, with the endpointSlicesByService index, from a list of objects. */
export function snapshotOf(objects: readonly KubeObject[]): Snapshot {
  const ingressClasses = new Map<string, IngressClass>();
  const ingresses = new Map<string, Ingress>();
  const services = new Map<string, Service>();
  const endpointSlices = new Map<string, EndpointSlice>();
  const endpointSlicesByService = new Map<string, Map<string, EndpointSlice>>();
  const secrets = new Map<string, Secret>();
  const gatewayObjects = { GatewayClass: new Map(), Gateway: new Map(), HTTPRoute: new Map(), GRPCRoute: new Map(), ReferenceGrant: new Map(), Namespace: new Map() };
  for (const obj of objects) {
    const key = keyOf(obj);
    switch (obj.kind) {
      case 'IngressClass': ingressClasses.set(key, obj as IngressClass); break;
      case 'Ingress': ingresses.set(key, obj as Ingress); break;
      case 'Service': services.set(key, obj as Service); break;
      case 'Secret': secrets.set(key, obj as Secret); break;
      case 'EndpointSlice': {
        const slice = obj as EndpointSlice;
        endpointSlices.set(key, slice);
        const svc = slice.metadata.labels?.[SERVICE_NAME_LABEL];
        if (svc) {
          const svcKey = `${slice.metadata.namespace}/${svc}`;
          let byName = endpointSlicesByService.get(svcKey);
          if (!byName) endpointSlicesByService.set(svcKey, (byName = new Map()));
          byName.set(key, slice);
        }
        break;
      }
      case 'GatewayClass': case 'Gateway': case 'HTTPRoute': case 'GRPCRoute': case 'ReferenceGrant': case 'Namespace':
        gatewayObjects[obj.kind].set(key, obj as never);
        break;
      default: throw new Error(`unexpected kind ${obj.kind}`);
    }
  }
  const g = gatewayObjects;
  return { ingressClasses, ingresses, services, endpointSlices, endpointSlicesByService, secrets, gatewayClasses: g.GatewayClass, gateways: g.Gateway, httpRoutes: g.HTTPRoute, grpcRoutes: g.GRPCRoute, referenceGrants: g.ReferenceGrant, namespaces: g.Namespace };
}

export function ingressClass(name: string, opts: { controller?: string; isDefault?: boolean } = {}): IngressClass {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'IngressClass',
    metadata: { name, ...(opts.isDefault ? { annotations: { 'ingressclass.kubernetes.io/is-default-class': 'true' } } : {}) },
    spec: { controller: opts.controller ?? CONTROLLER_NAME },
  };
}

export function svcBackend(name: string, port: number | string = 80): IngressBackend {
  return { service: { name, port: typeof port === 'number' ? { number: port } : { name: port } } };
}

export type IngressSpec = NonNullable<Ingress['spec']>;

export function ingress(
  name: string,
  spec: IngressSpec,
  meta: { namespace?: string; annotations?: Record<string, string>; created?: string; noClass?: boolean } = {},
): Ingress {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name,
      namespace: meta.namespace ?? 'default',
      ...(meta.annotations ? { annotations: meta.annotations } : {}),
      ...(meta.created ? { creationTimestamp: meta.created } : {}),
    },
    spec: meta.noClass || spec.ingressClassName !== undefined ? spec : { ingressClassName: 'portico', ...spec },
  };
}

/** An Ingress with one rule: host, and paths given as [path, service, port?, pathType?]. */
export function simpleIngress(
  name: string,
  host: string | undefined,
  paths: [path: string, service: string, port?: number | string, pathType?: string][],
  meta: Parameters<typeof ingress>[2] = {},
): Ingress {
  return ingress(
    name,
    {
      rules: [
        {
          ...(host !== undefined ? { host } : {}),
          http: { paths: paths.map(([path, service, port, pathType]) => ({ path, pathType: (pathType ?? 'Prefix') as 'Prefix', backend: svcBackend(service, port) })) },
        },
      ],
    },
    meta,
  );
}

export function service(name: string, ports: ServicePort[] = [{ name: 'http', port: 80 }], namespace = 'default', extra: Partial<NonNullable<Service['spec']>> = {}): Service {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { ports, ...extra } };
}

export function slice(
  name: string,
  serviceName: string,
  endpoints: { ip: string; ready?: boolean }[],
  ports: { name?: string; port?: number }[] = [{ name: 'http', port: 8080 }],
  opts: { namespace?: string; addressType?: EndpointSlice['addressType'] } = {},
): EndpointSlice {
  return {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace: opts.namespace ?? 'default', labels: { [SERVICE_NAME_LABEL]: serviceName } },
    addressType: opts.addressType ?? 'IPv4',
    ports,
    endpoints: endpoints.map((e) => ({ addresses: [e.ip], ...(e.ready === undefined ? {} : { conditions: { ready: e.ready } }) })),
  };
}

export function tlsSecret(name: string, cert: string, key: string, opts: { namespace?: string; encoding?: 'data' | 'stringData'; type?: string } = {}): Secret {
  const values = { 'tls.crt': cert, 'tls.key': key };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace: opts.namespace ?? 'default' },
    type: opts.type ?? 'kubernetes.io/tls',
    ...(opts.encoding === 'data'
      ? { data: Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) }
      : { stringData: values }),
  };
}

export interface TestCert {
  cert: string;
  key: string;
}

export interface TestCerts {
  /** CN and SAN foo.example.com */
  foo: TestCert;
  /** SAN *.example.com */
  wildcard: TestCert;
  /** SAN bar.example.com */
  bar: TestCert;
}

let certs: Promise<TestCerts> | undefined;

async function makeCert(...names: string[]): Promise<TestCert> {
  const pems = await generate([{ name: 'commonName', value: names[0]! }], {
    keyType: 'ec',
    curve: 'P-256',
    extensions: [{ name: 'subjectAltName', altNames: names.map((value) => ({ type: 2 as const, value })) }],
  });
  return { cert: pems.cert, key: pems.private };
}

/** Generated once per test file. */
export function testCerts(): Promise<TestCerts> {
  certs ??= (async () => ({
    foo: await makeCert('foo.example.com'),
    wildcard: await makeCert('*.example.com'),
    bar: await makeCert('bar.example.com'),
  }))();
  return certs;
}

import type { RoutingConfig } from '../../../src/model/config.ts';
import { translate } from '../../../src/translate/index.ts';

export function run(objects: readonly KubeObject[], options: Partial<TranslateOptions> = {}): RoutingConfig {
  return translate(snapshotOf(objects), { ...OPTIONS, ...options });
}

/** Problems as one line each: "Ingress default/web error ServiceNotFound: message". */
export function problemLines(config: RoutingConfig): string[] {
  return config.problems.map((p) => `${p.object.kind} ${p.object.namespace ? p.object.namespace + '/' : ''}${p.object.name} ${p.severity} ${p.reason}: ${p.message}`);
}

/** Routes as "host|Type|path -> backend key [error]". */
export function routeLines(config: RoutingConfig): string[] {
  return config.routes.map((r) => `${r.host}|${r.pathType}|${r.path} -> ${r.backend.key}${r.backend.error ? ' ' + r.backend.error : ''}`);
}

/** What changed between two object sets (any keys), as the store reports it. */
export function changesBetween(before: ReadonlyMap<string, KubeObject>, after: ReadonlyMap<string, KubeObject>): ObjectChange[] {
  const out: ObjectChange[] = [];
  for (const id of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(id);
    const b = after.get(id);
    if (a === b) continue;
    const obj = (b ?? a)!;
    out.push({ type: a === undefined ? 'added' : b === undefined ? 'deleted' : 'updated', kind: obj.kind as RoutingKind, key: keyOf(obj) });
  }
  return out;
}

/** One step of a change sequence: a copy of `objects` with `change` applied, the changes between them, and its snapshot. */
export function applyStep(objects: ReadonlyMap<string, KubeObject>, change: (objects: Map<string, KubeObject>) => void) {
  const next = new Map(objects);
  change(next);
  return { next, changes: changesBetween(objects, next), snapshot: snapshotOf([...next.values()]) };
}
