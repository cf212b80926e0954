// The CacheInvalidation controller in-process against the test API server (real wire
// protocol), for what the two-replica CLI test cannot stage for sure: replicas writing
// their entries from the same version (the stale ones get 409 and keep the others'
// entries), a replica whose cache has not answered yet (the leader shows the object as
// Pending meanwhile), and a cluster without the CRD (said once; nothing is watched).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { eventually } from '../support/portico-process.ts';
import { KubeClient } from '../../src/kube/client.ts';
import { InvalidationController } from '../../src/cache/invalidation-controller.ts';
import { CacheInvalidationStatusWriter } from '../../src/status/cache-invalidation-status.ts';
import { entryFor } from '../../src/cache/invalidation-resource.ts';
import type { CacheInvalidation } from '../../src/cache/invalidation-resource.ts';
import type { InvalidationRequest } from '../../src/cache/invalidation.ts';

function clientOf(api: FakeKubeApiServer): KubeClient {
  const kc = new KubeConfig();
  kc.loadFromString(api.kubeconfig());
  return new KubeClient(kc);
}

/** A pino logger whose lines the test can read. */
function recordingLog() {
  const lines: { msg: string; level: number }[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  return { log, lines };
}

const invalidation = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'portico.dev/v1alpha1', kind: 'CacheInvalidation', metadata: { name, namespace: 'default' }, spec });

describe('CacheInvalidation controller', () => {
  let api: FakeKubeApiServer;
  const controllers: InvalidationController[] = [];

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 't' });
  });
  after(async () => {
    for (const c of controllers) c.stop();
    await api.stop();
  });

  test('three replicas writing their entries from the same version: the stale writes get 409, read again, and every entry stays', async () => {
    api.apply(invalidation('race', { host: 'shop.local', type: 'Ban', pattern: '.' }));
    const seen = api.get('CacheInvalidation', 'default', 'race') as unknown as CacheInvalidation;
    const { log } = recordingLog();
    const writers = ['pod-a', 'pod-b', 'pod-c'].map((pod) => [pod, new CacheInvalidationStatusWriter(clientOf(api), log, undefined)] as const);
    const results = await Promise.all(writers.map(([pod, w]) => w.writeEntry(seen, entryFor(pod, 1, { ok: true, message: `banned on ${pod}`, removed: 0 }))));
    assert.deepEqual(results, ['done', 'done', 'done']);
    const status = (api.get('CacheInvalidation', 'default', 'race') as unknown as CacheInvalidation).status!;
    assert.deepEqual(status.replicas!.map((e) => [e.name, e.message]), [['pod-a', 'banned on pod-a'], ['pod-b', 'banned on pod-b'], ['pod-c', 'banned on pod-c']]);
    assert.equal(status.phase, 'Complete');
    const conflicts = api.requests.filter((r) => r.name === 'race' && r.subresource === 'status' && r.status === 409);
    assert.ok(conflicts.length >= 2, `the stale writes were refused (${conflicts.length} conflicts)`);
    api.remove('CacheInvalidation', 'default', 'race');
  });

  test('the leader marks an object no replica has applied yet as Pending; the entry then lands with the result', async () => {
    let release!: () => void;
    const asked: InvalidationRequest[] = [];
    const { log } = recordingLog();
    const controller = new InvalidationController({
      client: clientOf(api),
      log,
      replica: 'slow-pod',
      // The cache answers only when the test says so.
      invalidate: async (request) => {
        asked.push(request);
        await new Promise<void>((r) => (release = r));
        return { ok: true, message: 'purged 1 entry of shop.local', removed: 1 };
      },
      resyncMs: 60_000,
      defaultTtlMs: 2_000, // the leader's sweep runs every 500 ms
      isLeader: () => true,
    });
    controllers.push(controller);
    controller.start();
    api.apply(invalidation('slow', { host: 'shop.local', type: 'Purge', paths: ['/a'] }));
    const read = () => api.get('CacheInvalidation', 'default', 'slow') as unknown as CacheInvalidation;
    await eventually(async () => read().status?.phase === 'Pending', 15_000, 'Pending written by the leader');
    assert.deepEqual(read().status?.replicas ?? [], []);
    assert.deepEqual(asked, [{ type: 'Purge', host: 'shop.local', paths: ['/a'] }]);
    release();
    await eventually(async () => read().status?.phase === 'Complete', 10_000, 'Complete');
    assert.deepEqual(read().status!.replicas!.map((e) => [e.name, e.phase, e.message, e.removed]), [['slow-pod', 'Complete', 'purged 1 entry of shop.local', 1]]);
  });

  test('without the CRD, it says so once and watches nothing', async () => {
    const bare = await FakeKubeApiServer.start({ token: 't', withoutCrds: true });
    try {
      const { log, lines } = recordingLog();
      const controller = new InvalidationController({
        client: clientOf(bare),
        log,
        replica: 'pod',
        invalidate: async () => ({ ok: true, message: '' }),
        resyncMs: 60_000,
        defaultTtlMs: 60_000,
        isLeader: () => true,
      });
      controllers.push(controller);
      controller.start();
      await eventually(async () => lines.some((l) => l.msg.startsWith('the CacheInvalidation CRD is not installed')), 5_000, 'said');
      assert.equal(bare.requests.filter((r) => r.resource === 'cacheinvalidations').length, 0);
      controller.stop();
    } finally {
      await bare.stop();
    }
  });
});
