import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ProxyMetrics } from '../../../src/proxy/metrics.ts';
import type { RouteConfig } from '../../../src/model/config.ts';

const route = (path: string) =>
  ({ id: `ns/app|a.test|Prefix|${path}`, source: { kind: 'Ingress', namespace: 'ns', name: 'app' }, host: 'a.test', path, pathType: 'Prefix', backend: { key: 'ns/web:80', namespace: 'ns', service: 'web', port: '80', addresses: [] }, policies: [], tls: false }) as unknown as RouteConfig;

function lines(text: string, prefix: string): string[] {
  return text.split('\n').filter((l) => l.startsWith(prefix));
}

test('a route that served nothing yet is exported with zero buckets and no request counts; counts appear as they happen', async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const one = metrics.forRoute(route('/'), metrics.latencyFor(route('/')));
  const oneRequests = metrics.requestsFor(route('/'));
  metrics.forRoute(route('/api'), metrics.latencyFor(route('/api')));
  metrics.requestsFor(route('/api'));
  let text = await registry.metrics();
  const buckets = lines(text, 'portico_upstream_latency_seconds_bucket{namespace="ns",ingress="app",service="web"');
  assert.equal(buckets.length, 17);
  assert.ok(buckets.every((l) => l.endsWith(' 0')), buckets.join('\n'));
  assert.deepEqual(lines(text, 'portico_upstream_latency_seconds_count{namespace="ns",ingress="app",service="web"}'), ['portico_upstream_latency_seconds_count{namespace="ns",ingress="app",service="web"} 0']);
  assert.deepEqual(lines(text, 'portico_requests_total{namespace="ns"'), []);

  one.observeLatency(0.003);
  one.observeLatency(2);
  oneRequests.add(200);
  oneRequests.add(200);
  oneRequests.add(502);
  one.countError('connect');
  text = await registry.metrics();
  assert.match(text, /^portico_upstream_latency_seconds_bucket\{namespace="ns",ingress="app",service="web",le="0.0025"\} 0$/m);
  assert.match(text, /^portico_upstream_latency_seconds_bucket\{namespace="ns",ingress="app",service="web",le="0.005"\} 1$/m);
  assert.match(text, /^portico_upstream_latency_seconds_bucket\{namespace="ns",ingress="app",service="web",le="2.5"\} 2$/m);
  assert.match(text, /^portico_upstream_latency_seconds_count\{namespace="ns",ingress="app",service="web"\} 2$/m);
  assert.match(text, /^portico_requests_total\{namespace="ns",ingress="app",host="a.test",path="\/",service="web",status="200"\} 2$/m);
  assert.match(text, /^portico_requests_total\{namespace="ns",ingress="app",host="a.test",path="\/",service="web",status="502"\} 1$/m);
  assert.match(text, /^portico_upstream_errors_total\{namespace="ns",ingress="app",service="web",kind="connect"\} 1$/m);
  assert.doesNotMatch(text, /path="\/api"/);

  registry.resetMetrics();
  text = await registry.metrics();
  assert.match(text, /^portico_upstream_latency_seconds_bucket\{namespace="ns",ingress="app",service="web",le="\+Inf"\} 0$/m);
  assert.match(text, /^portico_upstream_latency_seconds_bucket\{namespace="ns",ingress="app",service="web",le="2.5"\} 0$/m);
});
