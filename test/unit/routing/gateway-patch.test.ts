// A Gateway route change patches the live table: the hosts of the listeners the changed
// routes were or are on are matched again, the rest is kept. Through a series of
// changes, the patched table must answer every request as a table built from scratch
// from the same config, and must not read the config's whole route list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withLazyRoutes, type RouteConfig, type RoutingConfig } from '../../../src/model/config.ts';
import { keyOf, type KubeObject } from '../../../src/model/k8s.ts';
import { buildRouteTable, type RouteTable } from '../../../src/routing/table.ts';
import { createTranslator, translate } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, service, slice, snapshotOf } from '../translate/fixtures.ts';
import { gateway, gatewayClass, grpcRoute, http, httpRoute, toService } from '../translate/gateway-fixtures.ts';

const id = (o: KubeObject) => `${o.kind}/${keyOf(o)}`;
const parent = (sectionName?: string) => ({ name: 'gw', ...(sectionName ? { sectionName } : {}) });
const compile = (config: RouteConfig) => ({ config, handle: () => {} });

/** `config` whose route list throws when read: the patch must follow the delta alone. */
function unreadable(config: RoutingConfig): RoutingConfig {
  const { routes: _routes, ...descriptors } = Object.getOwnPropertyDescriptors(config);
  return withLazyRoutes(Object.defineProperties({}, descriptors) as Omit<RoutingConfig, 'routes'>, () => {
    throw new Error('the whole route list was read');
  });
}

const PORTS = [8081, 8082, 8083];
const HOSTS = ['a.example.com', 'b.example.com', 'x.y.example.com', 'example.com', 'other.org', 'a.wild.example.com'];
const PATHS = ['/', '/b', '/c/d', '/grpc.Svc/Call', '/e'];

/** What each request gets: the id of the route that serves it, or "-". */
function answers(table: RouteTable): string[] {
  const out: string[] = [];
  for (const port of PORTS) for (const host of HOSTS) for (const path of PATHS) out.push(`${port} ${host}${path} -> ${table.match(host, path, { method: 'POST', rawHeaders: ['content-type', 'application/grpc'] }, '', port)?.config.id ?? '-'}`);
  return out;
}

