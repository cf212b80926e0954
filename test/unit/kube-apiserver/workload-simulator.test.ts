// simulateWorkload(): the workload's pods come and go with spec.replicas, as a real
// cluster's controllers show them through EndpointSlices and the workload's status.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { kubeConfigFor, raw, recordWatch } from './helpers.ts';

function deployment(name: string, replicas: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: { replicas, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } } } },
  };
}

function service(name: string) {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] } };
}

async function scale(server: FakeKubeApiServer, name: string, replicas: number, plural = 'deployments'): Promise<void> {
  const res = await raw(server, 'PATCH', `/apis/apps/v1/namespaces/default/${plural}/${name}/scale`, {
    contentType: 'application/merge-patch+json',
    body: { spec: { replicas } },
  });
  assert.equal(res.status, 200, res.text);
}

async function slicesOf(server: FakeKubeApiServer, svc: string): Promise<any[]> {
  const res = await raw(server, 'GET', `/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?labelSelector=kubernetes.io%2Fservice-name%3D${svc}`);
  return res.json().items;
}

describe('test API server: simulateWorkload', () => {
  let server: FakeKubeApiServer;

  before(async () => {
    server = await FakeKubeApiServer.start();
  });
  after(() => server.stop());

  test('publishes ready endpoints after a scale-up and withdraws them at once on scale to zero', async () => {
    const svc = server.apply(service('web'));
    server.apply(deployment('web', 0));
    const seen: number[] = [];
    const sim = server.simulateWorkload({
      kind: 'Deployment',
      name: 'web',
      service: 'web',
      portName: 'http',
      addresses: [{ ip: '127.0.0.1', port: 8080 }, { ip: '127.0.0.2', port: 8080 }, { ip: '127.0.0.3', port: 8080 }],
      bootDelayMs: 20,
      onScale: (replicas) => seen.push(replicas),
    });
    try {
      let [slice] = await slicesOf(server, 'web');
      assert.equal(slice.metadata.name, sim.sliceNames[0]);
      assert.deepEqual(slice.endpoints, [], 'the slice exists, empty, while scaled to zero');
      assert.equal(slice.metadata.labels['endpointslice.kubernetes.io/managed-by'], 'endpointslice-controller.k8s.io');
      assert.equal(slice.metadata.ownerReferences[0].uid, svc.metadata.uid);

      await scale(server, 'web', 2);
      await sim.waitForEndpoints(2);
      [slice] = await slicesOf(server, 'web');
      assert.equal(slice.addressType, 'IPv4');
      assert.deepEqual(slice.ports, [{ name: 'http', port: 8080, protocol: 'TCP' }]);
      assert.deepEqual(slice.endpoints.map((e: any) => e.addresses[0]), ['127.0.0.1', '127.0.0.2']);
      assert.ok(slice.endpoints.every((e: any) => e.conditions.ready === true));
      const running = server.get('Deployment', 'default', 'web')!;
      assert.deepEqual(running.status, { observedGeneration: running.metadata.generation, replicas: 2, updatedReplicas: 2, readyReplicas: 2, availableReplicas: 2 });

      await scale(server, 'web', 0);
      // No waiting: the endpoints are gone by the time the scale write is answered.
      [slice] = await slicesOf(server, 'web');
      assert.deepEqual(slice.endpoints, []);
      assert.equal(sim.readyEndpoints, 0);
      const stopped = server.get('Deployment', 'default', 'web')!;
      assert.equal((stopped.status as { replicas?: number }).replicas, undefined, 'zero counts are omitted, as on the wire');

      // More replicas than addresses: every address is published.
      await scale(server, 'web', 5);
      await sim.waitForEndpoints(3);
      assert.deepEqual(sim.scaleHistory, [0, 2, 0, 5]);
      assert.deepEqual(seen, [0, 2, 0, 5]);
    } finally {
      sim.stop();
    }
  });

  test('a scale-up superseded before its boot delay ran never publishes', async () => {
    server.apply(service('flap'));
    const created = server.apply(deployment('flap', 0));
    const sim = server.simulateWorkload({
      kind: 'Deployment',
      name: 'flap',
      service: 'flap',
      addresses: [{ ip: '10.0.0.1', port: 80 }, { ip: '10.0.0.2', port: 80 }],
      bootDelayMs: 50,
    });
    const kc = kubeConfigFor(server);
    const watch = await recordWatch(kc, '/apis/discovery.k8s.io/v1/namespaces/default/endpointslices', {
      labelSelector: 'kubernetes.io/service-name=flap',
      resourceVersion: created.metadata.resourceVersion,
    });
    try {
      await scale(server, 'flap', 1);
      await scale(server, 'flap', 0);
      // A later scale-up boots after the cancelled one would have: if it were not
      // cancelled, the watch would show a slice with one endpoint first.
      await scale(server, 'flap', 2);
      await sim.waitForEndpoints(2);
      await watch.until((events) => events.some((e) => e.object.endpoints?.length === 2), 5000, 'the 2-endpoint slice');
      assert.deepEqual(watch.events.map((e) => e.object.endpoints?.length ?? 0), [0, 2]);
      assert.deepEqual(sim.scaleHistory, [0, 1, 0, 2]);
    } finally {
      watch.stop();
      sim.stop();
    }
  });

  test('follows any write of spec.replicas (update of a StatefulSet), one slice per port, and stops following on stop()', async () => {
    const apps = kubeConfigFor(server).makeApiClient(AppsV1Api);
    const sts = await apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: { metadata: { name: 'db' }, spec: { replicas: 0, serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: { metadata: { labels: { app: 'db' } } } } } as never,
    });
    const sim = server.simulateWorkload({
      kind: 'StatefulSet',
      name: 'db',
      service: 'db',
      addresses: [{ ip: '127.0.0.1', port: 7001 }, { ip: '127.0.0.1', port: 7002 }],
    });
    assert.equal(sim.sliceNames.length, 2);
    // The simulated controller writes status too (observedGeneration): replace the current version.
    const current = await apps.readNamespacedStatefulSet({ name: 'db', namespace: 'default' });
    assert.equal(current.metadata?.uid, sts.metadata?.uid);
    await apps.replaceNamespacedStatefulSet({ name: 'db', namespace: 'default', body: { ...current, spec: { ...current.spec!, replicas: 2 } } });
    await sim.waitForEndpoints(2);
    const slices = await slicesOf(server, 'db');
    assert.deepEqual(
      slices.map((s) => [s.ports[0].port, s.endpoints.map((e: any) => e.targetRef.name)]).sort(),
      [[7001, ['db-0']], [7002, ['db-1']]],
    );
    const status = (await apps.readNamespacedStatefulSetStatus({ name: 'db', namespace: 'default' })).status;
    assert.equal(status?.readyReplicas, 2);
    assert.equal(status?.availableReplicas, 2);

    sim.stop();
    await scale(server, 'db', 0, 'statefulsets');
    assert.deepEqual(sim.scaleHistory, [0, 2], 'a stopped simulation observes nothing');
    assert.equal((await slicesOf(server, 'db')).reduce((n, s) => n + s.endpoints.length, 0), 2, 'a stopped simulation writes nothing');
    await assert.rejects(sim.waitForEndpoints(0), /stopped/);
  });

  test('deleting the workload withdraws its endpoints', async () => {
    server.apply(deployment('gone', 1));
    const sim = server.simulateWorkload({ kind: 'Deployment', name: 'gone', service: 'gone', addresses: [{ ip: '127.0.0.1', port: 9000 }] });
    try {
      await sim.waitForEndpoints(1);
      const res = await raw(server, 'DELETE', '/apis/apps/v1/namespaces/default/deployments/gone');
      assert.equal(res.status, 200);
      assert.deepEqual((await slicesOf(server, 'gone'))[0].endpoints, []);
      assert.deepEqual(sim.scaleHistory, [1, 0]);
    } finally {
      sim.stop();
    }
  });
});
