// Deployments and StatefulSets and their scale subresource, through raw requests (wire
// shape, Status errors) and through client-node's AppsV1Api.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AppsV1Api, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { apiError, kubeConfigFor, raw, recordWatch } from './helpers.ts';

function deployment(name: string, replicas?: number) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      ...(replicas === undefined ? {} : { replicas }),
      selector: { matchLabels: { tier: 'web', app: name } },
      template: { metadata: { labels: { tier: 'web', app: name } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
    },
  };
}

const scalePath = (name: string, plural = 'deployments') => `/apis/apps/v1/namespaces/default/${plural}/${name}/scale`;

describe('test API server: workloads and the scale subresource', () => {
  let server: FakeKubeApiServer;
  let apps: AppsV1Api;

  before(async () => {
    server = await FakeKubeApiServer.start();
    apps = kubeConfigFor(server).makeApiClient(AppsV1Api);
  });
  after(() => server.stop());

  test('apps/v1 is discovered with deployments, statefulsets and their status and scale subresources', async () => {
    const groups = (await raw(server, 'GET', '/apis')).json().groups.map((g: { name: string }) => g.name);
    assert.ok(groups.includes('apps'));
    const resources = (await raw(server, 'GET', '/apis/apps/v1')).json().resources;
    const byName = new Map(resources.map((r: { name: string }) => [r.name, r]));
    for (const name of ['deployments', 'deployments/status', 'deployments/scale', 'statefulsets', 'statefulsets/status', 'statefulsets/scale']) {
      assert.ok(byName.has(name), `${name} is discovered`);
    }
    assert.deepEqual(byName.get('deployments/scale'), {
      name: 'deployments/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'],
    });
  });

  test('spec.replicas defaults to 1 and a spec change bumps the generation', async () => {
    const created = await apps.createNamespacedDeployment({ namespace: 'default', body: deployment('defaults') as never });
    assert.equal(created.spec?.replicas, 1);
    assert.equal(created.metadata?.generation, 1);
    const sts = await apps.createNamespacedStatefulSet({
      namespace: 'default',
      body: { metadata: { name: 'db' }, spec: { serviceName: 'db', selector: { matchLabels: { app: 'db' } }, template: { metadata: { labels: { app: 'db' } } } } } as never,
    });
    assert.equal(sts.spec?.replicas, 1);
    const scaled = await apps.patchNamespacedDeployment(
      { name: 'defaults', namespace: 'default', body: { spec: { replicas: 3 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(scaled.metadata?.generation, 2);
    const labelled = await apps.patchNamespacedDeployment(
      { name: 'defaults', namespace: 'default', body: { metadata: { labels: { x: 'y' } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(labelled.metadata?.generation, 2, 'a metadata change keeps the generation');
  });

  test('GET scale is an autoscaling/v1 Scale of the parent', async () => {
    const created = server.apply({ ...deployment('shape', 2), status: { replicas: 2, readyReplicas: 2 } });
    const res = await raw(server, 'GET', scalePath('shape'));
    assert.equal(res.status, 200);
    assert.deepEqual(res.json(), {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: 'shape',
        namespace: 'default',
        uid: created.metadata.uid,
        resourceVersion: created.metadata.resourceVersion,
        creationTimestamp: created.metadata.creationTimestamp,
      },
      spec: { replicas: 2 },
      status: { replicas: 2, selector: 'app=shape,tier=web' },
    });
  });

  test('PUT scale changes only spec.replicas; a stale resourceVersion is 409', async () => {
    const created = server.apply(deployment('put', 1));
    const res = await raw(server, 'PUT', scalePath('put'), {
      body: { kind: 'Scale', apiVersion: 'autoscaling/v1', metadata: { name: 'put', resourceVersion: created.metadata.resourceVersion, labels: { ignored: 'yes' } }, spec: { replicas: 4 }, status: { replicas: 9 } },
    });
    assert.equal(res.status, 200);
    assert.equal(res.json().spec.replicas, 4);
    const after = server.get('Deployment', 'default', 'put')!;
    assert.equal((after.spec as { replicas: number }).replicas, 4);
    assert.equal(after.metadata.labels, undefined, 'labels in the Scale are ignored');
    assert.deepEqual(after.status, undefined, 'status in the Scale is ignored');
    assert.equal(after.metadata.generation, 2);
    assert.deepEqual(after.spec, { ...deployment('put', 4).spec }, 'the rest of the spec is kept');

    const stale = await raw(server, 'PUT', scalePath('put'), {
      body: { metadata: { name: 'put', resourceVersion: created.metadata.resourceVersion }, spec: { replicas: 0 } },
    });
    assert.equal(stale.status, 409);
    assert.deepEqual(stale.json(), {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Operation cannot be fulfilled on deployments.apps "put": the object has been modified; please apply your changes to the latest version and try again',
      reason: 'Conflict',
      details: { name: 'put', group: 'apps', kind: 'deployments' },
      code: 409,
    });
    assert.equal((server.get('Deployment', 'default', 'put')!.spec as { replicas: number }).replicas, 4, 'a conflict changes nothing');

    const toZero = await raw(server, 'PUT', scalePath('put'), { body: { metadata: { name: 'put' }, spec: { replicas: 0 } } });
    assert.equal(toZero.status, 200);
    assert.deepEqual(toZero.json().spec, {}, 'replicas 0 is omitted from the Scale spec (omitempty)');
    assert.equal((server.get('Deployment', 'default', 'put')!.spec as { replicas: number }).replicas, 0);

    const negative = await raw(server, 'PUT', scalePath('put'), { body: { metadata: { name: 'put' }, spec: { replicas: -1 } } });
    assert.equal(negative.status, 422);
    assert.equal(negative.json().message, 'Scale.autoscaling "put" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0');
  });

  test('PATCH scale: merge, json and strategic patches; a stale resourceVersion in the patch is 409', async () => {
    const created = server.apply(deployment('patch', 1));
    const merge = await raw(server, 'PATCH', scalePath('patch'), { contentType: 'application/merge-patch+json', body: { spec: { replicas: 2 } } });
    assert.equal(merge.status, 200);
    assert.equal(merge.json().spec.replicas, 2);
    const json = await raw(server, 'PATCH', scalePath('patch'), { contentType: 'application/json-patch+json', body: [{ op: 'replace', path: '/spec/replicas', value: 3 }] });
    assert.equal(json.json().spec.replicas, 3);
    const strategic = await raw(server, 'PATCH', scalePath('patch'), { contentType: 'application/strategic-merge-patch+json', body: { spec: { replicas: 5 } } });
    assert.equal(strategic.json().spec.replicas, 5);
    assert.equal((server.get('Deployment', 'default', 'patch')!.spec as { replicas: number }).replicas, 5);

    const stale = await raw(server, 'PATCH', scalePath('patch'), {
      contentType: 'application/merge-patch+json',
      body: { metadata: { resourceVersion: created.metadata.resourceVersion }, spec: { replicas: 0 } },
    });
    assert.equal(stale.status, 409);
    assert.equal(stale.json().reason, 'Conflict');
    const current = server.get('Deployment', 'default', 'patch')!;
    const fresh = await raw(server, 'PATCH', scalePath('patch'), {
      contentType: 'application/merge-patch+json',
      body: { metadata: { resourceVersion: current.metadata.resourceVersion }, spec: { replicas: 0 } },
    });
    assert.equal(fresh.status, 200);
    assert.equal((server.get('Deployment', 'default', 'patch')!.spec as { replicas: number }).replicas, 0);
  });

  test('scale of a missing workload is 404 NotFound naming the parent; other verbs are 405', async () => {
    for (const [method, body, contentType] of [
      ['GET', undefined, undefined],
      ['PUT', { metadata: { name: 'ghost' }, spec: { replicas: 1 } }, undefined],
      ['PATCH', { spec: { replicas: 1 } }, 'application/merge-patch+json'],
    ] as const) {
      const res = await raw(server, method, scalePath('ghost'), { body, contentType });
      assert.equal(res.status, 404, method);
      assert.equal(res.json().message, 'deployments.apps "ghost" not found');
    }
    assert.equal((await raw(server, 'GET', scalePath('ghost', 'statefulsets'))).json().message, 'statefulsets.apps "ghost" not found');
    assert.equal((await raw(server, 'DELETE', scalePath('ghost'))).status, 405);
    assert.equal((await raw(server, 'GET', '/apis/apps/v1/namespaces/default/deployments/ghost/other')).status, 404);
  });

  test('a scale write is a MODIFIED event of the parent, recorded with subresource "scale"', async () => {
    const created = server.apply(deployment('watched', 1));
    const watch = await recordWatch(kubeConfigFor(server), '/apis/apps/v1/namespaces/default/deployments', {
      fieldSelector: 'metadata.name=watched',
      resourceVersion: created.metadata.resourceVersion,
    });
    try {
      server.requests.length = 0;
      await raw(server, 'PATCH', scalePath('watched'), { contentType: 'application/merge-patch+json', body: { spec: { replicas: 0 } } });
      await watch.until((events) => events.length >= 1, 5000, 'the MODIFIED event');
      assert.equal(watch.events[0]!.type, 'MODIFIED');
      assert.equal(watch.events[0]!.object.spec.replicas, 0);
      assert.equal(watch.events[0]!.object.kind, 'Deployment');
      const scaleWrites = server.requests.filter((r) => r.subresource === 'scale' && r.verb === 'patch');
      assert.equal(scaleWrites.length, 1);
      assert.equal(scaleWrites[0]!.resource, 'deployments');
      assert.equal(scaleWrites[0]!.group, 'apps');
      assert.equal(scaleWrites[0]!.name, 'watched');
      assert.equal(scaleWrites[0]!.status, 200);
    } finally {
      watch.stop();
    }
  });

  test("client-node's AppsV1Api reads, replaces and patches Deployment and StatefulSet scales", async () => {
    server.apply(deployment('client', 1));
    const read = await apps.readNamespacedDeploymentScale({ name: 'client', namespace: 'default' });
    assert.equal(read.spec?.replicas, 1);
    assert.equal(read.status?.selector, 'app=client,tier=web');
    const replaced = await apps.replaceNamespacedDeploymentScale({
      name: 'client',
      namespace: 'default',
      body: { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'client', namespace: 'default', resourceVersion: read.metadata?.resourceVersion }, spec: { replicas: 3 } },
    });
    assert.equal(replaced.spec?.replicas, 3);
    await assert.rejects(
      apps.replaceNamespacedDeploymentScale({
        name: 'client',
        namespace: 'default',
        body: { metadata: { name: 'client', resourceVersion: read.metadata?.resourceVersion }, spec: { replicas: 2 } },
      }),
      apiError(409, 'Conflict'),
    );
    const patched = await apps.patchNamespacedDeploymentScale(
      { name: 'client', namespace: 'default', body: { spec: { replicas: 0 } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
    assert.equal(patched.spec?.replicas ?? 0, 0);
    assert.equal((await apps.readNamespacedDeployment({ name: 'client', namespace: 'default' })).spec?.replicas, 0);
    const jsonPatched = await apps.patchNamespacedDeploymentScale(
      { name: 'client', namespace: 'default', body: [{ op: 'add', path: '/spec/replicas', value: 2 }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
    assert.equal(jsonPatched.spec?.replicas, 2);
    await assert.rejects(apps.readNamespacedDeploymentScale({ name: 'nope', namespace: 'default' }), apiError(404, 'NotFound'));

    server.apply({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'cache', namespace: 'default' }, spec: { selector: { matchLabels: { app: 'cache' } } } });
    const stsScale = await apps.patchNamespacedStatefulSetScale(
      { name: 'cache', namespace: 'default', body: { spec: { replicas: 2 } } },
      setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
    );
    assert.equal(stsScale.spec?.replicas, 2);
    assert.equal((await apps.readNamespacedStatefulSetScale({ name: 'cache', namespace: 'default' })).status?.selector, 'app=cache');
  });
});
