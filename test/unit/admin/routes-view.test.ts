import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { buildRoutesView, serializeRoutesView } from '../../../src/admin/routes-view.ts';
import { emptyRoutingConfig } from '../../../src/routing/table.ts';
import { largeConfig, sampleConfig, sampleProblem } from './fixtures.ts';

describe('routes view', () => {
  const view = buildRoutesView(7, sampleConfig());

  test('reports the version and the number of routes', () => {
    assert.equal(view.version, 7);
    assert.equal(view.routes, 6);
  });

  test('groups routes by host, with "*" for rules without host and wildcards as written', () => {
    assert.deepEqual(Object.keys(view.hosts).sort(), ['*', '*.example.com', 'shop.example.com']);
    assert.deepEqual(Object.keys(view.hosts['*']!), ['/status']);
  });

  test('describes each path: type, Ingress, backend endpoints and policies', () => {
    assert.deepEqual(view.hosts['shop.example.com']!['/'], {
      pathType: 'Prefix',
      ingress: 'shop/web',
      backend: { service: 'shop/web', port: '80', endpoints: ['10.0.0.1:8080', '10.0.0.2:8080'], state: 'ok' },
      policies: [],
    });
    assert.deepEqual(view.hosts['shop.example.com']!['/api']!.policies, ['rate-limit', 'cors']);
  });

  test('lists the policies that act on the route: tls-redirect (unless turned off) and hsts on TLS routes', () => {
    const config = sampleConfig();
    const [first, ...rest] = config.routes;
    const on = { ...first!, id: 'tls-on', host: 'a.example.com', tls: true };
    const off = { ...first!, id: 'tls-off', host: 'b.example.com', tls: true, policies: [{ name: 'tls-redirect', config: { force: false } }] };
    const forced = { ...first!, id: 'forced', host: 'c.example.com', tls: false, policies: [{ name: 'tls-redirect', config: { force: true } }] };
    const v = buildRoutesView(1, { ...config, routes: [first!, ...rest, on, off, forced] });
    assert.deepEqual(v.hosts['a.example.com']!['/']!.policies, ['tls-redirect', 'hsts']);
    assert.deepEqual(v.hosts['b.example.com']!['/']!.policies, ['hsts']);
    assert.deepEqual(v.hosts['c.example.com']!['/']!.policies, ['tls-redirect']);
  });

  test('brackets IPv6 endpoints', () => {
    assert.deepEqual(view.hosts['shop.example.com']!['/api']!.backend.endpoints, ['[fd00::5]:9000']);
  });

  test('shows why a backend cannot take traffic', () => {
    const old = view.hosts['shop.example.com']!['/old']!;
    assert.equal(old.backend.state, 'ServiceNotFound');
    assert.deepEqual(old.backend.endpoints, []);
  });

  test('keeps both the Exact and the Prefix rule of the same path', () => {
    const shop = view.hosts['shop.example.com']!;
    assert.equal(shop['/api']!.pathType, 'Prefix');
    assert.equal(shop['/api (Exact)']!.pathType, 'Exact');
  });

  test('includes the default backend, certificates and problems', () => {
    assert.equal(view.defaultBackend?.ingress, 'default/catch-all');
    assert.deepEqual(view.defaultBackend?.backend.endpoints, ['10.0.9.9:8080']);
    assert.deepEqual({ ...view.certificates }, { 'shop.example.com': 'shop/shop-tls', '*.example.com': 'shop/wild-tls' });
    assert.deepEqual(view.problems, [sampleProblem]);
  });

  test('an empty config has no hosts and a null default backend', () => {
    const empty = buildRoutesView(0, emptyRoutingConfig());
    assert.deepEqual(JSON.parse(JSON.stringify(empty)), {
      version: 0,
      routes: 0,
      hosts: {},
      defaultBackend: null,
      certificates: {},
      problems: [],
      ignoredIngresses: [],
      gatewayApi: { listeners: [], routes: [], gatewayClasses: {}, gateways: {}, httpRoutes: {}, grpcRoutes: {} },
    });
  });

  test('a host named __proto__ is data, not a prototype', () => {
    const config = sampleConfig();
    const routes = config.routes.map((r, i) => (i === 0 ? { ...r, host: '__proto__' } : r));
    const odd = buildRoutesView(1, { ...config, routes });
    assert.ok(JSON.parse(JSON.stringify(odd)).hosts.__proto__);
  });

  test('the sliced serializer writes the same document as JSON.stringify', async () => {
    for (const config of [sampleConfig(), emptyRoutingConfig(), largeConfig(95)]) {
      const sliced = await serializeRoutesView(3, config, 7);
      assert.equal(sliced.toString('utf8'), JSON.stringify(buildRoutesView(3, config)) + '\n');
    }
  });
});

test('/routes lists the Ingresses portico ignores, with why', () => {
  const view = buildRoutesView(1, sampleConfig());
  assert.deepEqual(view.ignoredIngresses, [{ ingress: 'shop/legacy', reason: 'spec.ingressClassName "nginx" belongs to another controller (portico serves: portico)' }]);
});
