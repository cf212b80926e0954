import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ObjectStore, type StoreChangeEvent } from '../../../src/sources/store.ts';
import { sanitize, type RoutingObject } from '../../../src/sources/sanitize.ts';
import type { EndpointSlice, KubeObject } from '../../../src/model/k8s.ts';

function obj(raw: unknown): RoutingObject {
  const { object, error } = sanitize(raw);
  if (!object) throw new Error(error ?? 'ignored');
  return object;
}

function service(name: string, port = 80, extra: { namespace?: string; resourceVersion?: string } = {}): RoutingObject {
  return obj({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: extra.namespace, resourceVersion: extra.resourceVersion }, spec: { ports: [{ name: 'http', port }] } });
}

function slice(name: string, serviceName: string | undefined, ip = '10.0.0.1', namespace = 'default'): EndpointSlice {
  return obj({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { name, namespace, labels: serviceName ? { 'kubernetes.io/service-name': serviceName } : {} },
    addressType: 'IPv4',
    endpoints: [{ addresses: [ip] }],
    ports: [{ name: 'http', port: 8080 }],
  }) as EndpointSlice;
}

function recording(store: ObjectStore): StoreChangeEvent[] {
  const events: StoreChangeEvent[] = [];
  store.onChange((e) => events.push(e));
  return events;
}

describe('ObjectStore: upsert and delete', () => {
  test('an added object is readable by kind and key, and announced once', () => {
    const store = new ObjectStore();
    const events = recording(store);
    const svc = service('web', 80, { namespace: 'shop' });
    assert.equal(store.upsert(svc), true);
    assert.equal(store.get('Service', 'shop/web'), svc);
    assert.equal(store.services.get('shop/web'), svc);
    assert.equal(store.all('Service').size, 1);
    assert.deepEqual(events, [{ version: 1, changes: [{ type: 'added', kind: 'Service', key: 'shop/web' }] }]);
    assert.equal(store.version, 1);
  });

  test('cluster-scoped IngressClasses are keyed by name', () => {
    const store = new ObjectStore();
    store.upsert(obj({ apiVersion: 'networking.k8s.io/v1', kind: 'IngressClass', metadata: { name: 'portico' }, spec: { controller: 'c' } }));
    assert.ok(store.ingressClasses.has('portico'));
  });

  test('re-applying an identical object (no resourceVersion) changes nothing and keeps the stored object', () => {
    const store = new ObjectStore();
    const first = service('web');
    store.upsert(first);
    const events = recording(store);
    assert.equal(store.upsert(service('web')), false);
    assert.equal(store.get('Service', 'default/web'), first, 'same identity, so memoized translation stays valid');
    assert.deepEqual(events, []);
    assert.equal(store.version, 1);
  });

  test('with resourceVersions on both sides, they decide', () => {
    const store = new ObjectStore();
    store.upsert(service('web', 80, { resourceVersion: '5' }));
    const events = recording(store);
    assert.equal(store.upsert(service('web', 80, { resourceVersion: '5' })), false);
    assert.equal(store.upsert(service('web', 80, { resourceVersion: '6' })), true);
    assert.deepEqual(events.map((e) => e.changes), [[{ type: 'updated', kind: 'Service', key: 'default/web' }]]);
  });

  test('a changed object replaces the stored one', () => {
    const store = new ObjectStore();
    store.upsert(service('web', 80));
    const events = recording(store);
    const changed = service('web', 81);
    assert.equal(store.upsert(changed), true);
    assert.equal(store.get('Service', 'default/web'), changed);
    assert.equal(events[0]!.changes[0]!.type, 'updated');
  });

  test('delete removes and announces; deleting what is not there is silent', () => {
    const store = new ObjectStore();
    store.upsert(service('web'));
    const events = recording(store);
    assert.equal(store.delete('Service', 'default/nope'), false);
    assert.equal(store.delete('Service', 'default/web'), true);
    assert.equal(store.get('Service', 'default/web'), undefined);
    assert.deepEqual(events, [{ version: 2, changes: [{ type: 'deleted', kind: 'Service', key: 'default/web' }] }]);
  });

  test('unsubscribing stops the notifications', () => {
    const store = new ObjectStore();
    const seen: number[] = [];
    const off = store.onChange((e) => seen.push(e.version));
    store.upsert(service('a'));
    off();
    store.upsert(service('b'));
    assert.deepEqual(seen, [1]);
  });

  test('kinds the store does not keep are refused', () => {
    const store = new ObjectStore();
    const deployment: KubeObject = { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'x', namespace: 'default' } };
    assert.throws(() => store.upsert(deployment), /does not keep Deployment/);
  });
});

