// The compiled routes of one source with the same backend, policies and tls flag share one
// forwarder and chain (src/proxy/compile.ts SharedChain); a route whose policies read it
// (rewrite-target) gets its own; the shared forwarder follows its backend until the last
// route using it leaves.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { SharedStateMap } from '../../../src/middleware/registry.ts';
import type { BackendConfig, PolicyConfig, RouteConfig, RouteSource, RoutingConfig } from '../../../src/model/config.ts';
import { createRouteCompiler } from '../../../src/proxy/compile.ts';
import type { RequestContext } from '../../../src/proxy/context.ts';
import { Forwarder } from '../../../src/proxy/forward.ts';
import { UpstreamPools } from '../../../src/proxy/upstreams.ts';

const backend: BackendConfig = { key: 'ns/svc:80', namespace: 'ns', service: 'svc', port: '80', addresses: [] };
const NO_POLICIES: readonly PolicyConfig[] = [];

function route(source: RouteSource, host: string, path: string, policies = NO_POLICIES, tls = false): RouteConfig {
  return { id: `${source.namespace}/${source.name}|${host}|Prefix|${path}`, source, host, path, pathType: 'Prefix', backend, policies, tls };
}

/** A request whose answer is already sent: the chain runs, nothing is written. */
function request(): RequestContext {
  return { path: '/', query: '', res: { headersSent: true, req: { rawHeaders: [], method: 'GET' } } } as unknown as RequestContext;
}

function config(routes: RouteConfig[]): RoutingConfig {
  return { routes, certificates: new Map(), servedIngresses: [], ignoredIngresses: [], problems: [], listeners: new Map(), gatewayStatus: {} } as unknown as RoutingConfig;
}

/** The forwarder a table route compiled at its first request. */
function forwarderOf(r: unknown): Forwarder {
  const compiled = (r as { compiled?: { forwarders: unknown } }).compiled;
  assert.ok(compiled?.forwarders instanceof Forwarder);
  return compiled.forwarders;
}

test('routes of one source with the same backend, policies and tls share their forwarder and chain', async () => {
  const pools = new UpstreamPools({ connectTimeout: 1000, keepAliveTimeout: 1000 });
  const compiler = createRouteCompiler({ upstreams: pools, registry: new Registry(), shared: new SharedStateMap() });
  const ing: RouteSource = { kind: 'Ingress', namespace: 'ns', name: 'ing' };
  const other: RouteSource = { kind: 'Ingress', namespace: 'ns', name: 'other' };
  const rewrite: readonly PolicyConfig[] = [{ name: 'rewrite-target', config: { target: '/x' } }];
  const a = route(ing, 'a.example.com', '/');
  const b = route(ing, 'b.example.com', '/');
  const api = route(ing, 'a.example.com', '/api');
  const tls = route(ing, 'c.example.com', '/', NO_POLICIES, true);
  const rewritten1 = route(ing, 'd.example.com', '/', rewrite);
  const rewritten2 = route(ing, 'e.example.com', '/', rewrite);
  const elsewhere = route(other, 'f.example.com', '/');
  const all = [a, b, api, tls, rewritten1, rewritten2, elsewhere];
  const table = new Map(all.map((c) => [c, compiler.compile(c)]));
  compiler.retain(config(all));
  for (const r of table.values()) r.handle(request());
  const fa = forwarderOf(table.get(a));
  assert.equal(forwarderOf(table.get(b)), fa, 'another host of the Ingress');
  assert.equal(forwarderOf(table.get(api)), fa, 'another path of the Ingress');
  assert.notEqual(forwarderOf(table.get(tls)), fa, 'another tls flag');
  assert.notEqual(forwarderOf(table.get(rewritten1)), forwarderOf(table.get(rewritten2)), 'a policy that reads its route');
  assert.notEqual(forwarderOf(table.get(elsewhere)), fa, 'another Ingress');
  const compiledOf = (c: RouteConfig) => (table.get(c) as unknown as { compiled: { metrics: unknown; requests: unknown } }).compiled;
  assert.equal(compiledOf(a).metrics, compiledOf(b).metrics, 'one set of latency and error handles for the shared forwarder');
  assert.notEqual(compiledOf(a).requests, compiledOf(b).requests, 'request counts of each route (host label)');

  // The route that made the shared forwarder leaves: the others keep it, following their backend.
  compiler.retain(config([b, api]));
  pools.registry.apply([[backend.key, [{ host: '10.0.0.1', port: 8080 }]]]);
  assert.equal(fa.balancer.size, 1, 'still attached to its backend');
  compiler.retain(config([]));
  pools.registry.apply([[backend.key, [{ host: '10.0.0.1', port: 8080 }, { host: '10.0.0.2', port: 8080 }]]]);
  assert.equal(fa.balancer.size, 1, 'detached once no route uses it');
  await pools.close(0);
});
