// Watches through @kubernetes/client-node's Watch: initial state, resume without loss or
// duplicates, 410 after compaction, bookmarks, selectors, and dropped streams.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { KubeConfig } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { ingress, kubeConfigFor, raw, recordWatch, type RecordedWatch, type WatchEventRecord } from './helpers.ts';

const ALL = '/apis/networking.k8s.io/v1/ingresses';
const names = (events: WatchEventRecord[]) => events.map((e) => `${e.type} ${e.object?.metadata?.name ?? ''}`);

describe('test API server: watches', () => {
  let server: FakeKubeApiServer;
  let kc: KubeConfig;
  const open: RecordedWatch[] = [];
  const watch = async (path: string, query: Record<string, unknown>) => {
    const w = await recordWatch(kc, path, query);
    open.push(w);
    return w;
  };

  before(async () => {
    server = await FakeKubeApiServer.start({ bookmarkIntervalMs: 100 });
    kc = kubeConfigFor(server);
  });
  after(async () => {
    for (const w of open) w.stop();
    await server.stop();
  });

  test('without a resourceVersion: synthetic ADDED for the current state, then live events', async () => {
    server.apply(ingress('w-existing', { namespace: 'w1' }));
    const w = await watch('/apis/networking.k8s.io/v1/namespaces/w1/ingresses', {});
    await w.until((e) => e.length === 1, 5000, 'initial ADDED');
    server.apply(ingress('w-new', { namespace: 'w1' }));
    server.apply(ingress('w-new', { namespace: 'w1', service: 'changed' }));
    server.apply(ingress('w-other-namespace', { namespace: 'w2' }));
    server.remove('Ingress', 'w1', 'w-new');
    await w.until((e) => e.length === 4, 5000, 'live events');
    assert.deepEqual(names(w.events), ['ADDED w-existing', 'ADDED w-new', 'MODIFIED w-new', 'DELETED w-new']);
    const [, added, modified, deleted] = w.events;
    assert.equal(added!.object.kind, 'Ingress');
    assert.equal(modified!.object.spec.defaultBackend.service.name, 'changed');
    assert.ok(Number(deleted!.object.metadata.resourceVersion) > Number(modified!.object.metadata.resourceVersion), 'DELETED carries the deletion revision');
    w.stop();
  });

  test('resuming from the last resourceVersion loses nothing and repeats nothing, across dropped watches', async () => {
    const ns = 'resume';
    const list = (await raw(server, 'GET', `/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`)).json();
    let rv: string = list.metadata.resourceVersion;
    const received: WatchEventRecord[] = [];
    const written: string[] = [];
    // Every fifth write deletes; the revisions that changed are what a watcher must see.
    const write = (i: number) => {
      const name = `r-${i % 3}`;
      const before = server.resourceVersion;
      if (i % 5 === 4) server.remove('Ingress', ns, name);
      else server.apply(ingress(name, { namespace: ns, service: `s${i}` }));
      if (server.resourceVersion !== before) written.push(server.resourceVersion);
    };
    let i = 0;
    for (let round = 0; round < 4; round++) {
      const w = await watch(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, { resourceVersion: rv, allowWatchBookmarks: false });
      for (let k = 0; k < 10; k++) write(i++);
      await w.until((e) => e.length > 0 && e.at(-1)!.object.metadata.resourceVersion === server.resourceVersion, 5000, 'caught up');
      server.dropWatches();
      await w.ended;
      received.push(...w.events);
      rv = w.events.at(-1)!.object.metadata.resourceVersion;
      // Writes while no watch is open are replayed by the next one.
      for (let k = 0; k < 5; k++) write(i++);
    }
    const w = await watch(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, { resourceVersion: rv });
    await w.until((e) => e.length > 0 && e.at(-1)!.object.metadata.resourceVersion === server.resourceVersion, 5000, 'final catch-up');
    received.push(...w.events);
    w.stop();
    const receivedRvs = received.map((e) => e.object.metadata.resourceVersion);
    assert.deepEqual(receivedRvs, written, 'every write exactly once, in order');
    // Replaying the events gives the server's state.
    const state = new Map<string, string>();
    for (const e of received) {
      if (e.type === 'DELETED') state.delete(e.object.metadata.name);
      else state.set(e.object.metadata.name, e.object.spec.defaultBackend.service.name);
    }
    const current = new Map(server.list('Ingress', ns).map((o) => [o.metadata.name!, (o.spec as any).defaultBackend.service.name as string]));
    assert.deepEqual(state, current);
  });

  test('after compact(), a watch from an older resourceVersion gets one ERROR 410 Expired and ends', async () => {
    const old = server.resourceVersion;
    server.apply(ingress('c-1', { namespace: 'compact' }));
    server.compact();
    const w = await watch(ALL, { resourceVersion: old });
    assert.equal(await w.ended, null, 'a clean end of the stream');
    assert.equal(w.events.length, 1);
    assert.equal(w.events[0]!.type, 'ERROR');
    assert.deepEqual(w.events[0]!.object, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `too old resource version: ${old} (${server.resourceVersion})`,
      reason: 'Expired',
      code: 410,
    });
    // From the compaction point on, resuming works again.
    const fresh = await watch(ALL, { resourceVersion: server.resourceVersion });
    server.apply(ingress('c-2', { namespace: 'compact' }));
    await fresh.until((e) => e.some((x) => x.object.metadata.name === 'c-2'), 5000, 'event after compaction');
    fresh.stop();
  });

  test('bookmarks carry only the current resourceVersion, with the watched kind', async () => {
    const w = await watch(ALL, { resourceVersion: server.resourceVersion, allowWatchBookmarks: true });
    server.apply(ingress('b-1', { namespace: 'bookmarks' }));
    await w.until((e) => e.filter((x) => x.type === 'BOOKMARK').length >= 2, 5000, 'bookmarks');
    const bookmark = w.events.findLast((x) => x.type === 'BOOKMARK')!;
    assert.deepEqual(bookmark.object, { kind: 'Ingress', apiVersion: 'networking.k8s.io/v1', metadata: { resourceVersion: server.resourceVersion } });
    const without = await watch(ALL, { resourceVersion: server.resourceVersion });
    server.apply(ingress('b-2', { namespace: 'bookmarks' }));
    await without.until((e) => e.length === 1, 5000, 'an event');
    await w.until((e) => e.filter((x) => x.type === 'BOOKMARK').length >= 4, 5000, 'more bookmarks');
    assert.ok(without.events.every((x) => x.type !== 'BOOKMARK'), 'no bookmarks unless asked for');
    w.stop();
    without.stop();
  });

  test('label-selector watches: leaving the selector is DELETED, entering it is ADDED', async () => {
    const ns = 'selector';
    server.apply(ingress('sel', { namespace: ns, labels: { app: 'web' } }));
    server.apply(ingress('never', { namespace: ns, labels: { app: 'other' } }));
    const w = await watch(`/apis/networking.k8s.io/v1/namespaces/${ns}/ingresses`, { labelSelector: 'app=web' });
    await w.until((e) => e.length === 1, 5000, 'initial');
    server.apply(ingress('sel', { namespace: ns, labels: { app: 'web' }, service: 'v2' }));
    server.apply(ingress('sel', { namespace: ns, labels: { app: 'moved' }, service: 'v2' }));
    server.apply(ingress('never', { namespace: ns, labels: { app: 'other' }, service: 'v2' }));
    server.apply(ingress('sel', { namespace: ns, labels: { app: 'web' }, service: 'v3' }));
    await w.until((e) => e.length === 4, 5000, 'selector events');
    assert.deepEqual(names(w.events), ['ADDED sel', 'MODIFIED sel', 'DELETED sel', 'ADDED sel']);
    assert.equal(w.events[2]!.object.metadata.labels.app, 'web', 'DELETED carries the last matching content');
    w.stop();
  });

  test('dropWatches() ends every open stream; timeoutSeconds ends it cleanly', async () => {
    const a = await watch(ALL, {});
    const b = await watch('/apis/networking.k8s.io/v1/namespaces/x/ingresses', { allowWatchBookmarks: true });
    await b.until((e) => e.some((x) => x.type === 'BOOKMARK'), 5000, 'stream open');
    assert.ok(server.watchCount >= 2);
    assert.ok(server.dropWatches() >= 2);
    await Promise.all([a.ended, b.ended]);
    assert.equal(server.watchCount, 0);
    const timed = await watch(ALL, { resourceVersion: server.resourceVersion, timeoutSeconds: 1 });
    assert.equal(await timed.ended, null);
  });

  test('sendInitialEvents streams the state and marks its end with a bookmark', async () => {
    server.apply(ingress('s-1', { namespace: 'stream' }));
    const w = await watch('/apis/networking.k8s.io/v1/namespaces/stream/ingresses', {
      sendInitialEvents: true,
      resourceVersionMatch: 'NotOlderThan',
      allowWatchBookmarks: true,
    });
    await w.until((e) => e.some((x) => x.type === 'BOOKMARK'), 5000, 'initial-events-end');
    assert.equal(w.events[0]!.type, 'ADDED');
    assert.equal(w.events[1]!.object.metadata.annotations['k8s.io/initial-events-end'], 'true');
    w.stop();
    const invalid = await raw(server, 'GET', '/apis/networking.k8s.io/v1/ingresses?watch=true&sendInitialEvents=true');
    assert.equal(invalid.status, 422);
  });

  test('raw wire format: chunked newline-delimited JSON on a 200', async () => {
    const res = await raw(server, 'GET', `/apis/networking.k8s.io/v1/namespaces/stream/ingresses?watch=1&timeoutSeconds=1`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const lines = res.text.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((l) => [l.type, l.object.metadata.name]), [['ADDED', 's-1']]);
    assert.equal((await raw(server, 'GET', `${ALL}?watch=true&resourceVersion=abc`)).status, 400);
  });
});