test('a Gateway route change patches the table to answer as a table built from scratch', () => {
  const backends = [service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }]), service('api'), slice('api-1', 'api', [{ ip: '10.0.0.2' }])];
  let objects = new Map<string, KubeObject>(
    [
      ...backends,
      gatewayClass(),
      gateway('gw', [http('any', 8081), http('wild', 8082, { hostname: '*.example.com' }), http('exact', 8082, { hostname: 'a.example.com' }), http('more', 8083)]),
      httpRoute('a', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] }),
      httpRoute('b', [parent()], [{ matches: [{ path: { type: 'Exact', value: '/b' } }], backendRefs: [toService('api')] }]),
      httpRoute('w', [parent('wild')], [{ matches: [{ path: { type: 'PathPrefix', value: '/c' } }], backendRefs: [toService('api')] }], { hostnames: ['*.example.com'] }),
      grpcRoute('g', [parent('more')], [{ backendRefs: [toService('api')] }], { hostnames: ['x.y.example.com'] }),
    ].map((o) => [id(o), o]),
  );
  const memo = createTranslator();
  let table = buildRouteTable(1, memo(snapshotOf([...objects.values()]), OPTIONS), compile);
  const steps: [string, (o: Map<string, KubeObject>) => void][] = [
    ['an exact-host route changes its path', (o) => o.set('HTTPRoute/default/a', httpRoute('a', [parent()], [{ matches: [{ path: { type: 'PathPrefix', value: '/e' } }], backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] }))],
    ['a route with a new host is added', (o) => o.set('HTTPRoute/default/n', httpRoute('n', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['b.example.com', 'x.y.example.com'] }))],
    ['a route without hostnames changes (covers every host)', (o) => o.set('HTTPRoute/default/b', httpRoute('b', [parent()], [{ matches: [{ path: { type: 'PathPrefix', value: '/b' } }], backendRefs: [toService('web')] }]))],
    ['a wildcard route changes', (o) => o.set('HTTPRoute/default/w', httpRoute('w', [parent('wild'), parent('exact')], [{ backendRefs: [toService('web')] }], { hostnames: ['*.example.com'] }))],
    ['a route moves to another listener', (o) => o.set('HTTPRoute/default/a', httpRoute('a', [parent('more')], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] }))],
    ['the only route of a listener is deleted', (o) => o.delete('GRPCRoute/default/g')],
    ['a route is deleted', (o) => o.delete('HTTPRoute/default/n')],
    ['a Service of a route goes away', (o) => o.delete('Service/default/api')],
    ['a listener is removed', (o) => o.set('Gateway/default/gw', gateway('gw', [http('any', 8081), http('wild', 8082, { hostname: '*.example.com' }), http('more', 8083)]))],
  ];
  let version = 1;
  for (const [name, change] of steps) {
    const { next, changes, snapshot } = applyStep(objects, change);
    objects = next;
    const config = memo(snapshot, OPTIONS, changes);
    // Nothing served changed (the controller then keeps its table): the same config comes back.
    if (config.serial !== table.config.serial) {
      assert.ok(config.delta?.gatewayRoutes !== undefined, `${name}: the delta names the Gateway routes that changed`);
      table = buildRouteTable(++version, unreadable(config), compile, undefined, table);
    }
    const fresh = buildRouteTable(version, translate(snapshot, OPTIONS), compile);
    assert.deepEqual(answers(table), answers(fresh), name);
    assert.equal(table.size, fresh.size, `${name}: size`);
  }
  // The comparison means something only if requests were served, and differently along the way.
  assert.ok(answers(table).filter((a) => !a.endsWith('-> -')).length > 10);
});

test('a Gateway change attaches every route again, but the delta names only the routes it made different', () => {
  const backends = [service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }])];
  const routes = [
    httpRoute('a', [parent('any')], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] }),
    httpRoute('w', [parent('wild')], [{ matches: [{ path: { type: 'PathPrefix', value: '/c' } }], backendRefs: [toService('web')] }], { hostnames: ['*.example.com'] }),
  ];
  let objects = new Map<string, KubeObject>([...backends, gatewayClass(), gateway('gw', [http('any', 8081), http('wild', 8082, { hostname: '*.example.com' })]), ...routes].map((o) => [id(o), o]));
  const memo = createTranslator();
  let table = buildRouteTable(1, memo(snapshotOf([...objects.values()]), OPTIONS), compile);
  const steps: [string, (o: Map<string, KubeObject>) => void, string[]][] = [
    ['a listener no route names is added', (o) => o.set('Gateway/default/gw', gateway('gw', [http('any', 8081), http('wild', 8082, { hostname: '*.example.com' }), http('more', 8083)])), []],
    ['one listener gets a hostname', (o) => o.set('Gateway/default/gw', gateway('gw', [http('any', 8081, { hostname: 'a.example.com' }), http('wild', 8082, { hostname: '*.example.com' }), http('more', 8083)])), ['HTTPRoute/default/a']],
  ];
  let version = 1;
  for (const [name, change, changed] of steps) {
    const { next, changes, snapshot } = applyStep(objects, change);
    objects = next;
    const config = memo(snapshot, OPTIONS, changes);
    assert.deepEqual([...(config.delta?.gatewayRoutes ?? ['no delta'])].sort(), changed, `${name}: the routes named as changed`);
    table = buildRouteTable(++version, unreadable(config), compile, undefined, table);
    const fresh = buildRouteTable(version, translate(snapshot, OPTIONS), compile);
    assert.deepEqual(answers(table), answers(fresh), name);
  }
  assert.ok(answers(table).some((a) => a.includes('HTTPRoute/default/w')), 'the untouched route still serves');
  assert.ok(answers(table).some((a) => a.includes('HTTPRoute/default/a')));
});
