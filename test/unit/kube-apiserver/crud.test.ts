// The test API server's verbs through @kubernetes/client-node's generated clients, plus
// raw requests for wire details the clients hide.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CoordinationV1Api, CoreV1Api, NetworkingV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { apiError, ingress, kubeConfigFor, raw } from './helpers.ts';

describe('test API server: objects', () => {
  let server: FakeKubeApiServer;
  let net: NetworkingV1Api;
  let core: CoreV1Api;
  let coordination: CoordinationV1Api;

  before(async () => {
    server = await FakeKubeApiServer.start({ token: 'secret-token' });
    const kc = kubeConfigFor(server);
    net = kc.makeApiClient(NetworkingV1Api);
    core = kc.makeApiClient(CoreV1Api);
    coordination = kc.makeApiClient(CoordinationV1Api);
  });
  after(() => server.stop());

  test('create sets server metadata and get returns the object', async () => {
    const before = Number(server.resourceVersion);
    const created = await net.createNamespacedIngress({ namespace: 'default', body: ingress('create-get') as never });
    assert.equal(created.metadata?.namespace, 'default');
    assert.equal(created.metadata?.generation, 1);
    assert.match(created.metadata?.uid ?? '', /^[0-9a-f-]{36}$/);
    assert.ok(created.metadata?.creationTimestamp instanceof Date);
    assert.ok(Number(created.metadata?.resourceVersion) > before);
    const got = await net.readNamespacedIngress({ name: 'create-get', namespace: 'default' });
    assert.equal(got.metadata?.uid, created.metadata?.uid);
    assert.equal(got.spec?.defaultBackend?.service?.name, 'web');
    // Status is reset on create for kinds with a status subresource.
    const withStatus = { ...ingress('create-status'), status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } };
    const c2 = await net.createNamespacedIngress({ namespace: 'default', body: withStatus as never });
    assert.deepEqual(c2.status?.loadBalancer?.ingress ?? [], []);
  });

  test('errors are Status objects with the real reasons and codes', async () => {
    await assert.rejects(net.readNamespacedIngress({ name: 'missing', namespace: 'default' }), apiError(404, 'NotFound'));
    await net.createNamespacedIngress({ namespace: 'default', body: ingress('dup') as never });
    await assert.rejects(net.createNamespacedIngress({ namespace: 'default', body: ingress('dup') as never }), apiError(409, 'AlreadyExists'));
    const res = await raw(server, 'GET', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/missing');
    assert.equal(res.status, 404);
    assert.deepEqual(res.json(), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'ingresses.networking.k8s.io "missing" not found',
      reason: 'NotFound',
      details: { name: 'missing', group: 'networking.k8s.io', kind: 'ingresses' },
      code: 404,
    });
    const invalid = await raw(server, 'POST', '/apis/networking.k8s.io/v1/namespaces/default/ingresses', { body: { metadata: { name: 'Not_Valid' } } });
    assert.equal(invalid.status, 422);
    assert.equal(invalid.json().reason, 'Invalid');
    const wrongNs = await raw(server, 'POST', '/apis/networking.k8s.io/v1/namespaces/default/ingresses', { body: ingress('x', { namespace: 'other' }) });
    assert.equal(wrongNs.status, 400);
    assert.equal((await raw(server, 'GET', '/apis/networking.k8s.io/v1/nothings')).status, 404);
  });

  test('generateName creates a unique name from the prefix', async () => {
    const body = { metadata: { generateName: 'gen-' }, spec: {} };
    const a = await net.createNamespacedIngress({ namespace: 'default', body: body as never });
    const b = await net.createNamespacedIngress({ namespace: 'default', body: body as never });
    assert.match(a.metadata!.name!, /^gen-[a-z0-9]{5}$/);
    assert.notEqual(a.metadata!.name, b.metadata!.name);
  });

  test('update with a stale resourceVersion is a 409 Conflict; a current one succeeds', async () => {
    const created = await net.createNamespacedIngress({ namespace: 'default', body: ingress('upd') as never });
    const first = structuredClone(created);
    first.spec!.defaultBackend!.service!.name = 'first';
    const updated = await net.replaceNamespacedIngress({ name: 'upd', namespace: 'default', body: first });
    assert.equal(updated.metadata?.generation, 2, 'spec change bumps generation');
    assert.ok(Number(updated.metadata!.resourceVersion) > Number(created.metadata!.resourceVersion));
    const stale = structuredClone(created);
    stale.spec!.defaultBackend!.service!.name = 'stale';
    await assert.rejects(net.replaceNamespacedIngress({ name: 'upd', namespace: 'default', body: stale }), apiError(409, 'Conflict'));
    // Without a resourceVersion the update is unconditional.
    const labelsOnly = { ...ingress('upd', { service: 'first', labels: { a: 'b' } }) };
    const unconditional = await net.replaceNamespacedIngress({ name: 'upd', namespace: 'default', body: labelsOnly as never });
    assert.equal(unconditional.metadata?.labels?.a, 'b');
    assert.equal(unconditional.metadata?.generation, 2, 'metadata change keeps generation');
    // A write that changes nothing keeps the resourceVersion.
    const again = await net.replaceNamespacedIngress({ name: 'upd', namespace: 'default', body: unconditional });
    assert.equal(again.metadata?.resourceVersion, unconditional.metadata?.resourceVersion);
    await assert.rejects(net.replaceNamespacedIngress({ name: 'nope', namespace: 'default', body: ingress('nope') as never }), apiError(404, 'NotFound'));
  });

  test('the three patch formats', async () => {
    await net.createNamespacedIngress({ namespace: 'default', body: ingress('patched', { labels: { keep: 'yes', drop: 'yes' } }) as never });
    // client-node's default for patch is JSON Patch.
    const jsonPatched = await net.patchNamespacedIngress({
      name: 'patched',
      namespace: 'default',
      body: [
        { op: 'replace', path: '/spec/defaultBackend/service/name', value: 'json' },
        { op: 'add', path: '/metadata/labels/added', value: 'x' },
      ],
    });
    assert.equal(jsonPatched.spec?.defaultBackend?.service?.name, 'json');
    assert.equal(jsonPatched.metadata?.labels?.added, 'x');

    const merged = await net.patchNamespacedIngress(
      { name: 'patched', namespace: 'default', body: { metadata: { labels: { drop: null } }, spec: { defaultBackend: { service: { name: 'merge' } } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(merged.spec?.defaultBackend?.service?.name, 'merge');
    assert.equal(merged.spec?.defaultBackend?.service?.port?.number, 80, 'merge keeps siblings');
    assert.deepEqual(merged.metadata?.labels, { keep: 'yes', added: 'x' });

    const strategic = await net.patchNamespacedIngress(
      { name: 'patched', namespace: 'default', body: { spec: { defaultBackend: { service: { name: 'strategic' } } } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    assert.equal(strategic.spec?.defaultBackend?.service?.name, 'strategic');

    const failedTest = await raw(server, 'PATCH', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/patched', {
      contentType: 'application/json-patch+json',
      body: [{ op: 'test', path: '/spec/defaultBackend/service/name', value: 'wrong' }],
    });
    assert.equal(failedTest.status, 422);
    const stale = await raw(server, 'PATCH', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/patched', {
      contentType: 'application/merge-patch+json',
      body: { metadata: { resourceVersion: '1' }, spec: { defaultBackend: null } },
    });
    assert.equal(stale.status, 409, 'a resourceVersion in a patch is a precondition');
    const apply = await raw(server, 'PATCH', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/patched', { contentType: 'application/apply-patch+yaml', body: '{}' });
    assert.equal(apply.status, 415);
  });

  test('status subresource: the main resource ignores status, /status ignores everything else', async () => {
    await net.createNamespacedIngress({ namespace: 'default', body: ingress('st') as never });
    const viaMain = await net.patchNamespacedIngress(
      { name: 'st', namespace: 'default', body: { status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.deepEqual(viaMain.status?.loadBalancer?.ingress ?? [], []);

    const viaStatus = await net.patchNamespacedIngressStatus(
      { name: 'st', namespace: 'default', body: { spec: { defaultBackend: null }, status: { loadBalancer: { ingress: [{ ip: '10.0.0.2' }] } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(viaStatus.status?.loadBalancer?.ingress?.[0]?.ip, '10.0.0.2');
    assert.equal(viaStatus.spec?.defaultBackend?.service?.name, 'web', 'spec untouched through /status');
    assert.equal(viaStatus.metadata?.generation, 1, 'status changes keep generation');

    const replaced = await net.replaceNamespacedIngressStatus({
      name: 'st',
      namespace: 'default',
      body: { ...viaStatus, status: { loadBalancer: { ingress: [{ hostname: 'lb.example' }] } } },
    });
    assert.equal(replaced.status?.loadBalancer?.ingress?.[0]?.hostname, 'lb.example');
    const read = await net.readNamespacedIngressStatus({ name: 'st', namespace: 'default' });
    assert.equal(read.status?.loadBalancer?.ingress?.[0]?.hostname, 'lb.example');
    // No status subresource on IngressClass.
    assert.equal((await raw(server, 'GET', '/apis/networking.k8s.io/v1/ingressclasses/x/status')).status, 404);
  });

  test('delete answers as the real registries do; finalizers defer the deletion until they are removed', async () => {
    const created = await net.createNamespacedIngress({ namespace: 'default', body: ingress('del') as never });
    const deleted = await net.deleteNamespacedIngress({ name: 'del', namespace: 'default' });
    assert.equal(deleted.status, 'Success');
    assert.deepEqual({ ...deleted.details }, { name: 'del', group: 'networking.k8s.io', kind: 'ingresses', uid: created.metadata?.uid });
    // Services return the deleted object itself.
    await core.createNamespacedService({ namespace: 'default', body: { metadata: { name: 'del-svc' }, spec: {} } });
    const svc = await raw(server, 'DELETE', '/api/v1/namespaces/default/services/del-svc');
    assert.deepEqual([svc.status, svc.json().kind, svc.json().metadata.name], [200, 'Service', 'del-svc']);
    await assert.rejects(net.readNamespacedIngress({ name: 'del', namespace: 'default' }), apiError(404));
    await assert.rejects(net.deleteNamespacedIngress({ name: 'del', namespace: 'default' }), apiError(404, 'NotFound'));

    const fin = { ...ingress('fin'), metadata: { ...ingress('fin').metadata, finalizers: ['example.com/hold'] } };
    await net.createNamespacedIngress({ namespace: 'default', body: fin as never });
    const pending = await raw(server, 'DELETE', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/fin');
    assert.equal(pending.status, 202);
    const marked = await net.readNamespacedIngress({ name: 'fin', namespace: 'default' });
    assert.ok(marked.metadata?.deletionTimestamp);
    await net.patchNamespacedIngress({ name: 'fin', namespace: 'default', body: [{ op: 'remove', path: '/metadata/finalizers' }] });
    await assert.rejects(net.readNamespacedIngress({ name: 'fin', namespace: 'default' }), apiError(404));
  });

  test('cluster-scoped IngressClasses and core Services, Secrets', async () => {
    await net.createIngressClass({ body: { metadata: { name: 'portico' }, spec: { controller: 'example.com/portico' } } });
    const classes = await net.listIngressClass({});
    assert.deepEqual(classes.items.map((c) => c.metadata?.name), ['portico']);
    assert.equal(classes.items[0]?.metadata?.namespace, undefined);
    await core.createNamespacedService({ namespace: 'apps', body: { metadata: { name: 'svc' }, spec: { ports: [{ port: 80 }] } } });
    assert.equal((await core.readNamespacedService({ name: 'svc', namespace: 'apps' })).spec?.ports?.[0]?.port, 80);
    const namespaces = (await core.listNamespace({})).items.map((n) => n.metadata?.name);
    assert.ok(namespaces.includes('apps') && namespaces.includes('default'), 'namespaces exist implicitly');
    await core.createNamespacedSecret({ namespace: 'apps', body: { metadata: { name: 'tls' }, type: 'kubernetes.io/tls', data: { 'tls.crt': '', 'tls.key': '' } } });
    await core.createNamespacedSecret({ namespace: 'apps', body: { metadata: { name: 'opaque' }, type: 'Opaque' } });
    const tls = await core.listSecretForAllNamespaces({ fieldSelector: 'type=kubernetes.io/tls' });
    assert.deepEqual(tls.items.map((s) => s.metadata?.name), ['tls']);
    await assert.rejects(core.listSecretForAllNamespaces({ fieldSelector: 'spec.nothing=1' }), apiError(400, 'BadRequest'));
  });

  test('Leases: create, get, update with optimistic concurrency', async () => {
    const lease = await coordination.createNamespacedLease({
      namespace: 'kube-system',
      body: { metadata: { name: 'leader' }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 } },
    });
    const mine = await coordination.replaceNamespacedLease({
      name: 'leader',
      namespace: 'kube-system',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: 'b' } },
    });
    assert.equal(mine.spec?.holderIdentity, 'b');
    await assert.rejects(
      coordination.replaceNamespacedLease({ name: 'leader', namespace: 'kube-system', body: { ...lease, spec: { ...lease.spec, holderIdentity: 'c' } } }),
      apiError(409, 'Conflict'),
    );
    assert.equal((await coordination.readNamespacedLease({ name: 'leader', namespace: 'kube-system' })).spec?.holderIdentity, 'b');
  });

  test('Events: create, merge-patch and list (core and events.k8s.io)', async () => {
    const event = await core.createNamespacedEvent({
      namespace: 'default',
      body: {
        metadata: { generateName: 'web.' },
        involvedObject: { kind: 'Ingress', name: 'web', namespace: 'default' },
        reason: 'ServiceNotFound',
        message: 'no service',
        type: 'Warning',
        count: 1,
      },
    });
    const patched = await raw(server, 'PATCH', `/api/v1/namespaces/default/events/${event.metadata!.name}`, {
      contentType: 'application/merge-patch+json',
      body: { count: 2 },
    });
    assert.equal(patched.json().count, 2);
    const listed = await core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=web,reason=ServiceNotFound' });
    assert.equal(listed.items.length, 1);
    assert.equal(listed.items[0]?.count, 2);
    const created = await raw(server, 'POST', '/apis/events.k8s.io/v1/namespaces/default/events', {
      body: { metadata: { name: 'new-style' }, regarding: { kind: 'Ingress', name: 'web' }, reason: 'Sync', note: 'ok', type: 'Normal', eventTime: new Date().toISOString() },
    });
    assert.equal(created.status, 201);
    assert.equal((await raw(server, 'GET', '/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.name%3Dweb')).json().items.length, 1);
  });

  test('discovery documents and /version', async () => {
    assert.deepEqual((await raw(server, 'GET', '/api')).json().versions, ['v1']);
    const groups = (await raw(server, 'GET', '/apis')).json().groups.map((g: { name: string }) => g.name);
    for (const g of ['networking.k8s.io', 'discovery.k8s.io', 'coordination.k8s.io', 'events.k8s.io']) assert.ok(groups.includes(g), g);
    const networking = (await raw(server, 'GET', '/apis/networking.k8s.io/v1')).json();
    assert.equal(networking.kind, 'APIResourceList');
    const ingresses = networking.resources.find((r: { name: string }) => r.name === 'ingresses');
    assert.deepEqual({ namespaced: ingresses.namespaced, kind: ingresses.kind, watch: ingresses.verbs.includes('watch') }, { namespaced: true, kind: 'Ingress', watch: true });
    assert.ok(networking.resources.some((r: { name: string }) => r.name === 'ingresses/status'));
    const core = (await raw(server, 'GET', '/api/v1')).json();
    assert.equal(core.resources.find((r: { name: string }) => r.name === 'namespaces').namespaced, false);
    assert.equal((await raw(server, 'GET', '/version')).json().major, '1');
  });

  test('requests without the bearer token get 401 Unauthorized', async () => {
    for (const token of [null, 'wrong-token']) {
      const res = await raw(server, 'GET', '/api/v1/namespaces/default/services', { token });
      assert.equal(res.status, 401);
      assert.equal(res.json().reason, 'Unauthorized');
    }
    const kc = kubeConfigFor(server);
    (kc.getCurrentUser() as { token?: string }).token = 'wrong';
    await assert.rejects(kc.makeApiClient(CoreV1Api).listNamespacedService({ namespace: 'default' }), apiError(401));
  });
});
