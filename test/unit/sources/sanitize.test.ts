import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { sanitize } from '../../../src/sources/sanitize.ts';
import { wireData } from '../../../src/translate/tls.ts';
import type { EndpointSlice, Ingress, IngressClass, Secret, Service } from '../../../src/model/k8s.ts';

const ingressRaw = () => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: {
    name: 'web',
    namespace: 'shop',
    uid: 'u-1',
    resourceVersion: '42',
    creationTimestamp: '2024-01-02T03:04:05Z',
    labels: { app: 'web' },
    annotations: { 'portico.dev/timeout': '5s', 'kubectl.kubernetes.io/last-applied-configuration': '{"huge":true}' },
    managedFields: [{ manager: 'kubectl' }],
  },
  spec: {
    ingressClassName: 'portico',
    defaultBackend: { service: { name: 'fallback', port: { number: 8080 } } },
    tls: [{ hosts: ['web.example.com'], secretName: 'web-tls' }],
    rules: [{ host: 'web.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } }] } }],
  },
  status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } },
});

describe('sanitize: recognized kinds', () => {
  test('an Ingress keeps what routing and status read, and drops the rest', () => {
    const { object, error, ignored } = sanitize(ingressRaw());
    assert.equal(error, undefined);
    assert.equal(ignored, undefined);
    assert.deepEqual(object as Ingress, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: {
        name: 'web',
        namespace: 'shop',
        uid: 'u-1',
        resourceVersion: '42',
        creationTimestamp: '2024-01-02T03:04:05Z',
        labels: { app: 'web' },
        annotations: { 'portico.dev/timeout': '5s' },
      },
      spec: {
        ingressClassName: 'portico',
        defaultBackend: { service: { name: 'fallback', port: { number: 8080 } } },
        tls: [{ hosts: ['web.example.com'], secretName: 'web-tls' }],
        rules: [{ host: 'web.example.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { name: 'http' } } } }] } }],
      },
      status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } },
    });
  });

  test('an IngressClass is cluster-scoped and loses spec.parameters', () => {
    const { object } = sanitize({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'portico', namespace: 'oops' },
      spec: { controller: 'portico.dev/ingress-controller', parameters: { kind: 'X', name: 'y' } },
    });
    assert.deepEqual(object as IngressClass, {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'IngressClass',
      metadata: { name: 'portico' },
      spec: { controller: 'portico.dev/ingress-controller' },
    });
  });

  test('a Service and an EndpointSlice keep ports, addresses and conditions', () => {
    const svc = sanitize({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { type: 'ClusterIP', clusterIP: '10.1.2.3', selector: { app: 'web' }, ports: [{ name: 'http', port: 80, targetPort: 'http', appProtocol: 'kubernetes.io/h2c' }] },
    }).object as Service;
    assert.deepEqual(svc.spec, { type: 'ClusterIP', clusterIP: '10.1.2.3', ports: [{ name: 'http', port: 80, targetPort: 'http', appProtocol: 'kubernetes.io/h2c' }] });
    const slice = sanitize({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-abc', labels: { 'kubernetes.io/service-name': 'web' } },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['10.0.0.5'], conditions: { ready: false, terminating: true }, nodeName: 'n1', deprecatedTopology: {} }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    }).object as EndpointSlice;
    assert.deepEqual(slice.endpoints, [{ addresses: ['10.0.0.5'], conditions: { ready: false, terminating: true }, nodeName: 'n1' }]);
    assert.deepEqual(slice.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
    assert.equal(slice.metadata.namespace, 'default');
  });

  test('namespace defaults to "default" for namespaced kinds', () => {
    for (const raw of [
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'a' } },
      { apiVersion: 'v1', kind: 'Service', metadata: { name: 'a', namespace: null } },
      { apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: 'a', namespace: '' } },
      { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'a' }, addressType: 'IPv4' },
    ]) {
      assert.equal(sanitize(raw).object?.metadata.namespace, 'default', raw.kind);
    }
  });

  test('null fields count as absent, as the API server treats them', () => {
    const { object, error } = sanitize({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'a', labels: null },
      spec: { rules: [{ host: null, http: { paths: [{ path: '/', backend: { service: { name: 's', port: { number: 80 } } } }] } }], tls: null },
    });
    assert.equal(error, undefined);
    assert.deepEqual((object as Ingress).spec, { rules: [{ http: { paths: [{ path: '/', backend: { service: { name: 's', port: { number: 80 } } } }] } }] });
  });
});

