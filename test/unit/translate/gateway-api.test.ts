import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RouteConfig, RoutingConfig } from '../../../src/model/config.ts';
import { keyOf, type KubeObject } from '../../../src/model/k8s.ts';
import { createTranslator, translate } from '../../../src/translate/index.ts';
import { OPTIONS, applyStep, run, service, slice, snapshotOf, testCerts, tlsSecret } from './fixtures.ts';
import { gateway, gatewayClass, grant, http, httpRoute, toService } from './gateway-fixtures.ts';

const backends = [service('web'), slice('web-1', 'web', [{ ip: '10.0.0.1' }]), service('api'), slice('api-1', 'api', [{ ip: '10.0.0.2' }])];
const parent = (name = 'gw', extra = {}) => ({ name, ...extra });

function gatewayRoutes(config: RoutingConfig): RouteConfig[] {
  return config.routes.filter((r) => r.source.kind === 'HTTPRoute');
}

function reasons(config: RoutingConfig, route: string): string[] {
  return (config.gatewayStatus.httpRoutes.get(route)?.parents ?? []).flatMap((p) => p.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`));
}

function listenerConditions(config: RoutingConfig, gw: string, listener: string): string[] {
  const l = config.gatewayStatus.gateways.get(gw)?.listeners.find((x) => x.name === listener);
  return (l?.conditions ?? []).map((c) => `${c.type}=${c.status}:${c.reason}`);
}

describe('Gateway API translation', () => {
  test('a class of ours is Accepted; a Gateway of it gets its listener; a route attached serves its rules on that port', () => {
    const config = run([
      ...backends,
      gatewayClass(),
      gatewayClass('other', 'example.com/other'),
      gateway('gw', [http('web', 8081)]),
      httpRoute('site', [parent()], [{ matches: [{ path: { type: 'PathPrefix', value: '/app' } }], backendRefs: [toService('web')] }], { hostnames: ['Shop.Example.com'] }),
    ]);
    assert.deepEqual([...config.gatewayStatus.gatewayClasses.keys()], ['portico']);
    assert.deepEqual(config.gatewayStatus.gatewayClasses.get('portico')!.conditions.map((c) => [c.type, c.status, c.observedGeneration]), [['Accepted', 'True', 1]]);
    const routes = gatewayRoutes(config);
    assert.equal(routes.length, 1);
    assert.deepEqual(
      { port: routes[0]!.port, host: routes[0]!.host, path: routes[0]!.path, type: routes[0]!.pathType, backend: routes[0]!.backend.key, source: routes[0]!.source },
      { port: 8081, host: 'shop.example.com', path: '/app', type: 'Prefix', backend: 'default/web:80', source: { kind: 'HTTPRoute', namespace: 'default', name: 'site' } },
    );
    assert.deepEqual(reasons(config, 'default/site'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    const parents = config.gatewayStatus.httpRoutes.get('default/site')!.parents;
    assert.equal(parents[0]!.controllerName, 'portico.dev/gateway-controller');
    assert.ok(parents[0]!.conditions.every((c) => c.observedGeneration === 3));
    const gw = config.gatewayStatus.gateways.get('default/gw')!;
    assert.deepEqual(gw.conditions.map((c) => `${c.type}=${c.status}`), ['Accepted=True', 'Programmed=True']);
    assert.equal(gw.listeners[0]!.attachedRoutes, 1);
    assert.deepEqual(gw.listeners[0]!.supportedKinds, [{ group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' }, { group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' }]);
    assert.deepEqual([...config.listeners.values()].map((l) => `${l.port}/${l.protocol}`), ['8081/HTTP']);
  });

  test('a Gateway of another controller, and routes to it, are left alone (no status)', () => {
    const config = run([...backends, gatewayClass('other', 'example.com/other'), gateway('gw', [http('web', 8081)], { className: 'other' }), httpRoute('site', [parent()], [{ backendRefs: [toService('web')] }])]);
    assert.equal(gatewayRoutes(config).length, 0);
    assert.equal(config.gatewayStatus.gateways.size, 0);
    assert.equal(config.gatewayStatus.httpRoutes.size, 0);
    assert.equal(config.listeners.size, 0);
  });

  test('hostnames intersect with the listener hostname; none in common: NoMatchingListenerHostname', () => {
    const config = run([
      ...backends,
      gatewayClass(),
      gateway('gw', [http('wild', 8081, { hostname: '*.example.com' })]),
      httpRoute('some', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com', 'b.c.example.com', 'other.org', '*.example.com'] }),
      httpRoute('none', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['other.org'] }),
      httpRoute('any', [parent()], [{ backendRefs: [toService('api')] }]),
    ]);
    const hosts = (name: string) => gatewayRoutes(config).filter((r) => r.source.name === name).map((r) => r.host).sort();
    assert.deepEqual(hosts('some'), ['*.example.com', 'a.example.com', 'b.c.example.com']);
    assert.deepEqual(hosts('any'), ['*.example.com']);
    assert.deepEqual(hosts('none'), []);
    assert.deepEqual(reasons(config, 'default/none'), ['Accepted=False:NoMatchingListenerHostname', 'ResolvedRefs=True:ResolvedRefs']);
    assert.equal(config.gatewayStatus.gateways.get('default/gw')!.listeners[0]!.attachedRoutes, 2);
  });

  test('allowedRoutes: Same by default, All, Selector on namespace labels; sectionName and port pick listeners', () => {
    const config = run([
      ...backends,
      service('web', [{ name: 'http', port: 80 }], 'team'),
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team', labels: { shared: 'yes' } } },
      gatewayClass(),
      gateway('gw', [http('same', 8081), http('all', 8082, { allowedRoutes: { namespaces: { from: 'All' } } }), http('selected', 8083, { allowedRoutes: { namespaces: { from: 'Selector', selector: { matchLabels: { shared: 'yes' } } } } })]),
      httpRoute('team-same', [parent('gw', { namespace: 'default', sectionName: 'same' })], [{ backendRefs: [toService('web')] }], { namespace: 'team' }),
      httpRoute('team-all', [parent('gw', { namespace: 'default', sectionName: 'all' })], [{ backendRefs: [toService('web')] }], { namespace: 'team' }),
      httpRoute('team-port', [parent('gw', { namespace: 'default', port: 8083 })], [{ backendRefs: [toService('web')] }], { namespace: 'team' }),
      httpRoute('missing-section', [parent('gw', { sectionName: 'nope' })], [{ backendRefs: [toService('web')] }]),
    ]);
    assert.deepEqual(reasons(config, 'team/team-same')[0], 'Accepted=False:NotAllowedByListeners');
    assert.deepEqual(reasons(config, 'team/team-all')[0], 'Accepted=True:Accepted');
    assert.deepEqual(reasons(config, 'team/team-port')[0], 'Accepted=True:Accepted');
    assert.deepEqual(reasons(config, 'default/missing-section')[0], 'Accepted=False:NoMatchingParent');
    assert.deepEqual(gatewayRoutes(config).map((r) => `${r.source.name}@${r.port}`).sort(), ['team-all@8082', 'team-port@8083']);
  });

  test('backendRefs: another namespace needs a ReferenceGrant; unknown kinds and missing Services do not resolve and answer 500', () => {
    const objects = [
      ...backends,
      service('db', [{ name: 'http', port: 80 }], 'data'),
      slice('db-1', 'db', [{ ip: '10.0.0.9' }], undefined, { namespace: 'data' }),
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('cross', [parent()], [{ backendRefs: [toService('db', 80, { namespace: 'data' })] }]),
      httpRoute('kind', [parent()], [{ backendRefs: [{ group: 'example.com', kind: 'Bucket', name: 'b' }] }]),
      httpRoute('missing', [parent()], [{ backendRefs: [toService('nothing')] }]),
    ];
    const denied = run(objects);
    assert.deepEqual(reasons(denied, 'default/cross'), ['Accepted=True:Accepted', 'ResolvedRefs=False:RefNotPermitted']);
    assert.deepEqual(reasons(denied, 'default/kind')[1], 'ResolvedRefs=False:InvalidKind');
    assert.deepEqual(reasons(denied, 'default/missing')[1], 'ResolvedRefs=False:BackendNotFound');
    const errors = Object.fromEntries(gatewayRoutes(denied).map((r) => [r.source.name, r.backend.error]));
    assert.deepEqual(errors, { cross: 'RefNotPermitted', kind: 'InvalidKind', missing: 'BackendNotFound' });

    const granted = run([...objects, grant('data', { kind: 'HTTPRoute', namespace: 'default' }, { kind: 'Service' })]);
    assert.deepEqual(reasons(granted, 'default/cross'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    const cross = gatewayRoutes(granted).find((r) => r.source.name === 'cross')!;
    assert.deepEqual(cross.backend.addresses, [{ host: '10.0.0.9', port: 8080 }]);
  });

  test('precedence after the path: method, then more headers, then more query parameters, then the older route', () => {
    const match = (extra: object) => ({ matches: [{ path: { type: 'PathPrefix' as const, value: '/' }, ...extra }], backendRefs: [toService('web')] });
    const config = run([
      ...backends,
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('b-newer', [parent()], [match({})], { created: '2026-02-01T00:00:00Z' }),
      httpRoute('a-older', [parent()], [match({})], { created: '2026-01-01T00:00:00Z' }),
      httpRoute('query', [parent()], [match({ queryParams: [{ name: 'q', value: '1' }] })], { created: '2026-03-01T00:00:00Z' }),
      httpRoute('headers', [parent()], [match({ headers: [{ name: 'A', value: '1' }, { name: 'b', value: '2' }] })], { created: '2026-03-01T00:00:00Z' }),
      httpRoute('method', [parent()], [match({ method: 'get' })], { created: '2026-03-01T00:00:00Z' }),
    ]);
    const byRank = gatewayRoutes(config).sort((x, y) => (x.rank! < y.rank! ? -1 : 1)).map((r) => r.source.name);
    assert.deepEqual(byRank, ['method', 'headers', 'query', 'a-older', 'b-newer']);
    const headers = gatewayRoutes(config).find((r) => r.source.name === 'headers')!;
    assert.deepEqual(headers.conditions!.headers.map((h) => h.name), ['a', 'b']);
    assert.equal(gatewayRoutes(config).find((r) => r.source.name === 'method')!.conditions!.method, 'GET');
  });

  test('weights: a 70/30 split, weight 0 takes nothing, all weights 0 answers 500', () => {
    const config = run([
      ...backends,
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('split', [parent()], [{ backendRefs: [toService('web', 80, { weight: 70 }), toService('api', 80, { weight: 30 }), toService('web', 80, { weight: 0 })] }]),
      httpRoute('single', [parent()], [{ backendRefs: [toService('web', 80, { weight: 5 }), toService('api', 80, { weight: 0 })] }]),
      httpRoute('zero', [parent()], [{ backendRefs: [toService('web', 80, { weight: 0 })] }]),
    ]);
    const route = (name: string) => gatewayRoutes(config).find((r) => r.source.name === name)!;
    assert.deepEqual(route('split').backends!.map((b) => `${b.backend.key}=${b.weight}`), ['default/web:80=70', 'default/api:80=30']);
    assert.equal(route('single').backends, undefined);
    assert.equal(route('single').backend.key, 'default/web:80');
    assert.equal(route('zero').backend.error, 'InvalidBackend');
  });

  test('listeners: an Ingress port is unavailable, protocols conflict per port, HTTPS needs a certificate it may read', async () => {
    const certs = await testCerts();
    const config = run(
      [
        ...backends,
        tlsSecret('gw-cert', certs.foo.cert, certs.foo.key),
        tlsSecret('far-cert', certs.foo.cert, certs.foo.key, { namespace: 'other' }),
        gatewayClass(),
        gateway('gw', [
          http('taken', 8080),
          http('plain', 9000),
          { name: 'secure', port: 9000, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'gw-cert' }] } },
          { name: 'tls', port: 9443, protocol: 'HTTPS', hostname: 'foo.example.com', tls: { certificateRefs: [{ name: 'gw-cert' }] } },
          { name: 'far', port: 9444, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'far-cert', namespace: 'other' }] } },
          { name: 'missing', port: 9445, protocol: 'HTTPS', tls: { certificateRefs: [{ name: 'nothing' }] } },
          { name: 'udp', port: 9446, protocol: 'UDP' },
        ]),
      ],
      { ingressPorts: new Map([[8080, '--http-port']]) },
    );
    assert.equal(listenerConditions(config, 'default/gw', 'taken')[0], 'Accepted=False:PortUnavailable');
    assert.ok(listenerConditions(config, 'default/gw', 'secure').includes('Conflicted=True:ProtocolConflict'));
    assert.ok(listenerConditions(config, 'default/gw', 'plain').includes('Programmed=True:Programmed'));
    assert.ok(listenerConditions(config, 'default/gw', 'tls').includes('ResolvedRefs=True:ResolvedRefs'));
    assert.ok(listenerConditions(config, 'default/gw', 'far').includes('ResolvedRefs=False:RefNotPermitted'));
    assert.ok(listenerConditions(config, 'default/gw', 'missing').includes('ResolvedRefs=False:InvalidCertificateRef'));
    assert.equal(listenerConditions(config, 'default/gw', 'udp')[0], 'Accepted=False:UnsupportedProtocol');
    assert.deepEqual([...config.listeners.keys()].sort(), [9000, 9443]);
    assert.equal(config.listeners.get(9443)!.certificates.get('foo.example.com')!.secret, 'default/gw-cert');
  });

  test('filters become policies; ReplacePrefixMatch carries the matched prefix; an unsupported filter answers 500', () => {
    const config = run([
      ...backends,
      gatewayClass(),
      gateway('gw', [http('web', 8081)]),
      httpRoute('filters', [parent()], [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/old' } }],
          filters: [
            { type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'X-Set', value: '1' }], add: [{ name: 'X-Add', value: '2' }], remove: ['X-Gone'] } },
            { type: 'URLRewrite', urlRewrite: { hostname: 'internal', path: { type: 'ReplacePrefixMatch', replacePrefixMatch: '/new' } } },
          ],
          backendRefs: [toService('web')],
        },
        { matches: [{ path: { type: 'Exact', value: '/ext' } }], filters: [{ type: 'ExtensionRef', extensionRef: { group: 'x', kind: 'Y', name: 'z' } }], backendRefs: [toService('web')] },
      ]),
    ]);
    const route = (path: string) => gatewayRoutes(config).find((r) => r.path === path)!;
    assert.deepEqual(route('/old').policies, [
      { name: 'url-rewrite', config: { hostname: 'internal', path: { type: 'ReplacePrefixMatch', value: '/new', prefix: '/old' } } },
      { name: 'header-modifier', config: { request: { set: [['X-Set', '1']], add: [['X-Add', '2']], remove: ['x-gone'] } } },
    ]);
    assert.equal(route('/ext').backend.error, 'InvalidBackend');
    assert.ok(config.problems.some((p) => p.reason === 'UnsupportedValue' && p.message.includes('ExtensionRef')));
  });
});

describe('Gateway API translation, given the changes', () => {
  test('reuses what did not change and gives the same output as a fresh translation', () => {
    const id = (o: KubeObject) => `${o.kind}/${keyOf(o)}`;
    let objects = new Map<string, KubeObject>(
      [
        ...backends,
        gatewayClass(),
        gateway('gw', [http('web', 8081), http('wild', 8082, { hostname: '*.example.com' })]),
        httpRoute('a', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] }),
        httpRoute('b', [parent()], [{ matches: [{ path: { type: 'Exact', value: '/b' } }], backendRefs: [toService('api')] }]),
      ].map((o) => [id(o), o]),
    );
    const memo = createTranslator();
    // The maps as their entries (key order included): the translator hands out views
    // over its state, which a fresh translation builds differently inside.
    const content = (c: RoutingConfig) => {
      const { serial: _s, delta: _d, gatewayRoutes, gatewayStatus, ...rest } = c;
      return {
        ...rest,
        gatewayRoutes: gatewayRoutes === undefined ? undefined : [...gatewayRoutes],
        gatewayStatus: { ...gatewayStatus, httpRoutes: [...gatewayStatus.httpRoutes], grpcRoutes: [...gatewayStatus.grpcRoutes] },
      };
    };
    memo(snapshotOf([...objects.values()]), OPTIONS);
    const steps: [string, (o: Map<string, KubeObject>) => void][] = [
      ['a route changes', (o) => o.set('HTTPRoute/default/a', httpRoute('a', [parent()], [{ backendRefs: [toService('api')] }], { hostnames: ['a.example.com'] }))],
      ['an endpoint of a Service a route uses changes', (o) => o.set('EndpointSlice/default/api-1', slice('api-1', 'api', [{ ip: '10.0.0.7' }]))],
      ['a Service a route uses goes away', (o) => o.delete('Service/default/web')],
      ['a listener is added', (o) => o.set('Gateway/default/gw', gateway('gw', [http('web', 8081), http('wild', 8082, { hostname: '*.example.com' }), http('more', 8083)]))],
      ['a route is deleted', (o) => o.delete('HTTPRoute/default/b')],
      ['a route is added', (o) => o.set('HTTPRoute/default/c', httpRoute('c', [parent('gw', { sectionName: 'more' })], [{ backendRefs: [toService('api')] }]))],
    ];
    for (const [name, change] of steps) {
      const { next, changes, snapshot } = applyStep(objects, change);
      objects = next;
      const before = memo(snapshot, OPTIONS, []);
      const after = memo(snapshot, OPTIONS, changes);
      assert.deepEqual(content(after), content(translate(snapshot, OPTIONS)), name);
      if (name === 'a route changes') {
        // Route b did not change: its RouteConfig keeps its identity (its compiled chain is kept).
        const b = (c: RoutingConfig) => c.routes.find((r) => r.source.name === 'b');
        assert.equal(b(after), b(before));
      }
    }
  });
});

describe('Gateway API translation, status writes', () => {
  test('a new HTTPRoute object that differs only in status keeps its routes (no re-translation)', () => {
    const memo = createTranslator();
    const route = httpRoute('a', [parent()], [{ backendRefs: [toService('web')] }], { hostnames: ['a.example.com'] });
    const objects = [...backends, gatewayClass(), gateway('gw', [http('web', 8081)]), route];
    const first = memo(snapshotOf(objects), OPTIONS);
    const withStatus = { ...route, status: { parents: [{ parentRef: { name: 'gw' }, controllerName: 'portico.dev/gateway-controller', conditions: [] }] } };
    const second = memo(snapshotOf([...objects.slice(0, -1), withStatus]), OPTIONS, [{ type: 'updated', kind: 'HTTPRoute', key: 'default/a' }]);
    const routeOf = (c: RoutingConfig) => c.routes.find((r) => r.source.name === 'a');
    assert.equal(routeOf(second), routeOf(first));
  });
});