describe('ObjectStore: endpointSlicesByService', () => {
  test('slices are indexed by the namespace and kubernetes.io/service-name label', () => {
    const store = new ObjectStore();
    const a = slice('web-1', 'web');
    const b = slice('web-2', 'web', '10.0.0.2');
    const other = slice('api-1', 'api', '10.0.0.3', 'shop');
    const unlabelled = slice('orphan', undefined);
    for (const s of [a, b, other, unlabelled]) store.upsert(s);
    assert.deepEqual([...store.endpointSlicesByService.keys()].sort(), ['default/web', 'shop/api']);
    assert.deepEqual([...store.endpointSlicesByService.get('default/web')!.values()], [a, b]);
    assert.equal(store.endpointSlicesByService.get('shop/api')!.get('shop/api-1'), other);
    assert.equal(store.endpointSlices.size, 4, 'unlabelled slices are stored, just not indexed');
  });

  test('a change to a slice replaces its Service map and leaves the others as they were', () => {
    const store = new ObjectStore();
    store.upsert(slice('web-1', 'web'));
    store.upsert(slice('api-1', 'api'));
    const webBefore = store.endpointSlicesByService.get('default/web');
    const apiBefore = store.endpointSlicesByService.get('default/api');
    const updated = slice('web-1', 'web', '10.9.9.9');
    store.upsert(updated);
    const webAfter = store.endpointSlicesByService.get('default/web')!;
    assert.notEqual(webAfter, webBefore, 'new map: translation memoizes by its identity');
    assert.equal(webAfter.get('default/web-1'), updated);
    assert.equal(webBefore!.get('default/web-1')!.endpoints![0]!.addresses[0], '10.0.0.1', 'the old map is left intact for whoever still reads it');
    assert.equal(store.endpointSlicesByService.get('default/api'), apiBefore);
  });

  test('re-applying an identical slice keeps the same map', () => {
    const store = new ObjectStore();
    store.upsert(slice('web-1', 'web'));
    const before = store.endpointSlicesByService.get('default/web');
    store.upsert(slice('web-1', 'web'));
    assert.equal(store.endpointSlicesByService.get('default/web'), before);
  });

  test('a slice whose service label changes moves to the other Service', () => {
    const store = new ObjectStore();
    store.upsert(slice('s-1', 'web'));
    store.upsert(slice('s-2', 'web'));
    store.upsert(slice('s-1', 'api'));
    assert.deepEqual([...store.endpointSlicesByService.get('default/web')!.keys()], ['default/s-2']);
    assert.deepEqual([...store.endpointSlicesByService.get('default/api')!.keys()], ['default/s-1']);
    store.upsert(slice('s-2', undefined));
    assert.equal(store.endpointSlicesByService.has('default/web'), false, 'a Service left with no slice has no entry');
  });

  test('deleting the last slice of a Service removes its entry', () => {
    const store = new ObjectStore();
    store.upsert(slice('web-1', 'web'));
    store.upsert(slice('web-2', 'web'));
    store.delete('EndpointSlice', 'default/web-1');
    assert.deepEqual([...store.endpointSlicesByService.get('default/web')!.keys()], ['default/web-2']);
    store.delete('EndpointSlice', 'default/web-2');
    assert.equal(store.endpointSlicesByService.has('default/web'), false);
  });
});

