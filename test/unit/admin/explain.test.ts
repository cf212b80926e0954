// /routes/explain's logic against a real route table: a match, and each kind of miss.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RoutingConfig } from '../../../src/model/config.ts';
import { NO_GATEWAYS } from '../../../src/model/config.ts';
import { buildRouteTable } from '../../../src/routing/table.ts';
import { explain, hostCovers } from '../../../src/admin/explain.ts';
import { hostTotals } from '../../../src/admin/host-stats.ts';
import { backend, compileForTest, route } from './fixtures.ts';

function config(withDefault = false): RoutingConfig {
  const app = backend('shop', 'app', '80', [{ host: '10.0.0.1', port: 8080 }]);
  const empty = backend('shop', 'cold', '80', [], 'NoEndpoints');
  const routes = [
    route('shop/app', 'a.test', '/app', 'Prefix', app, [{ name: 'rate-limit', config: { rate: 5, burst: 5 } }]),
    route('shop/app', 'a.test', '/exact', 'Exact', app),
    route('shop/cold', 'cold.test', '/', 'Prefix', empty),
    route('shop/wild', '*.wild.test', '/', 'Prefix', app),
  ];
  const fallback = { ...route('shop/fallback', '', '/', 'Prefix', app), id: 'shop/fallback|default' };
  return {
    routes,
    ...(withDefault ? { defaultBackend: fallback } : {}),
    certificates: new Map(),
    servedIngresses: ['shop/app', 'shop/cold', 'shop/wild'],
    ignoredIngresses: [{ ingress: 'shop/legacy', reason: 'spec.ingressClassName "nginx" belongs to another controller (portico serves: portico)' }],
    problems: [],
    ...NO_GATEWAYS,
  };
}

const table = buildRouteTable(1, config(), compileForTest);
const context = { table, ingressHosts: (key: string) => (key === 'shop/legacy' ? ['legacy.test'] : []) };

