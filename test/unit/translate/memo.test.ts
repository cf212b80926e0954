import { before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { RoutingConfig, TranslateOptions } from '../../../src/model/config.ts';
import type { KubeObject } from '../../../src/model/k8s.ts';
import type { Ingress } from '../../../src/model/k8s.ts';
import { ObjectStore } from '../../../src/sources/store.ts';
import { deepFreeze } from '../../../src/sources/sanitize-json.ts';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createTranslator, translate } from '../../../src/translate/index.ts';
import type { ObjectChange } from '../../../src/sources/store.ts';
import { OPTIONS, applyStep, ingress, ingressClass, service, simpleIngress, slice, snapshotOf, svcBackend, testCerts, tlsSecret, type TestCerts } from './fixtures.ts';

let certs: TestCerts;
before(async () => {
  certs = await testCerts();
});

/** A full collection (the test runner's node has no --expose-gc). */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** A small world with every kind, named so tests can replace single objects. */
function world(): Map<string, KubeObject> {
  const objects: KubeObject[] = [
    ingressClass('portico'),
    service('a'),
    slice('a-1', 'a', [{ ip: '10.0.0.1' }, { ip: '10.0.0.2' }]),
    service('b'),
    slice('b-1', 'b', [{ ip: '10.0.1.1' }]),
    slice('b-2', 'b', [{ ip: '10.0.1.2', ready: false }]),
    tlsSecret('foo-tls', certs.foo.cert, certs.foo.key),
    simpleIngress('one', 'foo.example.com', [['/', 'a'], ['/b', 'b']], { created: '2024-01-01T00:00:00Z' }),
    ingress('two', { tls: [{ hosts: ['bar.example.com'], secretName: 'foo-tls' }], defaultBackend: svcBackend('b'), rules: simpleIngress('x', 'bar.example.com', [['/', 'b'], ['/missing', 'nope']]).spec!.rules! }, { created: '2024-02-01T00:00:00Z' }),
    simpleIngress('three', 'foo.example.com', [['/', 'b']], { created: '2024-03-01T00:00:00Z' }),
  ];
  return new Map(objects.map((o) => [`${o.kind}/${o.metadata.name}`, o]));
}

/** The content of a config, without the translator's bookkeeping (its serial and delta). */
function content(config: RoutingConfig): RoutingConfig {
  const { serial: _serial, delta: _delta, ...rest } = config;
  return rest;
}

function byId(config: RoutingConfig) {
  return new Map(config.routes.map((r) => [r.id, r]));
}

