import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RouteConfig, RoutingConfig } from '../../../src/model/config.ts';
import type { GRPCRouteMatch, KubeObject } from '../../../src/model/k8s.ts';
import { GATEWAY_MATCHING } from '../../../src/routing/matcher.ts';
import { createPrefixMapMatcher } from '../../../src/routing/prefix-map/index.ts';
import type { MatchRequest } from '../../../src/routing/conditions.ts';
import { createTranslator } from '../../../src/translate/index.ts';
import { OPTIONS, problemLines, run, service, slice, snapshotOf } from './fixtures.ts';
import { gateway, gatewayClass, grant, grpcRoute, http, httpRoute, toService } from './gateway-fixtures.ts';

const backends = [
  service('greeter'),
  slice('greeter-1', 'greeter', [{ ip: '10.0.0.1' }]),
  service('other'),
  slice('other-1', 'other', [{ ip: '10.0.0.2' }]),
];
const gw = [gatewayClass(), gateway('gw', [http('web', 8081)])];
const parent = { name: 'gw' };

function grpcRoutesOf(config: RoutingConfig): RouteConfig[] {
  return config.routes.filter((r) => r.source.kind === 'GRPCRoute');
}

function reasons(config: RoutingConfig, kind: 'httpRoutes' | 'grpcRoutes', route: string): string[] {
  return (config.gatewayStatus[kind].get(route)?.parents ?? []).flatMap((p) => p.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`));
}

/** The route a gRPC call would take: the Gateway matcher over the config's routes on port 8081. */
function routeFor(config: RoutingConfig, host: string, path: string, headers: Record<string, string> = {}): string | undefined {
  const entries = config.routes
    .filter((r) => r.port === 8081)
    .map((r) => ({ host: r.host, path: r.path, pathType: r.pathType, conditions: r.conditions, rank: r.rank, byRank: r.byRank, value: r }));
  const raw = Object.entries({ 'content-type': 'application/grpc', ...headers }).flat();
  const request: MatchRequest = { method: 'POST', rawHeaders: raw };
  const hit = createPrefixMapMatcher(entries, GATEWAY_MATCHING).match(host, path, request, '');
  return hit === undefined ? undefined : `${hit.source.name}:${hit.backend.service}`;
}

const route = (name: string, matches: GRPCRouteMatch[], opts: Parameters<typeof grpcRoute>[3] = {}, to = 'greeter') =>
  grpcRoute(name, [parent], [{ matches, backendRefs: [toService(to)] }], opts);

describe('GRPCRoute translation', () => {
  test('each method match becomes a path; headers become conditions; no method condition is added', () => {
    const config = run([
      ...backends,
      ...gw,
      route('r', [
        { method: { service: 'helloworld.Greeter', method: 'SayHello' } },
        { method: { service: 'helloworld.Greeter' } },
        { method: { method: 'SayHello' } },
        { method: { type: 'RegularExpression', service: 'helloworld\\..*', method: 'Say.*' } },
        {},
        { method: { service: 'helloworld.Greeter' }, headers: [{ name: 'Version', value: 'two' }, { name: 'version', value: 'ignored' }] },
      ]),
    ]);
    const seen = grpcRoutesOf(config).map((r) => ({ type: r.pathType, path: r.path, conditions: r.conditions }));
    assert.deepEqual(seen, [
      { type: 'Exact', path: '/helloworld.Greeter/SayHello', conditions: undefined },
      { type: 'Prefix', path: '/helloworld.Greeter/', conditions: undefined },
      { type: 'RegularExpression', path: '/[^/]+/SayHello', conditions: undefined },
      { type: 'RegularExpression', path: '/(?:helloworld\\..*)/(?:Say.*)', conditions: undefined },
      { type: 'Prefix', path: '/', conditions: undefined },
      { type: 'Prefix', path: '/helloworld.Greeter/', conditions: { headers: [{ name: 'version', type: 'Exact', value: 'two' }], query: [] } },
    ]);
    assert.ok(grpcRoutesOf(config).every((r) => r.id.startsWith('GRPCRoute/default/r|8081|')));
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/r'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(problemLines(config), []);
  });

  test('pods are spoken to over h2c, over h2 when the Service port says https, or as the route annotation says', () => {
    const objects = [
      ...backends,
      service('secure', [{ name: 'grpcs', port: 443, appProtocol: 'https' }]),
      slice('secure-1', 'secure', [{ ip: '10.0.0.3' }], [{ name: 'grpcs', port: 8443 }]),
      ...gw,
      grpcRoute('plain', [parent], [{ backendRefs: [toService('greeter')] }], { hostnames: ['plain.example'] }),
      grpcRoute('tls', [parent], [{ backendRefs: [toService('secure', 443)] }], { hostnames: ['tls.example'] }),
      grpcRoute('chosen', [parent], [{ backendRefs: [toService('greeter')] }], { hostnames: ['chosen.example'], annotations: { 'portico.dev/upstream-protocol': 'h2' } }),
    ];
    const protocols = Object.fromEntries(
      grpcRoutesOf(run(objects)).map((r) => [r.source.name, r.policies.filter((p) => p.name === 'upstream-protocol').map((p) => (p.config as { protocol: string }).protocol)]),
    );
    assert.deepEqual(protocols, { plain: ['h2c'], tls: ['h2'], chosen: ['h2'] });
  });

  test('invalid matches are reported by field and not served; the rest of the route is', () => {
    const config = run([
      ...backends,
      ...gw,
      route('r', [{ method: { type: 'Exact' } }, { method: { service: 'bad/name' } }, { method: { method: 'Say.Hello' } }, { method: { type: 'RegularExpression', method: '(' } }, { method: { service: 'ok.Svc' } }]),
    ]);
    assert.deepEqual(grpcRoutesOf(config).map((r) => r.path), ['/ok.Svc/']);
    assert.deepEqual(problemLines(config), [
      'GRPCRoute default/r error UnsupportedValue: spec.rules[0].matches[0].method: one of service and method must be set; this match is not served',
      'GRPCRoute default/r error UnsupportedValue: spec.rules[0].matches[1].method.service "bad/name" is not a gRPC service name; this match is not served',
      'GRPCRoute default/r error UnsupportedValue: spec.rules[0].matches[2].method.method "Say.Hello" is not a gRPC method name; this match is not served',
      'GRPCRoute default/r error UnsupportedValue: spec.rules[0].matches[3].method: "(" is not a valid regular expression; this match is not served',
    ]);
  });

  test('precedence: hostname, then characters of service, then of method, then header count, then age', () => {
    const config = run([
      ...backends,
      ...gw,
      // An exact hostname beats a wildcard even with fewer header matches (HTTPRoute would pick the headers).
      route('wild', [{ method: { service: 'pkg.Svc' }, headers: [{ name: 'a', value: '1' }] }], { hostnames: ['*.example.com'] }, 'other'),
      route('exact', [{ method: { service: 'pkg.Svc' } }], { hostnames: ['api.example.com'] }),
      // Service and method beat service with more headers.
      route('both', [{ method: { service: 'a.B', method: 'Get' } }], { hostnames: ['two.example'] }),
      route('service', [{ method: { service: 'a.B' }, headers: [{ name: 'x', value: '1' }, { name: 'y', value: '2' }] }], { hostnames: ['two.example'] }, 'other'),
      // Among regular expressions, more characters of service win over a method-only match.
      route('method-only', [{ method: { method: 'Get' } }], { hostnames: ['three.example'] }, 'other'),
      route('service-regex', [{ method: { type: 'RegularExpression', service: 'a\\.B.*' } }], { hostnames: ['three.example'] }),
      // Same service and method: more headers first, then the older route.
      route('older', [{ method: { service: 'a.B', method: 'Get' } }], { hostnames: ['four.example'], created: '2026-01-01T00:00:00Z' }),
      route('newer', [{ method: { service: 'a.B', method: 'Get' } }], { hostnames: ['four.example'], created: '2026-02-01T00:00:00Z' }, 'other'),
      route('headers', [{ method: { service: 'a.B', method: 'Get' }, headers: [{ name: 'x', value: '1' }] }], { hostnames: ['four.example'], created: '2026-03-01T00:00:00Z' }, 'other'),
    ]);
    assert.equal(routeFor(config, 'api.example.com', '/pkg.Svc/Get', { a: '1' }), 'exact:greeter');
    assert.equal(routeFor(config, 'web.example.com', '/pkg.Svc/Get', { a: '1' }), 'wild:other');
    assert.equal(routeFor(config, 'two.example', '/a.B/Get', { x: '1', y: '2' }), 'both:greeter');
    assert.equal(routeFor(config, 'two.example', '/a.B/Put', { x: '1', y: '2' }), 'service:other');
    assert.equal(routeFor(config, 'two.example', '/a.B/Put'), undefined);
    assert.equal(routeFor(config, 'three.example', '/a.Bc/Get'), 'service-regex:greeter');
    assert.equal(routeFor(config, 'three.example', '/x.Y/Get'), 'method-only:other');
    assert.equal(routeFor(config, 'four.example', '/a.B/Get', { x: '1' }), 'headers:other');
    assert.equal(routeFor(config, 'four.example', '/a.B/Get'), 'older:greeter');
  });

  test('precedence across path kinds: service-only beats method-only; an exact hostname beats a wildcard\'s service and method', () => {
    const config = run([
      ...backends,
      ...gw,
      // A Prefix "/a.B/" against a RegularExpression "/[^/]+/Get": the service's characters decide, not the path kind.
      route('method-only', [{ method: { method: 'Get' } }], { hostnames: ['five.example'] }, 'other'),
      route('service-only', [{ method: { service: 'a.B' } }], { hostnames: ['five.example'] }),
      // An Exact path on a wildcard against "/" on the exact host: the hostname decides first.
      route('wild-exact', [{ method: { service: 'a.B', method: 'Get' } }], { hostnames: ['*.six.example'] }, 'other'),
      route('host-any', [{}], { hostnames: ['x.six.example'] }),
    ]);
    assert.equal(routeFor(config, 'five.example', '/a.B/Get'), 'service-only:greeter');
    assert.equal(routeFor(config, 'five.example', '/c.D/Get'), 'method-only:other');
    assert.equal(routeFor(config, 'x.six.example', '/a.B/Get'), 'host-any:greeter');
    assert.equal(routeFor(config, 'y.six.example', '/a.B/Get'), 'wild-exact:other');
    assert.ok(grpcRoutesOf(config).every((r) => r.byRank === true));
  });

  test('weights split a rule between backends; a backendRef that does not resolve fails ResolvedRefs', () => {
    const config = run([
      ...backends,
      ...gw,
      grpcRoute('split', [parent], [{ backendRefs: [toService('greeter', 80, { weight: 90 }), toService('other', 80, { weight: 10 })] }], { hostnames: ['split.example'] }),
      grpcRoute('missing', [parent], [{ backendRefs: [toService('nowhere')] }], { hostnames: ['missing.example'] }),
    ]);
    const split = grpcRoutesOf(config).find((r) => r.source.name === 'split')!;
    assert.deepEqual(split.backends?.map((b) => [b.backend.service, b.weight]), [['greeter', 90], ['other', 10]]);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/missing'), ['Accepted=True:Accepted', 'ResolvedRefs=False:BackendNotFound']);
    assert.equal(grpcRoutesOf(config).find((r) => r.source.name === 'missing')!.backend.error, 'BackendNotFound');
  });

  test('a backend in another namespace needs a ReferenceGrant from GRPCRoutes (one for HTTPRoutes does not do)', () => {
    const remote = [service('data', undefined, 'data'), slice('data-1', 'data', [{ ip: '10.0.1.1' }], undefined, { namespace: 'data' })];
    const r = grpcRoute('far', [parent], [{ backendRefs: [toService('data', 80, { namespace: 'data' })] }]);
    const status = (extra: KubeObject[]) => reasons(run([...backends, ...remote, ...gw, r, ...extra]), 'grpcRoutes', 'default/far');
    assert.deepEqual(status([]), ['Accepted=True:Accepted', 'ResolvedRefs=False:RefNotPermitted']);
    assert.deepEqual(status([grant('data', { kind: 'HTTPRoute', namespace: 'default' }, { kind: 'Service' })]), ['Accepted=True:Accepted', 'ResolvedRefs=False:RefNotPermitted']);
    assert.deepEqual(status([grant('data', { kind: 'GRPCRoute', namespace: 'default' }, { kind: 'Service' })]), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
  });

  test('filters: header modifiers and mirrors are translated (a mirror with a warning: calls have bodies); HTTPRoute-only filters are refused with a message', () => {
    const config = run([
      ...backends,
      ...gw,
      grpcRoute('ok', [parent], [{ filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { set: [{ name: 'x-a', value: '1' }] } }, { type: 'RequestMirror', requestMirror: { backendRef: { name: 'other', port: 80 } } }], backendRefs: [toService('greeter')] }], { hostnames: ['ok.example'] }),
      grpcRoute('bad', [parent], [{ filters: [{ type: 'URLRewrite', urlRewrite: { hostname: 'x' } }], backendRefs: [toService('greeter')] }], { hostnames: ['bad.example'] }),
    ]);
    const ok = grpcRoutesOf(config).find((r) => r.source.name === 'ok')!;
    assert.deepEqual(ok.policies.map((p) => p.name), ['header-modifier', 'request-mirror', 'upstream-protocol']);
    const bad = grpcRoutesOf(config).find((r) => r.source.name === 'bad')!;
    assert.equal(bad.backend.error, 'InvalidBackend');
    assert.deepEqual(problemLines(config), [
      'GRPCRoute default/bad error UnsupportedValue: spec.rules[0].filters[0] (URLRewrite): filter type URLRewrite is not supported on a GRPCRoute; the rule answers with an error',
      'GRPCRoute default/ok warning UnsupportedValue: spec.rules[0].filters[1] (RequestMirror): gRPC calls have a body, which portico does not mirror yet; calls go to the backend only',
    ]);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/ok'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
  });

  test('listener kinds: GRPCRoute is supported by default; a listener for HTTPRoutes only refuses GRPCRoutes, and the other way round', () => {
    const config = run([
      ...backends,
      gatewayClass(),
      gateway('gw', [
        http('any', 8081, { hostname: 'any.example' }),
        http('http-only', 8081, { hostname: 'http.example', allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } }),
        http('grpc-only', 8081, { hostname: 'grpc.example', allowedRoutes: { kinds: [{ group: 'gateway.networking.k8s.io', kind: 'GRPCRoute' }] } }),
      ]),
      grpcRoute('to-any', [{ name: 'gw', sectionName: 'any' }], [{ backendRefs: [toService('greeter')] }]),
      grpcRoute('to-http', [{ name: 'gw', sectionName: 'http-only' }], [{ backendRefs: [toService('greeter')] }]),
      grpcRoute('to-grpc', [{ name: 'gw', sectionName: 'grpc-only' }], [{ backendRefs: [toService('greeter')] }]),
      httpRoute('web-to-grpc', [{ name: 'gw', sectionName: 'grpc-only' }], [{ backendRefs: [toService('greeter')] }]),
    ]);
    const listeners = config.gatewayStatus.gateways.get('default/gw')!.listeners;
    assert.deepEqual(
      listeners.map((l) => [l.name, l.supportedKinds.map((k) => k.kind), l.attachedRoutes]),
      [['any', ['HTTPRoute', 'GRPCRoute'], 1], ['http-only', ['HTTPRoute'], 0], ['grpc-only', ['GRPCRoute'], 1]],
    );
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/to-http'), ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/to-grpc'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(reasons(config, 'httpRoutes', 'default/web-to-grpc'), ['Accepted=False:NotAllowedByListeners', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(grpcRoutesOf(config).map((r) => `${r.source.name} ${r.listenerHost}`), ['to-any any.example', 'to-grpc grpc.example']);
  });

  test('an HTTPRoute and a GRPCRoute sharing a hostname on a listener: the older is accepted, the other is not and serves nothing there', () => {
    const web = (created: string, hostnames: string[]) => httpRoute('web', [parent], [{ backendRefs: [toService('other')] }], { created, hostnames });
    const rpc = (created: string, hostnames: string[]) => grpcRoute('rpc', [parent], [{ backendRefs: [toService('greeter')] }], { created, hostnames });
    const older = '2026-01-01T00:00:00Z';
    const newer = '2026-02-01T00:00:00Z';

    let config = run([...backends, ...gw, web(older, ['shop.example.com']), rpc(newer, ['*.example.com'])]);
    assert.deepEqual(reasons(config, 'httpRoutes', 'default/web'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/rpc'), ['Accepted=False:HostnameConflict', 'ResolvedRefs=True:ResolvedRefs']);
    assert.equal(grpcRoutesOf(config).length, 0);
    assert.equal(config.gatewayStatus.gateways.get('default/gw')!.listeners[0]!.attachedRoutes, 1);
    assert.match(problemLines(config).join('\n'), /GRPCRoute default\/rpc error HostnameConflict: .*listener web \(held by the older HTTPRoute default\/web\)/);

    config = run([...backends, ...gw, web(newer, ['shop.example.com']), rpc(older, ['shop.example.com'])]);
    assert.deepEqual(reasons(config, 'httpRoutes', 'default/web'), ['Accepted=False:HostnameConflict', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/rpc'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    assert.deepEqual(config.routes.filter((r) => r.port !== undefined).map((r) => r.source.kind), ['GRPCRoute']);

    config = run([...backends, ...gw, web(older, ['shop.example.com']), rpc(newer, ['grpc.example.com'])]);
    assert.deepEqual(reasons(config, 'grpcRoutes', 'default/rpc'), ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs']);
    assert.equal(config.gatewayStatus.gateways.get('default/gw')!.listeners[0]!.attachedRoutes, 2);
  });

  test('manifests at v1alpha2 are read as v1', async () => {
    const { sanitize } = await import('../../../src/sources/sanitize.ts');
    const out = sanitize({ apiVersion: 'gateway.networking.k8s.io/v1alpha2', kind: 'GRPCRoute', metadata: { name: 'r', namespace: 'default' }, spec: { rules: [{ matches: [{ method: { service: 's.S' } }] }] } });
    assert.equal(out.object?.kind, 'GRPCRoute');
    const bad = sanitize({ apiVersion: 'gateway.networking.k8s.io/v1', kind: 'GRPCRoute', metadata: { name: 'r' }, spec: { rules: [{ matches: [{ method: { service: 5 } }] }] } });
    assert.equal(bad.error, 'spec.rules[0].matches[0].method.service: must be a string, not 5');
  });
});

describe('GRPCRoute incremental translation', () => {
  test('a change to one GRPCRoute translates that route only; an HTTPRoute of the same name is a different route', () => {
    const memo = createTranslator();
    const objects: KubeObject[] = [
      ...backends,
      ...gw,
      grpcRoute('a', [parent], [{ matches: [{ method: { service: 'a.A' } }], backendRefs: [toService('greeter')] }], { hostnames: ['a.example'] }),
      grpcRoute('b', [parent], [{ matches: [{ method: { service: 'b.B' } }], backendRefs: [toService('greeter')] }], { hostnames: ['b.example'] }),
      httpRoute('a', [parent], [{ backendRefs: [toService('other')] }], { hostnames: ['web.example'] }),
    ];
    const first = memo(snapshotOf(objects), OPTIONS);
    objects[6] = grpcRoute('a', [parent], [{ matches: [{ method: { service: 'a.A', method: 'Get' } }], backendRefs: [toService('greeter')] }], { hostnames: ['a.example'] });
    const second = memo(snapshotOf(objects), OPTIONS, [{ type: 'updated', kind: 'GRPCRoute', key: 'default/a' }]);
    const find = (c: RoutingConfig, kind: string, name: string) => c.routes.find((r) => r.source.kind === kind && r.source.name === name);
    assert.equal(find(second, 'GRPCRoute', 'a')!.path, '/a.A/Get');
    assert.equal(find(second, 'GRPCRoute', 'b'), find(first, 'GRPCRoute', 'b'));
    assert.equal(find(second, 'HTTPRoute', 'a'), find(first, 'HTTPRoute', 'a'));
    assert.equal(second.delta?.gateway, true);
  });
});