describe('sanitize: Secrets', () => {
  const tls = (extra: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/tls', metadata: { name: 'cert', namespace: 'shop' }, ...extra });

  test('values are kept decoded (stringData as given, data from base64), and only tls.crt, tls.key and ca.crt', () => {
    const { object } = sanitize(tls({ stringData: { 'tls.crt': 'CERT PEM', 'ca.crt': 'CA' }, data: { 'tls.key': Buffer.from('KEY PEM').toString('base64'), other: 'eA==' } }));
    const secret = object as Secret;
    assert.deepEqual(secret.stringData, { 'tls.crt': 'CERT PEM', 'tls.key': 'KEY PEM', 'ca.crt': 'CA' });
    assert.equal(secret.data, undefined, 'the wire form is not kept beside them');
    assert.equal(secret.type, 'kubernetes.io/tls');
    assert.deepEqual(wireData(secret), { 'tls.crt': Buffer.from('CERT PEM').toString('base64'), 'tls.key': Buffer.from('KEY PEM').toString('base64'), 'ca.crt': Buffer.from('CA').toString('base64') }, 'and read as the API serves it');
  });

  test('stringData wins over data for the same key', () => {
    const { object } = sanitize(tls({ stringData: { 'tls.crt': 'new' }, data: { 'tls.crt': Buffer.from('old').toString('base64') } }));
    assert.equal((object as Secret).stringData!['tls.crt'], 'new');
  });

  test('base64 data wrapped over several lines is accepted; invalid base64 is an error', () => {
    const wrapped = sanitize(tls({ data: { 'tls.crt': 'Q0VS\nVA==' } }));
    assert.equal((wrapped.object as Secret).stringData!['tls.crt'], 'CERT');
    const bad = sanitize(tls({ data: { 'tls.crt': 'not base64!' } }));
    assert.equal(bad.object, undefined);
    assert.match(bad.error!, /data\["tls\.crt"\]: must be base64/);
  });

  test('Secrets of other types are ignored', () => {
    assert.deepEqual(sanitize({ apiVersion: 'v1', kind: 'Secret', type: 'Opaque', metadata: { name: 'pw' }, data: { password: 'eA==' } }), { ignored: true });
    assert.deepEqual(sanitize({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pw' } }), { ignored: true });
  });
});

describe('sanitize: other kinds', () => {
  test('kinds portico does not read are ignored, not errors', () => {
    assert.deepEqual(sanitize({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x' }, spec: {} }), { ignored: true });
    assert.deepEqual(sanitize({ apiVersion: 'v1', kind: 'Endpoints', metadata: { name: 'x' } }), { ignored: true });
    // A same-named kind of another API group is somebody else's object.
    assert.deepEqual(sanitize({ apiVersion: 'serving.knative.dev/v1', kind: 'Service', metadata: { name: 'x' }, spec: 'whatever' }), { ignored: true });
  });

  test('removed API versions of known kinds are errors that name the replacement', () => {
    const { error } = sanitize({ apiVersion: 'extensions/v1beta1', kind: 'Ingress', metadata: { name: 'old' } });
    assert.match(error!, /extensions\/v1beta1 Ingress .*networking\.k8s\.io\/v1/);
  });
});

describe('sanitize: malformed objects', () => {
  const cases: [string, unknown, RegExp][] = [
    ['not an object', 'hello', /not a Kubernetes object/],
    ['no kind', { apiVersion: 'v1', metadata: { name: 'x' } }, /kind is required/],
    ['no apiVersion on a known kind', { kind: 'Service', metadata: { name: 'x' } }, /apiVersion is required/],
    ['no metadata', { apiVersion: 'v1', kind: 'Service' }, /^metadata: is required/],
    ['no metadata.name', { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'a' } }, /^metadata\.name: is required/],
    ['spec of the wrong type', { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' }, spec: 'nope' }, /^spec: must be an object/],
    ['rules not a list', { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' }, spec: { rules: { host: 'a' } } }, /^spec\.rules: must be a list/],
    [
      'host not a string',
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' }, spec: { rules: [{}, { host: 42 }] } },
      /^spec\.rules\[1\]\.host: must be a string, not 42/,
    ],
    [
      'path without backend',
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' }, spec: { rules: [{ http: { paths: [{ path: '/' }] } }] } },
      /^spec\.rules\[0\]\.http\.paths\[0\]\.backend: is required/,
    ],
    [
      // spec.tls is read before spec.rules (its hosts are shared with the rules'): the first mistake is still the one told.
      'mistakes in spec.tls and spec.rules',
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' }, spec: { tls: [{ hosts: [7] }], rules: [{ http: { paths: [{ path: '/' }] } }] } },
      /^spec\.tls\[0\]\.hosts\[0\]: must be a string/,
    ],
    ['annotation not a string', { apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'x', annotations: { 'ingressclass.kubernetes.io/is-default-class': true } } }, /must be a string, not true \(quote the value\)/],
    ['port out of range', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { ports: [{ port: 70000 }] } }, /^spec\.ports\[0\]\.port: must be between 1 and 65535/],
    ['port as a string', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { ports: [{ port: '80' }] } }, /^spec\.ports\[0\]\.port: must be an integer/],
    ['unknown Service type', { apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' }, spec: { type: 'Magic' } }, /^spec\.type: must be one of/],
    ['slice without addressType', { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'x' } }, /^addressType: is required/],
    ['endpoint without addresses', { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { name: 'x' }, addressType: 'IPv4', endpoints: [{}] }, /^endpoints\[0\]\.addresses: is required/],
  ];
  for (const [what, raw, reason] of cases) {
    test(what, () => {
      const result = sanitize(raw);
      assert.equal(result.object, undefined);
      assert.equal(result.ignored, undefined);
      assert.match(result.error ?? '', reason);
    });
  }

  test("an Ingress's spec.tls hosts are kept as written, those no rule names too", () => {
    const raw = ingressRaw();
    raw.spec.tls = [{ hosts: ['web.example.com', 'other.example.com'], secretName: 'web-tls' }];
    const { object } = sanitize(raw);
    assert.deepEqual((object as Ingress).spec!.tls, [{ hosts: ['web.example.com', 'other.example.com'], secretName: 'web-tls' }]);
  });

  test('a rejected object with a readable name says which object it was', () => {
    const result = sanitize({ apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x', namespace: 'ns' }, spec: 'nope' });
    assert.deepEqual(result.ref, { kind: 'Ingress', namespace: 'ns', name: 'x' });
  });
});

describe('sanitize: immutability', () => {
  test('the result is deeply frozen', () => {
    const ingress = sanitize(ingressRaw()).object as Ingress;
    assert.ok(Object.isFrozen(ingress));
    assert.ok(Object.isFrozen(ingress.metadata.labels));
    assert.ok(Object.isFrozen(ingress.spec!.rules![0]!.http!.paths[0]!.backend.service!.port));
    assert.throws(() => {
      (ingress.spec!.rules as unknown as unknown[]).push({});
    }, TypeError);
  });

  test('the result shares nothing with the input, and the input is left alone', () => {
    const raw = ingressRaw();
    const ingress = sanitize(raw).object as Ingress;
    raw.spec.rules[0]!.host = 'changed.example.com';
    raw.metadata.labels.app = 'changed';
    assert.equal(ingress.spec!.rules![0]!.host, 'web.example.com');
    assert.equal(ingress.metadata.labels!.app, 'web');
    assert.ok(!Object.isFrozen(raw));
    assert.ok('managedFields' in raw.metadata);
  });
});

describe('sanitize: parts that repeat are one shared frozen value', () => {
  const svc = (name: string, port: number) => sanitize({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop' }, spec: { ports: [{ name: 'http', port, targetPort: 8080 }] } }).object as Service;
  const ing = (name: string) =>
    sanitize({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name, namespace: 'shop' },
      spec: { rules: [{ host: `${name}.example`, http: { paths: ['/', '/api'].map((path) => ({ path, pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } })) } }] },
      status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } },
    }).object as Ingress;

  test('equal port lists of two Services are one list; a different one is not', () => {
    const a = svc('a', 80);
    const b = svc('b', 80);
    const c = svc('c', 81);
    assert.equal(a.spec!.ports, b.spec!.ports);
    assert.notEqual(a.spec!.ports, c.spec!.ports);
    assert.deepEqual(c.spec!.ports, [{ name: 'http', port: 81, targetPort: 8080 }]);
    assert.ok(Object.isFrozen(a.spec!.ports) && Object.isFrozen(a.spec!.ports![0]));
  });

  test('the paths of an Ingress that send to the same Service port share one backend, and Ingresses their status', () => {
    const one = ing('one');
    const two = ing('two');
    const [p1, p2] = one.spec!.rules![0]!.http!.paths;
    assert.equal(p1!.backend, p2!.backend);
    assert.deepEqual(p1!.backend, { service: { name: 'web', port: { number: 80 } } });
    assert.equal(one.status, two.status);
    assert.deepEqual(two.status, { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } });
    assert.ok(Object.isFrozen(p1!.backend.service!.port));
  });
});
