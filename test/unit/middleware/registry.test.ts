import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Http1Request } from '../../../src/http1/request.ts';
import type { Problem } from '../../../src/model/config.ts';
import { composeChain, parsePolicies, POLICIES, SharedStateMap } from '../../../src/middleware/registry.ts';
import { INGRESS, compose, request, routeConfig, serve, terminal, type TestServer } from './support.ts';

describe('registry: parsePolicies', () => {
  test('every policy, in chain order, from one Ingress', () => {
    const problems: Problem[] = [];
    const policies = parsePolicies(
      {
        'portico.dev/upstream-protocol': 'h2c',
        'portico.dev/response-timeout': '5s',
        'portico.dev/response-headers': 'X-A: 1',
        'portico.dev/rewrite-target': '/',
        'portico.dev/max-body-size': '1m',
        'portico.dev/cors-allow-origins': '*',
        'portico.dev/tls-redirect': 'false',
        'portico.dev/rate-limit': '10',
        'portico.dev/ip-allow': '10.0.0.0/8',
        'portico.dev/ip-deny': '10.0.0.1',
        'kubernetes.io/ingress.class': 'portico',
      },
      INGRESS,
      problems,
    );
    assert.deepEqual(
      policies.map((p) => p.name),
      ['ip-deny', 'ip-allow', 'rate-limit', 'tls-redirect', 'cors', 'max-body-size', 'rewrite-target', 'headers', 'timeouts', 'upstream-protocol'],
    );
    assert.deepEqual(problems, []);
  });

  test('problems name the Ingress; unknown portico.dev annotations are warned about, other prefixes ignored (ingress-nginx ones get their own warning)', () => {
    const problems: Problem[] = [];
    const policies = parsePolicies({ 'portico.dev/rate-limit': 'fast', 'portico.dev/ratelimit': '5', 'nginx.ingress.kubernetes.io/rewrite-target': '/$1', 'other.example/x': 'y' }, INGRESS, problems);
    assert.deepEqual(policies, []);
    assert.deepEqual(
      problems.map((p) => `${p.object.namespace}/${p.object.name} ${p.severity} ${p.reason}`),
      ['default/site warning IngressNginxAnnotation', 'default/site warning UnknownAnnotation', 'default/site error InvalidAnnotation'],
    );
  });

  test('the secret reader reaches the policies', () => {
    const problems: Problem[] = [];
    const asked: string[] = [];
    parsePolicies({ 'portico.dev/upstream-protocol': 'https', 'portico.dev/upstream-ca-secret': 'ca' }, INGRESS, problems, (name) => {
      asked.push(name);
      return undefined;
    });
    assert.deepEqual(asked, ['ca']);
    assert.match(problems[0]!.message, /Secret default\/ca not found/);
  });

  test('every policy has a unique name, order and annotations under portico.dev/', () => {
    assert.equal(new Set(POLICIES.map((p) => p.name)).size, POLICIES.length);
    assert.equal(new Set(POLICIES.map((p) => p.order)).size, POLICIES.length);
    const annotations = POLICIES.flatMap((p) => p.annotations);
    assert.equal(new Set(annotations).size, annotations.length);
    assert.ok(annotations.every((a) => a.startsWith('portico.dev/')));
  });
});

describe('registry: composeChain', () => {
  test('an unknown policy name is a bug, not a silent no-op', () => {
    assert.throws(() => composeChain([{ name: 'nope', config: {} }], terminal, new SharedStateMap(), 'default/site', routeConfig()), /unknown policy nope/);
  });

  describe('policies stay with their Ingress when Ingresses share a host', () => {
    const fromHeader = (req: Http1Request) => String(req.header('x-test-client') ?? req.socket.remoteAddress);
    const as = (ip: string) => ({ headers: { 'x-test-client': ip, host: 'shop.example.com' } });
    let restricted: TestServer;
    let open: TestServer;
    let tlsDefault: TestServer;

    before(async () => {
      const shared = new SharedStateMap();
      const problems: Problem[] = [];
      // Ingress "admin" restricts /admin on shop.example.com; Ingress "shop" serves / on the same host.
      const adminPolicies = parsePolicies({ 'portico.dev/ip-allow': '10.0.0.0/8' }, { kind: 'Ingress', namespace: 'default', name: 'admin' }, problems);
      const adminRoute = routeConfig({ id: 'default/admin|shop.example.com|Prefix|/admin', source: { kind: 'Ingress', namespace: 'default', name: 'admin' }, host: 'shop.example.com', path: '/admin', policies: adminPolicies });
      restricted = await serve(compose(adminPolicies, adminRoute, shared), adminRoute, { clientIp: fromHeader });
      const shopPolicies = parsePolicies(undefined, { kind: 'Ingress', namespace: 'default', name: 'shop' }, problems);
      const shopRoute = routeConfig({ id: 'default/shop|shop.example.com|Prefix|/', source: { kind: 'Ingress', namespace: 'default', name: 'shop' }, host: 'shop.example.com', policies: shopPolicies });
      open = await serve(compose(shopPolicies, shopRoute, shared), shopRoute, { clientIp: fromHeader });
      // An Ingress without annotations whose host has TLS still gets the default redirect.
      const tlsRoute = { ...shopRoute, tls: true };
      tlsDefault = await serve(compose([], tlsRoute, shared), tlsRoute);
      assert.deepEqual(problems, []);
    });
    after(async () => {
      await Promise.all([restricted, open, tlsDefault].map((s) => s?.close()));
    });

    test('the restricting Ingress refuses, the other Ingress on the same host does not', async () => {
      assert.equal((await request(restricted, '/admin', as('192.0.2.1'))).status, 403);
      assert.equal((await request(restricted, '/admin', as('10.0.0.1'))).status, 200);
      assert.equal((await request(open, '/', as('192.0.2.1'))).status, 200);
    });

    test('defaults apply without annotations: a TLS host is redirected', async () => {
      const r = await request(tlsDefault, '/x', as('192.0.2.1'));
      assert.equal(r.status, 308);
      assert.equal(r.headers.location, 'https://shop.example.com/x');
    });
  });
});

describe('registry: SharedStateMap', () => {
  test('delete drops a key and its value, and keeps the others', () => {
    const shared = new SharedStateMap();
    const kept = shared.get('rate-limit|default/a', () => ({ n: 1 }));
    shared.get('rate-limit|default/b', () => ({ n: 2 }));
    shared.delete('rate-limit|default/b');
    assert.equal(shared.size, 1);
    assert.equal(shared.has('rate-limit|default/b'), false);
    assert.equal(shared.get('rate-limit|default/a', () => ({ n: 3 })), kept, 'same object after delete');
    assert.equal(shared.get('rate-limit|default/b', () => ({ n: 4 })).n, 4, 'a dropped key starts over');
  });
});