describe('memoized translator', () => {
  test('gives the same output as a fresh translation through a series of changes', () => {
    const memo = createTranslator();
    const objects = world();
    const steps: [string, (o: Map<string, KubeObject>) => void, Partial<TranslateOptions>?][] = [
      ['initial', () => {}],
      ['an Ingress changes', (o) => o.set('Ingress/one', simpleIngress('one', 'foo.example.com', [['/', 'a'], ['/c', 'b']], { created: '2024-01-01T00:00:00Z' }))],
      ['an endpoint becomes ready', (o) => o.set('EndpointSlice/b-2', slice('b-2', 'b', [{ ip: '10.0.1.2' }]))],
      ['a slice goes away', (o) => o.delete('EndpointSlice/a-1')],
      ['a Service goes away', (o) => o.delete('Service/b')],
      ['the missing Service appears', (o) => o.set('Service/nope', service('nope', [{ name: 'http', port: 80 }]))],
      ['a Secret becomes invalid', (o) => o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.foo.cert, certs.bar.key))],
      ['the Secret is fixed with a wildcard', (o) => o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.wildcard.cert, certs.wildcard.key))],
      ['ExternalName allowed', (o) => o.set('Service/a', service('a', [{ name: 'http', port: 80 }], 'default', { type: 'ExternalName', externalName: 'a.example.org' })), { allowExternalName: true }],
      ['the class goes away', (o) => o.delete('IngressClass/portico')],
      ['the class comes back', (o) => o.set('IngressClass/portico', ingressClass('portico'))],
      ['an Ingress is deleted', (o) => o.delete('Ingress/one')],
      ['one of the two left on a host is deleted', (o) => o.delete('Ingress/four')],
      ['the last one on the host is deleted', (o) => o.delete('Ingress/three')],
      ['an Ingress takes the host again', (o) => o.set('Ingress/one', simpleIngress('one', 'foo.example.com', [['/', 'a']], { created: '2024-01-01T00:00:00Z' }))],
      ['and a second one joins it', (o) => o.set('Ingress/three', simpleIngress('three', 'foo.example.com', [['/', 'b'], ['/t', 'b']], { created: '2024-03-01T00:00:00Z' }))],
    ];
    let options: TranslateOptions = OPTIONS;
    for (const [name, change, opts] of steps) {
      change(objects);
      options = { ...options, ...opts };
      const snapshot = snapshotOf([...objects.values()]);
      assert.deepEqual(content(memo(snapshot, options)), content(translate(snapshot, options)), name);
      // And once more without any change.
      assert.deepEqual(content(memo(snapshot, options)), content(translate(snapshot, options)), `${name}, unchanged`);
    }
  });

  test('given the changes, it translates only what they concern, to the same output as a fresh translation', () => {
    const memo = createTranslator();
    let objects = world();
    const base = { ...OPTIONS };
    const steps: [string, (o: Map<string, KubeObject>) => void][] = [
      ['an Ingress changes', (o) => o.set('Ingress/one', simpleIngress('one', 'foo.example.com', [['/', 'a'], ['/c', 'b']], { created: '2024-01-01T00:00:00Z' }))],
      ['an Ingress takes a path another serves', (o) => o.set('Ingress/four', simpleIngress('four', 'foo.example.com', [['/c', 'a']], { created: '2023-01-01T00:00:00Z' }))],
      ['an endpoint becomes ready', (o) => o.set('EndpointSlice/b-2', slice('b-2', 'b', [{ ip: '10.0.1.2' }]))],
      ['a slice goes away', (o) => o.delete('EndpointSlice/a-1')],
      ['a Service goes away', (o) => o.delete('Service/b')],
      ['the missing Service appears', (o) => o.set('Service/nope', service('nope', [{ name: 'http', port: 80 }]))],
      ['a Secret becomes invalid', (o) => o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.foo.cert, certs.bar.key))],
      ['the Secret is fixed with a wildcard', (o) => o.set('Secret/foo-tls', tlsSecret('foo-tls', certs.wildcard.cert, certs.wildcard.key))],
      ['a wildcard certificate covers another Ingress\' host', (o) => o.set('Ingress/five', ingress('five', { tls: [{ hosts: ['*.example.com'], secretName: 'foo-tls' }], rules: simpleIngress('x', '*.example.com', [['/', 'a']]).spec!.rules! }))],
      ['the wildcard Ingress goes away', (o) => o.delete('Ingress/five')],
      ['a second default backend, newer', (o) => o.set('Ingress/six', ingress('six', { defaultBackend: svcBackend('a') }, { created: '2025-01-01T00:00:00Z' }))],
      ['the first default backend goes away', (o) => o.delete('Ingress/two')],
      ['the class goes away', (o) => o.delete('IngressClass/portico')],
      ['the class comes back', (o) => o.set('IngressClass/portico', ingressClass('portico'))],
      ['an Ingress is deleted', (o) => o.delete('Ingress/one')],
    ];
    memo(snapshotOf([...objects.values()]), base);
    for (const [name, change] of steps) {
      const { next, changes, snapshot } = applyStep(objects, change);
      objects = next;
      assert.deepEqual(content(memo(snapshot, base, changes)), content(translate(snapshot, base)), name);
      assert.deepEqual(content(memo(snapshot, base, [])), content(translate(snapshot, base)), `${name}, then no change`);
    }
  });

  test('changing one Ingress keeps the identity of every other route', () => {
    const memo = createTranslator();
    const objects = world();
    const first = memo(snapshotOf([...objects.values()]), OPTIONS);
    objects.set('Ingress/three', simpleIngress('three', 'baz.example.com', [['/', 'b']], { created: '2024-03-01T00:00:00Z' }));
    const second = memo(snapshotOf([...objects.values()]), OPTIONS);
    const before = byId(first);
    for (const route of second.routes) {
      if (route.source.name === 'three') assert.equal(before.has(route.id), false);
      else assert.equal(route, before.get(route.id), route.id);
    }
    assert.equal(second.defaultBackend, first.defaultBackend);
  });

  test('changing one path of an Ingress keeps the identity of its other routes', () => {
    const memo = createTranslator();
    const objects = world();
    const first = memo(snapshotOf([...objects.values()]), OPTIONS);
    objects.set('Ingress/one', simpleIngress('one', 'foo.example.com', [['/', 'a'], ['/b', 'a']], { created: '2024-01-01T00:00:00Z' }));
    const second = memo(snapshotOf([...objects.values()]), OPTIONS);
    const before = byId(first);
    const after = byId(second);
    assert.equal(after.get('default/one|foo.example.com|Prefix|/'), before.get('default/one|foo.example.com|Prefix|/'));
    assert.notEqual(after.get('default/one|foo.example.com|Prefix|/b'), before.get('default/one|foo.example.com|Prefix|/b'));
    assert.equal(after.get('default/one|foo.example.com|Prefix|/b')!.backend.key, 'default/a:80');
  });

  test('an EndpointSlice change renews only the routes of that Service', () => {
    const memo = createTranslator();
    const objects = world();
    const first = memo(snapshotOf([...objects.values()]), OPTIONS);
    objects.set('EndpointSlice/a-1', slice('a-1', 'a', [{ ip: '10.0.0.1' }, { ip: '10.0.0.3' }]));
    const second = memo(snapshotOf([...objects.values()]), OPTIONS);
    const before = byId(first);
    for (const route of second.routes) {
      if (route.backend.service === 'a') {
        assert.notEqual(route, before.get(route.id));
        assert.deepEqual(route.backend.addresses, [{ host: '10.0.0.1', port: 8080 }, { host: '10.0.0.3', port: 8080 }]);
      } else {
        assert.equal(route, before.get(route.id), route.id);
      }
    }
  });

  test('a new EndpointSlice object with the same ready addresses changes no route', () => {
    const memo = createTranslator();
    const objects = world();
    const first = memo(snapshotOf([...objects.values()]), OPTIONS);
    objects.set('EndpointSlice/a-1', slice('a-1', 'a', [{ ip: '10.0.0.2' }, { ip: '10.0.0.1' }, { ip: '10.0.0.9', ready: false }]));
    objects.set('EndpointSlice/b-2', slice('b-2', 'b', [{ ip: '10.0.1.7', ready: false }]));
    const second = memo(snapshotOf([...objects.values()]), OPTIONS);
    const before = byId(first);
    for (const route of second.routes) assert.equal(route, before.get(route.id), route.id);
  });

  test('a Secret change is noticed by the Ingresses that use it', () => {
    const memo = createTranslator();
    const objects = world();
    const first = memo(snapshotOf([...objects.values()]), OPTIONS);
    assert.equal(first.certificates.get('bar.example.com')!.cert, certs.foo.cert);
    objects.set('Secret/foo-tls', tlsSecret('foo-tls', certs.wildcard.cert, certs.wildcard.key));
    const second = memo(snapshotOf([...objects.values()]), OPTIONS);
    assert.equal(second.certificates.get('bar.example.com')!.cert, certs.wildcard.cert);
    objects.delete('Secret/foo-tls');
    const third = memo(snapshotOf([...objects.values()]), OPTIONS);
    assert.equal(third.certificates.size, 0);
    assert.ok(third.problems.some((p) => p.reason === 'TLSSecretNotFound' && p.object.name === 'two'));
  });

  test('a Secret read by a policy annotation is a dependency of the Ingress', () => {
    const memo = createTranslator();
    const objects = world();
    objects.set(
      'Ingress/one',
      simpleIngress('one', 'foo.example.com', [['/', 'a']], {
        created: '2024-01-01T00:00:00Z',
        annotations: { 'portico.dev/upstream-protocol': 'https', 'portico.dev/upstream-ca-secret': 'pods-ca' },
      }),
    );
    const caOf = (config: RoutingConfig) => {
      const route = config.routes.find((r) => r.id === 'default/one|foo.example.com|Prefix|/')!;
      return route.policies.map((p) => (p.config as { ca?: string }).ca).find((ca) => ca !== undefined);
    };
    const check = () => {
      const snapshot = snapshotOf([...objects.values()]);
      const config = memo(snapshot, OPTIONS);
      assert.deepEqual(content(config), content(translate(snapshot, OPTIONS)));
      return config;
    };
    const missing = check();
    assert.equal(caOf(missing), undefined);
    assert.ok(missing.problems.some((p) => p.object.name === 'one' && p.message.includes('Secret default/pods-ca not found')));

    // A manifest Secret with stringData is seen as the API server would serve it (base64 data).
    objects.set('Secret/pods-ca', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pods-ca', namespace: 'default' }, stringData: { 'ca.crt': certs.foo.cert } } as KubeObject);
    assert.equal(caOf(check()), certs.foo.cert);

    objects.set('Secret/pods-ca', { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'pods-ca', namespace: 'default' }, data: { 'ca.crt': Buffer.from(certs.bar.cert).toString('base64') } } as KubeObject);
    assert.equal(caOf(check()), certs.bar.cert);
  });

  test("a status write (a new object from the API server, same spec) keeps the Ingress' entry, and holds no pre-status version", async () => {
    const store = new ObjectStore();
    const fromApi = (resourceVersion: string, extra: Partial<Ingress> = {}, annotations?: Record<string, string>): Ingress => {
      const base = simpleIngress('one', 'foo.example.com', [['/', 'a']], { created: '2024-01-01T00:00:00Z' });
      return deepFreeze({ ...base, ...extra, metadata: { ...base.metadata, resourceVersion, ...(annotations ? { annotations } : {}) } });
    };
    for (const o of [ingressClass('portico'), service('a'), slice('a-1', 'a', [{ ip: '10.0.0.1' }])]) store.upsert(o);
    store.upsert(fromApi('1'));
    const memo = createTranslator();
    const first = memo(store, OPTIONS);
    assert.equal(memo.ingressesTranslated(), 1);
    const preStatus = new WeakRef(store.ingresses.get('default/one')!);
    store.upsert(fromApi('2', { status: { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } } }));
    // A status-only change is not translated (the controller skips it), and the translator
    // keeps no reference to the version before it.
    await new Promise((resolve) => setImmediate(resolve));
    collectGarbage();
    assert.equal(preStatus.deref(), undefined, 'the pre-status object was collected');
    // Everything checked again (a class change, an option, a re-list): the entry is current.
    const full = memo(store, OPTIONS);
    assert.equal(memo.ingressesTranslated(), 1, 'not translated again');
    assert.equal(full.routes[0], first.routes[0]);
    // What routing reads changed: translated.
    store.upsert(fromApi('3', {}, { 'portico.dev/response-timeout': '5s' }));
    memo(store, OPTIONS, [{ type: 'updated', kind: 'Ingress', key: 'default/one' }]);
    assert.equal(memo.ingressesTranslated(), 2);
  });

  test('the same snapshot twice gives identical routes and equal problems', () => {
    const memo = createTranslator();
    const snapshot = snapshotOf([...world().values()]);
    const first = memo(snapshot, OPTIONS);
    const second = memo(snapshot, OPTIONS);
    assert.equal(second.routes.length, first.routes.length);
    second.routes.forEach((r, i) => assert.equal(r, first.routes[i]));
    assert.deepEqual(second.problems, first.problems);
    assert.ok(first.problems.length > 0);
  });

  test('an IngressClass change re-checks every Ingress but names only the hosts whose routes changed (workers patch, not rebuild)', () => {
    const memo = createTranslator();
    const objects = world();
    objects.set('Ingress/classless', simpleIngress('classless', 'nc.example.com', [['/', 'a']], { noClass: true }));
    const classChange: ObjectChange[] = [{ type: 'updated', kind: 'IngressClass', key: 'portico' }];
    const step = (name: string, expectedHosts: string[]) => {
      const snapshot = snapshotOf([...objects.values()]);
      const config = memo(snapshot, OPTIONS, classChange);
      assert.deepEqual(content(config), content(translate(snapshot, OPTIONS)), `${name}: the same output as a fresh translation`);
      assert.ok(config.delta !== undefined, `${name}: a delta of the previous config`);
      assert.deepEqual([...config.delta.hosts].sort(), expectedHosts, `${name}: the hosts that changed`);
      return config;
    };
    memo(snapshotOf([...objects.values()]), OPTIONS);
    step('the class becomes the default: the Ingress without a class is served', (objects.set('IngressClass/portico', ingressClass('portico', { isDefault: true })), ['nc.example.com']));
    step('another class of portico: nothing served changes', (objects.set('IngressClass/second', ingressClass('second')), []));
    const last = step('no longer the default', (objects.set('IngressClass/portico', ingressClass('portico')), ['nc.example.com']));
    assert.ok(!last.routes.some((r) => r.host === 'nc.example.com'));
  });
});
