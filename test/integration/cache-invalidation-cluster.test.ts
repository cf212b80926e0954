// Black-box: the CacheInvalidation custom resource in cluster mode, two portico
// replicas (the real CLI, POD_NAME replica-a and replica-b) against the test API
// server. Each replica applies each object once and writes its own entry in
// status.replicas[] (the two write the same object at about the same time: neither
// entry may be lost); the phase follows; the leader deletes finished objects after
// their TTL. The replicas are the ready pods behind --publish-service's EndpointSlices.
// An Ingress with portico.dev/cache shows the effect a user sees: an answer that was a
// HIT on both replicas is a MISS (fetched from the pod again) once the object is Complete.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { startCacheableOrigin, type CacheableOrigin } from '../support/cacheable-origin.ts';
import type { CacheInvalidation } from '../../src/cache/invalidation-resource.ts';

const GROUP = { group: 'portico.dev', version: 'v1alpha1', plural: 'cacheinvalidations', namespace: 'default' };
const FLAGS = ['--publish-service', 'default/portico', '--cache-invalidation-ttl', '3s', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--shutdown-grace', '1s'];

/** portico's own Service, its pods listed (ready) in an EndpointSlice as the EndpointSlice controller would. */
function porticoService(pods: string[]): Obj[] {
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: { name: 'portico', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80 }] } },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'portico-1', namespace: 'default', labels: { 'kubernetes.io/service-name': 'portico' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080 }],
      endpoints: pods.map((pod, i) => ({ addresses: [`10.0.0.${i + 1}`], conditions: { ready: true }, targetRef: { kind: 'Pod', namespace: 'default', name: pod } })),
    },
  ];
}

function invalidation(name: string, spec: Record<string, unknown>): Obj {
  return { apiVersion: 'portico.dev/v1alpha1', kind: 'CacheInvalidation', metadata: { name, namespace: 'default' }, spec };
}

