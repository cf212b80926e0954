import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { ingress, ingressClass, problemLines, run, service, simpleIngress, slice } from './fixtures.ts';

const cls = ingressClass('portico');

function backendOf(objects: KubeObject[], port: number | string = 80, options = {}) {
  const config = run([cls, simpleIngress('site', 'a.com', [['/', 'web', port]]), ...objects], options);
  assert.equal(config.routes.length, 1, 'a route with a backend error is still a route');
  return { backend: config.routes[0]!.backend, problems: problemLines(config) };
}

describe('backends', () => {
  test('a numbered port resolves by Service port number, to the slice port of the same name', () => {
    const { backend, problems } = backendOf([
      service('web', [{ name: 'metrics', port: 9090 }, { name: 'http', port: 80, appProtocol: 'kubernetes.io/h2c' }]),
      slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ name: 'metrics', port: 9999 }, { name: 'http', port: 8080 }]),
    ]);
    assert.deepEqual(backend, {
      key: 'default/web:80',
      namespace: 'default',
      service: 'web',
      port: '80',
      addresses: [{ host: '10.0.0.1', port: 8080 }],
      appProtocol: 'kubernetes.io/h2c',
    });
    assert.deepEqual(problems, []);
  });

  test('a named port resolves by Service port name', () => {
    const { backend } = backendOf(
      [service('web', [{ name: 'http', port: 80 }, { name: 'admin', port: 81 }]), slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ name: 'http', port: 8080 }, { name: 'admin', port: 8081 }])],
      'admin',
    );
    assert.equal(backend.key, 'default/web:admin');
    assert.equal(backend.port, 'admin');
    assert.deepEqual(backend.addresses, [{ host: '10.0.0.1', port: 8081 }]);
  });

  test('an unnamed Service port matches an unnamed slice port', () => {
    const { backend } = backendOf([service('web', [{ port: 80 }]), slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ port: 8080 }])]);
    assert.deepEqual(backend.addresses, [{ host: '10.0.0.1', port: 8080 }]);
    const { backend: named } = backendOf([service('web', [{ name: '', port: 80 }]), slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ name: '', port: 8080 }])]);
    assert.deepEqual(named.addresses, [{ host: '10.0.0.1', port: 8080 }]);
  });

  test('slice ports without a number are skipped', () => {
    const { backend, problems } = backendOf([service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ name: 'http' }])]);
    assert.equal(backend.error, 'NoEndpoints');
    assert.equal(problems.length, 1);
  });

  test('not-ready endpoints are left out; absent ready counts as ready', () => {
    const { backend } = backendOf([
      service('web'),
      slice('web-1', 'web', [{ ip: '10.0.0.3', ready: false }, { ip: '10.0.0.2' }, { ip: '10.0.0.1', ready: true }]),
    ]);
    assert.deepEqual(backend.addresses, [
      { host: '10.0.0.1', port: 8080 },
      { host: '10.0.0.2', port: 8080 },
    ]);
  });

  test('addresses from several slices are merged, deduplicated and sorted; FQDN slices and other Services are ignored', () => {
    const { backend } = backendOf([
      service('web'),
      slice('web-b', 'web', [{ ip: '10.0.0.9' }, { ip: '10.0.0.1' }]),
      slice('web-a', 'web', [{ ip: '10.0.0.1' }, { ip: '10.0.0.5' }]),
      slice('web-c', 'web', [{ ip: '10.0.0.5' }], [{ name: 'http', port: 9000 }]),
      slice('web-fqdn', 'web', [{ ip: 'pod.example.com' }], undefined, { addressType: 'FQDN' }),
      slice('web-other-ns', 'web', [{ ip: '10.9.9.9' }], undefined, { namespace: 'other' }),
      slice('api-1', 'api', [{ ip: '10.8.8.8' }]),
    ]);
    assert.deepEqual(backend.addresses, [
      { host: '10.0.0.1', port: 8080 },
      { host: '10.0.0.5', port: 8080 },
      { host: '10.0.0.5', port: 9000 },
      { host: '10.0.0.9', port: 8080 },
    ]);
  });

  test('IPv6 slices are used', () => {
    const { backend } = backendOf([service('web'), slice('web-1', 'web', [{ ip: 'fd00::1' }], undefined, { addressType: 'IPv6' })]);
    assert.deepEqual(backend.addresses, [{ host: 'fd00::1', port: 8080 }]);
  });

  test('Service not found', () => {
    const { backend, problems } = backendOf([]);
    assert.deepEqual(backend, { key: 'default/web:80', namespace: 'default', service: 'web', port: '80', addresses: [], error: 'ServiceNotFound' });
    assert.deepEqual(problems, ['Ingress default/site error ServiceNotFound: spec.rules[0].http.paths[0].backend.service.name: Service default/web not found']);
  });

  test('a Service in another namespace does not count', () => {
    const { backend } = backendOf([service('web', undefined, 'other'), slice('web-1', 'web', [{ ip: '10.0.0.1' }], undefined, { namespace: 'other' })]);
    assert.equal(backend.error, 'ServiceNotFound');
  });

  test('port not found, by number and by name', () => {
    const objects = [service('web', [{ name: 'web', port: 8000 }]), slice('web-1', 'web', [{ ip: '10.0.0.1' }])];
    const byNumber = backendOf(objects, 80);
    assert.equal(byNumber.backend.error, 'PortNotFound');
    assert.deepEqual(byNumber.backend.addresses, []);
    assert.deepEqual(byNumber.problems, ['Ingress default/site error PortNotFound: spec.rules[0].http.paths[0].backend.service.port.number: Service default/web has no port 80']);
    const byName = backendOf(objects, 'http');
    assert.equal(byName.backend.error, 'PortNotFound');
    assert.deepEqual(byName.problems, ['Ingress default/site error PortNotFound: spec.rules[0].http.paths[0].backend.service.port.name: Service default/web has no port named "http"']);
  });

  test('no endpoints is a warning, and says which mistake it is: no labelled slice, a port-name mismatch, nothing ready', () => {
    const cases: [KubeObject[], string][] = [
      [[service('web')], 'no EndpointSlice in namespace default is labelled kubernetes.io/service-name=web'],
      [[service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }], [{ name: 'web', port: 8080 }])], 'its EndpointSlices have no port named "http", as the Service port is named (their ports: "web")'],
      [[service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1', ready: false }, { ip: '10.0.0.2', ready: false }])], '2 of 2 endpoints are not ready'],
      [[service('web'), slice('web-1', 'web', [])], 'its EndpointSlices list no endpoints'],
    ];
    for (const [objects, why] of cases) {
      const { backend, problems } = backendOf(objects);
      assert.equal(backend.error, 'NoEndpoints');
      assert.deepEqual(backend.addresses, []);
      assert.deepEqual(problems, [`Ingress default/site warning NoEndpoints: spec.rules[0].http.paths[0].backend.service: Service default/web port 80 has no ready endpoints: ${why}`]);
    }
  });

  test('ExternalName is refused unless allowed', () => {
    const ext = service('ext', [{ name: 'https', port: 443 }], 'default', { type: 'ExternalName', externalName: 'API.example.org' });
    const objects = [cls, ext, simpleIngress('site', 'a.com', [['/', 'ext', 443], ['/named', 'ext', 'https'], ['/bare', 'ext', 8443]])];
    const off = run(objects);
    assert.deepEqual(off.routes.map((r) => r.backend.error), ['ExternalNameDisabled', 'ExternalNameDisabled', 'ExternalNameDisabled']);
    assert.deepEqual(problemLines(off)[0], 'Ingress default/site error ExternalNameDisabled: spec.rules[0].http.paths[0].backend.service.name: Service default/ext is of type ExternalName, which portico only routes to with --allow-external-name');

    const on = run(objects, { allowExternalName: true });
    assert.deepEqual(on.problems, []);
    assert.deepEqual(
      on.routes.map((r) => [r.path, r.backend.addresses]),
      [
        ['/', [{ host: 'api.example.org', port: 443 }]],
        ['/bare', [{ host: 'api.example.org', port: 8443 }]],
        ['/named', [{ host: 'api.example.org', port: 443 }]],
      ],
    );
  });

  test('resource backends are unsupported: reported, and the route answers with InvalidBackend', () => {
    const config = run([
      cls,
      ingress('site', {
        rules: [{ host: 'a.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { resource: { apiGroup: 'k8s.example.com', kind: 'StorageBucket', name: 'icons' } } }] } }],
      }),
    ]);
    assert.equal(config.routes.length, 1);
    assert.equal(config.routes[0]!.backend.error, 'InvalidBackend');
    assert.deepEqual(problemLines(config), [
      'Ingress default/site error InvalidBackend: spec.rules[0].http.paths[0].backend.resource: resource backends are not supported; use a Service backend',
    ]);
  });

  test('a service backend without port is reported as InvalidBackend', () => {
    const config = run([
      cls,
      service('web'),
      ingress('site', { rules: [{ host: 'a.com', http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web' } } }] } }] }),
    ]);
    assert.equal(config.routes[0]!.backend.error, 'InvalidBackend');
    assert.deepEqual(problemLines(config), ['Ingress default/site error InvalidBackend: spec.rules[0].http.paths[0].backend.service.port: must give a port number or a port name']);
  });
});