describe('explain', () => {
  test('a match: the route, its backend and policies, and why', () => {
    const r = explain({ url: 'http://A.test:8080/app/cart?x=1' }, context);
    assert.equal(r.reason, 'matched');
    assert.equal(r.outcome, 'forwarded');
    assert.equal(r.host, 'a.test');
    assert.equal(r.route?.object, 'shop/app');
    assert.equal(r.route?.path, '/app');
    assert.deepEqual(r.route?.policies, ['rate-limit']);
    assert.deepEqual(r.route?.backends[0]?.endpoints, ['10.0.0.1:8080']);
    assert.match(r.message, /under the prefix \/app/);
  });

  test('a wildcard host match, and a URL without scheme', () => {
    const r = explain({ url: 'shop.wild.test/' }, context);
    assert.equal(r.reason, 'matched');
    assert.match(r.message, /wildcard \*\.wild\.test/);
    assert.equal(explain({ url: 'deep.shop.wild.test/' }, context).reason, 'no-host', 'an Ingress wildcard covers one label');
  });

  test('no rule for the host: 404', () => {
    const r = explain({ url: 'http://nowhere.test/' }, context);
    assert.equal(r.reason, 'no-host');
    assert.equal(r.outcome, 404);
    assert.match(r.message, /no rule covers the host nowhere\.test/);
  });

  test('the host has rules but the path matches none: the rules tried', () => {
    const r = explain({ url: 'http://a.test/apps' }, context);
    assert.equal(r.reason, 'path-mismatch');
    assert.equal(r.outcome, 404);
    assert.deepEqual(r.candidates?.map((c) => `${c.path} ${c.pathType}`).sort(), ['/app Prefix', '/exact Exact']);
    assert.equal(explain({ url: 'http://a.test/exact/more' }, context).reason, 'path-mismatch');
  });

  test('an Ingress names the host but is not portico\'s (class): says which and why', () => {
    const r = explain({ url: 'http://legacy.test/' }, context);
    assert.equal(r.reason, 'class-not-served');
    assert.equal(r.outcome, 404);
    assert.equal(r.ignored?.[0]?.ingress, 'shop/legacy');
    assert.match(r.message, /belongs to another controller/);
  });

  test('a backend without ready endpoints: matched, but 503', () => {
    const r = explain({ url: 'http://cold.test/x' }, context);
    assert.equal(r.reason, 'no-endpoints');
    assert.equal(r.outcome, 503);
    assert.equal(r.matched, true);
    assert.match(r.message, /NoEndpoints/);
  });

  test('the default backend takes what no rule matches, and explain says why no rule did', () => {
    const withDefault = buildRouteTable(2, config(true), compileForTest);
    const r = explain({ url: 'http://nowhere.test/' }, { table: withDefault });
    assert.equal(r.reason, 'default-backend');
    assert.equal(r.outcome, 'forwarded');
    assert.match(r.message, /no rule covers the host.*default backend of Ingress shop\/fallback/);
  });

  test('invalid URLs and paths portico refuses: 400', () => {
    for (const url of ['http://a.test/%2e%2e/x', 'http://a.test/a%2Fb', 'ftp://a.test/', 'http://a b/']) {
      const r = explain({ url }, context);
      assert.equal(r.reason, 'invalid-url', url);
      assert.equal(r.outcome, 400, url);
    }
  });

  test('Gateway listener ports: rules with conditions match with the method and headers given', () => {
    const app = backend('shop', 'app', '80', [{ host: '10.0.0.1', port: 8080 }]);
    const v2 = backend('shop', 'v2', '80', [{ host: '10.0.0.2', port: 8080 }]);
    const base = route('shop/app', 'gw.test', '/', 'Prefix', app);
    const gw: RoutingConfig = {
      ...config(),
      routes: [
        { ...base, id: 'HTTPRoute/shop/r|8081|gw.test|0|0', source: { kind: 'HTTPRoute', namespace: 'shop', name: 'r' }, port: 8081, listenerHost: '', rank: '1' },
        { ...route('shop/app', 'gw.test', '/', 'Prefix', v2), id: 'HTTPRoute/shop/r|8081|gw.test|1|0', source: { kind: 'HTTPRoute', namespace: 'shop', name: 'r' }, port: 8081, listenerHost: '', rank: '0', conditions: { method: 'POST', headers: [{ name: 'version', type: 'Exact', value: 'two' }], query: [] } },
      ],
      listeners: new Map([[8081, { port: 8081, protocol: 'HTTP' as const, certificates: new Map() }]]),
    };
    const t = buildRouteTable(3, gw, compileForTest);
    const plain = explain({ url: 'http://gw.test:8081/x' }, { table: t });
    assert.equal(plain.listenerPort, 8081);
    assert.equal(plain.route?.backends[0]?.service, 'shop/app');
    const two = explain({ url: 'http://gw.test:8081/x', method: 'post', headers: [['version', 'two']] }, { table: t });
    assert.equal(two.route?.backends[0]?.service, 'shop/v2');
    assert.equal(two.route?.kind, 'HTTPRoute');
    assert.equal(explain({ url: 'http://other.test:8081/x' }, { table: t }).reason, 'no-host');
    assert.equal(explain({ url: 'http://gw.test/x' }, { table: t }).reason, 'no-host', 'the Ingress listeners do not serve Gateway routes');
  });

  test('host coverage', () => {
    assert.equal(hostCovers('*.a.test', 'x.a.test', false), true);
    assert.equal(hostCovers('*.a.test', 'a.test', false), false);
    assert.equal(hostCovers('*.a.test', 'y.x.a.test', false), false);
    assert.equal(hostCovers('*.a.test', 'y.x.a.test', true), true);
    assert.equal(hostCovers('', 'any.test', false), true);
  });
});

describe('host totals for the dashboard', () => {
  test('requests and 5xx by rule host; latency of an Ingress backend goes to its hosts; unrouted apart', () => {
    const totals = hostTotals(
      [
        {
          name: 'portico_requests_total',
          values: [
            { labels: { namespace: 'shop', ingress: 'app', host: 'a.test', path: '/app', service: 'app', status: 200 }, value: 7 },
            { labels: { namespace: 'shop', ingress: 'app', host: 'a.test', path: '/exact', service: 'app', status: 503 }, value: 3 },
            { labels: { namespace: '', ingress: '', host: '', path: '', service: '', status: 404 }, value: 2 },
          ],
        },
        {
          name: 'portico_upstream_latency_seconds',
          values: [
            { metricName: 'portico_upstream_latency_seconds_bucket', labels: { namespace: 'shop', ingress: 'app', service: 'app', le: '0.1' }, value: 7 },
            { metricName: 'portico_upstream_latency_seconds_sum', labels: { namespace: 'shop', ingress: 'app', service: 'app' }, value: 0.35 },
            { metricName: 'portico_upstream_latency_seconds_count', labels: { namespace: 'shop', ingress: 'app', service: 'app' }, value: 7 },
          ],
        },
      ],
      config(),
    );
    assert.deepEqual(totals['a.test'], { requests: 10, errors: 3, latencySum: 0.35, latencyCount: 7 });
    assert.deepEqual(totals['(no route)'], { requests: 2, errors: 0, latencySum: 0, latencyCount: 0 });
    assert.deepEqual(totals['cold.test'], { requests: 0, errors: 0, latencySum: 0, latencyCount: 0 }, 'hosts without traffic show too');
  });
});