describe('CacheInvalidation in a cluster, two replicas', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let kubeconfig: string;
  let custom: CustomObjectsApi;
  const replicas: PorticoProcess[] = [];
  let origin: CacheableOrigin;
  /** X-Cache of GET path on each replica. */
  const xCache = (path: string) => Promise.all(replicas.map(async (r) => (await get(r.http, 'shop.local', path)).headers['x-cache']));

  const read = async (name: string): Promise<CacheInvalidation | undefined> => {
    try {
      return (await custom.getNamespacedCustomObject({ ...GROUP, name })) as CacheInvalidation;
    } catch (err) {
      if ((err as { code?: number }).code === 404) return undefined;
      throw err;
    }
  };
  const create = (obj: Obj) => custom.createNamespacedCustomObject({ ...GROUP, body: obj });
  /** Waits for the phase and returns the object as it was then. */
  const phaseOf = async (name: string, phase: string, timeoutMs = 20_000): Promise<CacheInvalidation> => {
    let seen: CacheInvalidation | undefined;
    await eventually(async () => (seen = await read(name))?.status?.phase === phase, timeoutMs, `${name} ${phase} (last seen: ${JSON.stringify(seen?.status)})`);
    return seen!;
  };
  const appliedLines = (name: string) => replicas.map((r) => r.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith(`CacheInvalidation default/${name} applied: `)).length);

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 't', tls: true, bookmarkIntervalMs: 500 });
    dir = mkdtempSync(join(tmpdir(), 'portico-cacheinv-'));
    kubeconfig = api.writeKubeconfig(dir);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    custom = kc.makeApiClient(CustomObjectsApi);
    for (const obj of porticoService(['replica-a', 'replica-b'])) api.apply(obj);
    origin = await startCacheableOrigin();
    api.apply(ingressClass('portico'));
    api.apply(ingress('shop', { rules: [{ host: 'shop.local', paths: [{ path: '/', service: 'shop' }] }] }, { annotations: { 'portico.dev/cache': 'true' } }));
    for (const obj of serviceWithEndpoints('shop', [origin.port])) api.apply(obj);
    replicas.push(
      ...(await Promise.all([
        startPortico(['--kubeconfig', kubeconfig, ...FLAGS], { POD_NAME: 'replica-a' }),
        startPortico(['--kubeconfig', kubeconfig, ...FLAGS], { POD_NAME: 'replica-b' }),
      ])),
    );
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.stop()));
    await origin?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a Purge: both replicas record their entry, the phase is Complete, the purged answer is a MISS on both, and the leader deletes the object after the TTL (spec.ttl wins)', async () => {
    await xCache('/index.html');
    assert.deepEqual(await xCache('/index.html'), ['HIT', 'HIT']);
    assert.equal(origin.hits.get('/index.html'), 2, 'one fill per replica');
    await create(invalidation('purge-home', { host: 'shop.local', type: 'Purge', paths: ['/', '/index.html'] }));
    await create(invalidation('purge-kept', { host: 'shop.local', type: 'Purge', paths: ['/a'], ttl: '1h' }));
    const done = await phaseOf('purge-home', 'Complete');
    assert.deepEqual(
      done.status!.replicas!.map(({ name, phase, message, removed, observedGeneration }) => ({ name, phase, message, removed, observedGeneration })),
      ['replica-a', 'replica-b'].map((name) => ({ name, phase: 'Complete', message: 'purged 1 entry of shop.local', removed: 1, observedGeneration: 1 })),
    );
    for (const e of done.status!.replicas!) assert.ok(Date.now() - Date.parse(e.time) < 30_000, `a recent time: ${e.time}`);
    assert.deepEqual(await xCache('/index.html'), ['MISS', 'MISS']);
    assert.equal(origin.hits.get('/index.html'), 4, 'fetched from the pod again by each replica');
    assert.deepEqual(await xCache('/index.html'), ['HIT', 'HIT'], 'and cached again');
    await phaseOf('purge-kept', 'Complete');

    // Deleted by the leader once 3 s (--cache-invalidation-ttl) have passed; the one with ttl: 1h stays.
    await eventually(async () => (await read('purge-home')) === undefined, 15_000, 'purge-home deleted');
    const deleted = (l: Record<string, unknown>) => l.msg === 'CacheInvalidation default/purge-home deleted: Complete and past its TTL';
    await Promise.any(replicas.map((r) => r.waitForLog(deleted, 10_000)));
    const deletions = replicas.map((r) => r.logs.filter(deleted).length);
    assert.deepEqual([...deletions].sort(), [0, 1], 'deleted by one replica (the leader)');
    assert.equal((await read('purge-kept'))?.status?.phase, 'Complete');
  });

  test('a Ban: what matches is a MISS on both replicas, the rest still a HIT; applied once per replica, also across a re-list after the watch history is compacted', async () => {
    await xCache('/img/a.png');
    await xCache('/css/site.css');
    assert.deepEqual(await xCache('/img/a.png'), ['HIT', 'HIT']);
    await create(invalidation('ban-once', { host: 'shop.local', type: 'Ban', pattern: '^/img/', ttl: '1h' }));
    await phaseOf('ban-once', 'Complete');
    assert.deepEqual(await xCache('/img/a.png'), ['MISS', 'MISS']);
    assert.deepEqual(await xCache('/css/site.css'), ['HIT', 'HIT']);
    assert.deepEqual(appliedLines('ban-once'), [1, 1]);
    const lists = () => api.requests.filter((r) => r.resource === 'cacheinvalidations' && r.verb === 'list').length;
    const before = lists();
    // A write the watches miss, then its history compacted away: resuming is 410 Gone, so each replica re-lists.
    api.dropWatches();
    api.compact();
    await create(invalidation('ban-twice', { host: 'shop.local', type: 'Ban', pattern: '^/css/', ttl: '1h' }));
    api.compact();
    api.dropWatches();
    await eventually(async () => lists() >= before + 2, 20_000, 'both replicas re-listed');
    await phaseOf('ban-twice', 'Complete');
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(appliedLines('ban-once'), [1, 1]);
    assert.deepEqual(appliedLines('ban-twice'), [1, 1]);
  });

  test('a Ban whose pattern is not a regular expression: Failed with the message from each replica, and a Warning Event', async () => {
    await create(invalidation('bad-ban', { host: 'shop.local', type: 'Ban', pattern: '/img/(', ttl: '1h' }));
    const failed = await phaseOf('bad-ban', 'Failed');
    await eventually(async () => (await read('bad-ban'))?.status?.replicas?.length === 2, 10_000, 'both entries');
    const message = 'spec.pattern: "/img/(" is not a valid regular expression: Invalid regular expression: //img/(/: Unterminated group';
    const entries = (await read('bad-ban'))!.status!.replicas!;
    assert.deepEqual(entries.map((e) => [e.name, e.phase, e.message]), [['replica-a', 'Failed', message], ['replica-b', 'Failed', message]]);
    assert.ok(failed.status!.replicas!.length >= 1);
    await eventually(async () => api.list('Event', 'default').some((e) => (e as { reason?: string }).reason === 'InvalidationFailed'), 10_000, 'a Warning Event');
    const event = api.list('Event', 'default').find((e) => (e as { reason?: string }).reason === 'InvalidationFailed') as unknown as {
      type: string;
      message: string;
      involvedObject: { kind: string; name: string; apiVersion: string; uid: string };
    };
    assert.equal(event.type, 'Warning');
    assert.match(event.message, /^replica-[ab]: spec\.pattern: "\/img\/\(" is not a valid regular expression/);
    assert.deepEqual([event.involvedObject.kind, event.involvedObject.name, event.involvedObject.apiVersion], ['CacheInvalidation', 'bad-ban', 'portico.dev/v1alpha1']);
    assert.equal(event.involvedObject.uid, failed.metadata.uid);
    // Nothing else is affected: the next object is applied as usual.
    await create(invalidation('after-bad', { host: 'shop.local', type: 'Purge', paths: ['/x'], ttl: '1h' }));
    await phaseOf('after-bad', 'Complete');
  });

  test('an object without a host is Failed with the field named (a server without the CRD schema lets it in)', async () => {
    await create(invalidation('no-host', { type: 'Purge', paths: ['/'], ttl: '1h' }));
    await phaseOf('no-host', 'Failed');
    await eventually(async () => (await read('no-host'))?.status?.replicas?.length === 2, 10_000, 'both entries');
    const entries = (await read('no-host'))!.status!.replicas!;
    assert.deepEqual(entries.map((e) => e.message), Array(2).fill('spec.host is required: the Host the cached responses were served for'));
  });

  test('a status write the API refuses (503) is written again later: both entries land', async () => {
    api.failNext(2, 503, (r) => r.name === 'after-503' && r.subresource === 'status');
    await create(invalidation('after-503', { host: 'shop.local', type: 'Ban', pattern: '^/tmp/', ttl: '1h' }));
    const done = await phaseOf('after-503', 'Complete');
    assert.deepEqual(done.status!.replicas!.map((e) => e.name), ['replica-a', 'replica-b']);
    assert.deepEqual(appliedLines('after-503'), [1, 1], 'the write is retried, not the invalidation');
    const refused = api.requests.filter((r) => r.name === 'after-503' && r.subresource === 'status' && r.status === 503);
    assert.equal(refused.length, 2);
    assert.ok(replicas.some((r) => r.logs.some((l) => l.msg === 'could not write CacheInvalidation status; trying again shortly')));
  });

  test('a restarted replica applies nothing it applied before (its entries in the status say so), and applies what is new', async () => {
    const old = replicas.pop()!;
    await old.stop();
    const restarted = await startPortico(['--kubeconfig', kubeconfig, ...FLAGS], { POD_NAME: 'replica-b' });
    replicas.push(restarted);
    await create(invalidation('after-restart', { host: 'shop.local', type: 'Purge', paths: ['/r'], ttl: '1h' }));
    await phaseOf('after-restart', 'Complete');
    const applied = restarted.logs.filter((l) => typeof l.msg === 'string' && / applied: | failed: /.test(l.msg)).map((l) => l.msg);
    assert.deepEqual(applied, ['CacheInvalidation default/after-restart applied: purged 0 entries of shop.local']);
  });

  test('Pending while a replica behind the Service has not applied it; Complete once that pod leaves the Service', async () => {
    for (const obj of porticoService(['replica-a', 'replica-b', 'replica-c'])) api.apply(obj);
    await create(invalidation('three', { host: 'shop.local', type: 'Ban', pattern: '.', ttl: '1h' }));
    await eventually(async () => (await read('three'))?.status?.replicas?.length === 2, 10_000, 'both running replicas applied it');
    await new Promise((r) => setTimeout(r, 700)); // a leader sweep or two
    assert.equal((await read('three'))?.status?.phase, 'Pending', 'replica-c (not running) has not applied it');
    for (const obj of porticoService(['replica-a', 'replica-b'])) api.apply(obj);
    await phaseOf('three', 'Complete');
  });
});
