// A one-Ingress change at scale must not make the config's whole route list: the table
// patch, the pools and the compiled routes follow the delta alone (withLazyRoutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withLazyRoutes, type RoutingConfig } from '../../../src/model/config.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import { buildRouteTable } from '../../../src/routing/table.ts';
import { UpstreamPools } from '../../../src/proxy/upstreams.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, ingressClass, service, simpleIngress, slice, snapshotOf } from '../translate/fixtures.ts';

/** `config` whose route list throws when read. */
function unreadable(config: RoutingConfig): RoutingConfig {
  const { routes: _routes, ...descriptors } = Object.getOwnPropertyDescriptors(config);
  return withLazyRoutes(Object.defineProperties({}, descriptors) as Omit<RoutingConfig, 'routes'>, () => {
    throw new Error('the whole route list was read');
  });
}

test('a delta config is applied without reading its route list', async () => {
  const objects: KubeObject[] = [ingressClass('portico'), service('a'), slice('a-1', 'a', [{ ip: '10.0.0.1' }])];
  for (let i = 0; i < 50; i++) objects.push(simpleIngress(`ing${i}`, `h${i}.example.com`, [['/', 'a']]));
  const t = createTranslator();
  const first = t(snapshotOf(objects), OPTIONS);
  const compile = (config: RoutingConfig['routes'][number]) => ({ config, handle: () => {} });
  const pools = new UpstreamPools({ connectTimeout: 1000, keepAliveTimeout: 1000 });
  let table = buildRouteTable(1, first, compile);
  pools.retain(first);
  objects.push(simpleIngress('new', 'new.example.com', [['/', 'a']]));
  const next = unreadable(t(snapshotOf(objects), OPTIONS, [{ type: 'added', kind: 'Ingress', key: 'default/new' }]));
  assert.ok(next.delta !== undefined);
  table = buildRouteTable(2, next, compile, undefined, table);
  pools.retain(next);
  assert.equal(table.size, 51);
  assert.equal(table.match('new.example.com', '/')?.config.host, 'new.example.com');
  assert.equal(table.match('h3.example.com', '/')?.config.host, 'h3.example.com');
  await pools.close(0);
});
