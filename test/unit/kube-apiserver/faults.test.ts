// Fault hooks and transport: outages on the same port, injected failures, the request
// log, and TLS with the CA from the kubeconfig.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoordinationV1Api, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { FakeKubeApiServer } from '../../support/kube-apiserver/index.ts';
import { apiError, ingress, kubeConfigFor, raw, recordWatch } from './helpers.ts';

describe('test API server: faults', () => {
  let server: FakeKubeApiServer;
  let net: NetworkingV1Api;

  before(async () => {
    server = await FakeKubeApiServer.start();
    net = kubeConfigFor(server).makeApiClient(NetworkingV1Api);
  });
  after(() => server.stop());

  test('goDown() refuses connections and ends watches; comeUp() serves the same data on the same port', async () => {
    server.apply(ingress('survivor'));
    const url = server.url;
    const w = await recordWatch(kubeConfigFor(server), '/apis/networking.k8s.io/v1/ingresses', {});
    await w.until((e) => e.length === 1, 5000, 'initial event');
    const rv = server.resourceVersion;
    await server.goDown();
    await w.ended;
    await assert.rejects(net.readNamespacedIngress({ name: 'survivor', namespace: 'default' }), (err: Error) => /ECONNREFUSED|fetch failed/.test(`${err.message} ${(err.cause as Error)?.message ?? ''} ${(err.cause as { code?: string })?.code ?? ''}`));
    await server.comeUp();
    assert.equal(server.url, url);
    assert.equal((await net.readNamespacedIngress({ name: 'survivor', namespace: 'default' })).metadata?.name, 'survivor');
    assert.equal(server.resourceVersion, rv);
    // A watch resumes across the outage.
    const resumed = await recordWatch(kubeConfigFor(server), '/apis/networking.k8s.io/v1/ingresses', { resourceVersion: rv });
    server.apply(ingress('after-outage'));
    await resumed.until((e) => e.some((x) => x.object.metadata.name === 'after-outage'), 5000, 'event after outage');
    resumed.stop();
  });

  test('failNext(n, status) fails exactly the next n requests with a Status body', async () => {
    server.apply(ingress('flaky'));
    server.failNext(2, 503);
    const first = await raw(server, 'GET', '/apis/networking.k8s.io/v1/namespaces/default/ingresses/flaky');
    assert.equal(first.status, 503);
    assert.deepEqual([first.json().kind, first.json().reason, first.json().code], ['Status', 'ServiceUnavailable', 503]);
    await assert.rejects(net.readNamespacedIngress({ name: 'flaky', namespace: 'default' }), apiError(503));
    assert.equal((await net.readNamespacedIngress({ name: 'flaky', namespace: 'default' })).metadata?.name, 'flaky');
    server.failNext(1);
    await assert.rejects(net.listIngressForAllNamespaces({}), apiError(500, 'InternalError'));
    // Only matching requests consume a targeted failure.
    server.failNext(1, 409, (r) => r.verb === 'update');
    assert.equal((await raw(server, 'GET', '/apis/networking.k8s.io/v1/ingresses')).status, 200);
    const current = await net.readNamespacedIngress({ name: 'flaky', namespace: 'default' });
    await assert.rejects(net.replaceNamespacedIngress({ name: 'flaky', namespace: 'default', body: current }), apiError(409));
    await net.replaceNamespacedIngress({ name: 'flaky', namespace: 'default', body: current });
    // Watches fail too.
    server.failNext(1, 500);
    const watchRes = await raw(server, 'GET', '/apis/networking.k8s.io/v1/ingresses?watch=true');
    assert.equal(watchRes.status, 500);
  });

  test('requests records method, path, query, verb and whether it was a watch', async () => {
    server.requests.length = 0;
    const coordination = kubeConfigFor(server).makeApiClient(CoordinationV1Api);
    await assert.rejects(coordination.readNamespacedLease({ name: 'l', namespace: 'kube-system' }), apiError(404));
    await net.listNamespacedIngress({ namespace: 'default', labelSelector: 'a=b' });
    const w = await recordWatch(kubeConfigFor(server), '/apis/networking.k8s.io/v1/ingresses', { resourceVersion: server.resourceVersion, timeoutSeconds: 1 });
    await w.ended;
    const summary = server.requests.map((r) => [r.method, r.verb, r.group, r.resource, r.namespace, r.name, r.watch, r.status]);
    assert.deepEqual(summary, [
      ['GET', 'get', 'coordination.k8s.io', 'leases', 'kube-system', 'l', false, 404],
      ['GET', 'list', 'networking.k8s.io', 'ingresses', 'default', undefined, false, 200],
      ['GET', 'watch', 'networking.k8s.io', 'ingresses', undefined, undefined, true, 200],
    ]);
    assert.equal(server.requests[1]!.path, '/apis/networking.k8s.io/v1/namespaces/default/ingresses');
    assert.equal(server.requests[1]!.query.labelSelector, 'a=b');
    assert.equal(server.requests[2]!.query.timeoutSeconds, '1');
  });
});

describe('test API server: TLS', () => {
  let server: FakeKubeApiServer;
  let dir: string;

  before(async () => {
    server = await FakeKubeApiServer.start({ tls: true, token: 'tls-token' });
    dir = mkdtempSync(join(tmpdir(), 'kube-apiserver-test-'));
  });
  after(async () => {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('serves HTTPS that verifies with the CA and token from the written kubeconfig', async () => {
    assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    const path = server.writeKubeconfig(dir);
    assert.equal(statSync(path).mode & 0o777, 0o600);
    const config = parse(readFileSync(path, 'utf8'));
    assert.equal(Buffer.from(config.clusters[0].cluster['certificate-authority-data'], 'base64').toString(), server.caPem);
    assert.equal(config.users[0].user.token, 'tls-token');
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const net = kc.makeApiClient(NetworkingV1Api);
    await net.createNamespacedIngress({ namespace: 'default', body: ingress('secure') as never });
    assert.deepEqual((await net.listIngressForAllNamespaces({})).items.map((i) => i.metadata?.name), ['secure']);
    const w = await recordWatch(kc, '/apis/networking.k8s.io/v1/ingresses', {});
    await w.until((e) => e.length === 1, 5000, 'watch over TLS');
    w.stop();
  });

  test('a client without the CA refuses the certificate', async () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: server.url }],
      users: [{ name: 'u', token: 'tls-token' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    await assert.rejects(kc.makeApiClient(NetworkingV1Api).listIngressForAllNamespaces({}), (err: Error) => /certificate|self.signed/i.test(`${err.message} ${(err.cause as Error)?.message ?? ''}`));
  });
});

describe('test API server: bounded history', () => {
  test('events beyond historyLimit are compacted away: older resourceVersions get 410', async () => {
    const server = await FakeKubeApiServer.start({ historyLimit: 3 });
    try {
      const start = server.resourceVersion;
      for (let i = 0; i < 5; i++) server.apply(ingress(`h-${i}`));
      const old = await raw(server, 'GET', `/apis/networking.k8s.io/v1/ingresses?watch=true&resourceVersion=${start}`);
      assert.equal(JSON.parse(old.text.trim()).object.code, 410);
      // The last three writes are still replayable.
      const recent = await raw(server, 'GET', `/apis/networking.k8s.io/v1/ingresses?watch=true&timeoutSeconds=1&resourceVersion=${Number(server.resourceVersion) - 3}`);
      assert.deepEqual(recent.text.trim().split('\n').map((l) => JSON.parse(l).object.metadata.name), ['h-2', 'h-3', 'h-4']);
    } finally {
      await server.stop();
    }
  });
});