describe('ObjectStore: replaceAll', () => {
  test('computes adds, updates and deletes for one kind, and announces them in one event', () => {
    const store = new ObjectStore();
    const kept = service('kept', 80);
    store.upsert(kept);
    store.upsert(service('changed', 80));
    store.upsert(service('gone', 80));
    store.upsert(slice('untouched', 'web'));
    const events = recording(store);
    const changes = store.replaceAll('Service', [service('kept', 80), service('changed', 81), service('new', 80)]);
    const summary = (cs: readonly { type: string; key: string }[]) => cs.map((c) => `${c.type} ${c.key}`).sort();
    assert.deepEqual(summary(changes), ['added default/new', 'deleted default/gone', 'updated default/changed']);
    assert.equal(events.length, 1);
    assert.deepEqual(summary(events[0]!.changes), summary(changes));
    assert.deepEqual([...store.services.keys()].sort(), ['default/changed', 'default/kept', 'default/new']);
    assert.equal(store.get('Service', 'default/kept'), kept, 'unchanged objects keep their identity');
    assert.equal(store.endpointSlices.size, 1, 'other kinds are not touched');
  });

  test('an identical re-list changes nothing and says nothing', () => {
    const store = new ObjectStore();
    store.replaceAll('EndpointSlice', [slice('a', 'web'), slice('b', 'web')]);
    const map = store.endpointSlicesByService.get('default/web');
    const events = recording(store);
    assert.deepEqual(store.replaceAll('EndpointSlice', [slice('a', 'web'), slice('b', 'web')]), []);
    assert.deepEqual(events, []);
    assert.equal(store.endpointSlicesByService.get('default/web'), map);
  });

  test('deleting slices through replaceAll updates the index', () => {
    const store = new ObjectStore();
    store.replaceAll('EndpointSlice', [slice('a', 'web'), slice('b', 'api')]);
    store.replaceAll('EndpointSlice', [slice('b', 'api')]);
    assert.equal(store.endpointSlicesByService.has('default/web'), false);
    assert.ok(store.endpointSlicesByService.has('default/api'));
  });

  test('an object of another kind is refused', () => {
    const store = new ObjectStore();
    assert.throws(() => store.replaceAll('Ingress', [service('web')]), /replaceAll\(Ingress\): got a Service/);
  });
});

describe('ObjectStore: an update from the API server shares what did not change', () => {
  function ingressFromApi(resourceVersion: string, status?: unknown, host = 'shop.example'): RoutingObject {
    return obj({
      apiVersion: 'networking.k8s.io/v1',
      kind: 'Ingress',
      metadata: { name: 'shop', namespace: 'default', uid: '0e0f7c2a-4b7e-4d0e-9d55-3c1b1c0e9f00', resourceVersion, generation: 1, annotations: { team: 'web' } },
      spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } } ] } }] },
      status,
    });
  }

  test('a status write coming back keeps the stored spec and metadata parts; the object is new, equal to what came, frozen', () => {
    const store = new ObjectStore();
    store.upsert(ingressFromApi('1'));
    const before = store.get('Ingress', 'default/shop')!;
    const events = recording(store);
    const written = ingressFromApi('2', { loadBalancer: { ingress: [{ ip: '192.0.2.1' }] } });
    assert.equal(store.upsert(written), true);
    const after = store.get('Ingress', 'default/shop')!;
    assert.deepEqual(after, written);
    assert.notEqual(after, before, 'a new object: memoization by identity sees the change');
    assert.equal(after.spec, before.spec);
    assert.equal(after.metadata.annotations, before.metadata.annotations);
    assert.equal(after.metadata.uid, before.metadata.uid);
    assert.equal(after.metadata.resourceVersion, '2');
    assert.ok(Object.isFrozen(after) && Object.isFrozen(after.metadata) && Object.isFrozen(after.status));
    assert.deepEqual(events[0]!.changes, [{ type: 'updated', kind: 'Ingress', key: 'default/shop', statusOnly: true }]);
  });

  test('a spec change shares only the unchanged parts, in the order the new object has them', () => {
    const store = new ObjectStore();
    store.upsert(ingressFromApi('1'));
    const before = store.get('Ingress', 'default/shop')!;
    const changed = ingressFromApi('2', undefined, 'shop2.example');
    store.upsert(changed);
    const after = store.get('Ingress', 'default/shop')!;
    assert.deepEqual(after, changed);
    assert.equal(JSON.stringify(after), JSON.stringify(changed));
    assert.notEqual(after.spec, before.spec);
    assert.equal(after.spec!.rules![0]!.host, 'shop2.example');
    assert.equal(after.spec!.rules![0]!.http, before.spec!.rules![0]!.http);
    assert.ok(Object.isFrozen(after.spec!.rules![0]));
  });

  test('objects without a resourceVersion (manifest files) are stored as given', () => {
    const store = new ObjectStore();
    store.upsert(service('web', 80));
    const changed = service('web', 81);
    store.upsert(changed);
    assert.equal(store.get('Service', 'default/web'), changed);
  });
});
