// Black-box: portico in cluster mode against the test API server (real wire protocol,
// bearer token over HTTPS), with real echo backends. Objects are created through the
// Kubernetes API with @kubernetes/client-node, as kubectl would.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { get } from '../support/http.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

const CLUSTER_FLAGS = ['--publish-address', '198.51.100.10', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--debounce', '20ms'];

describe('cluster mode against the API server', () => {
  let api: FakeKubeApiServer;
  let kubeconfigDir: string;
  let kubeconfig: string;
  let net: NetworkingV1Api;
  let core: CoreV1Api;
  let discovery: DiscoveryV1Api;
  const echoes: Echo[] = [];
  const porticos: PorticoProcess[] = [];

  async function createAll(objects: Obj[]): Promise<void> {
    for (const o of objects) {
      const namespace = (o.metadata as { namespace?: string }).namespace ?? 'default';
      switch (o.kind) {
        case 'IngressClass': await net.createIngressClass({ body: o as never }); break;
        case 'Ingress': await net.createNamespacedIngress({ namespace, body: o as never }); break;
        case 'Service': await core.createNamespacedService({ namespace, body: o as never }); break;
        case 'EndpointSlice': await discovery.createNamespacedEndpointSlice({ namespace, body: o as never }); break;
        default: throw new Error(`no create for ${o.kind}`);
      }
    }
  }

  async function ingressStatus(name: string): Promise<string[]> {
    const ing = await net.readNamespacedIngress({ name, namespace: 'default' });
    return (ing.status?.loadBalancer?.ingress ?? []).map((e) => e.ip ?? e.hostname ?? '');
  }

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token', tls: true });
    kubeconfigDir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    kubeconfig = api.writeKubeconfig(kubeconfigDir);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    net = kc.makeApiClient(NetworkingV1Api);
    core = kc.makeApiClient(CoreV1Api);
    discovery = kc.makeApiClient(DiscoveryV1Api);

    const web = await startEchoServer({ name: 'web' });
    const other = await startEchoServer({ name: 'other' });
    echoes.push(web, other);
    await createAll([
      ingressClass('portico'),
      ingress('web', { rules: [{ host: 'web.cluster', paths: [{ path: '/', service: 'web' }] }] }),
      ...serviceWithEndpoints('web', [web.port]),
      ...serviceWithEndpoints('other', [other.port]),
    ]);
    porticos.push(await startPortico(['--kubeconfig', kubeconfig, ...CLUSTER_FLAGS]));
  });

  after(async () => {
    for (const p of porticos) await p.stop();
    await Promise.all(echoes.map((e) => e.close()));
    await api?.stop();
    rmSync(kubeconfigDir, { recursive: true, force: true });
  });

  const serviceFor = async (host: string, path = '/') => {
    const r = await get(porticos[0]!.http, host, path);
    return r.status === 200 ? (r.json().service as string) : r.status;
  };

  test('serves what the API holds after the initial sync', async () => {
    assert.equal(await serviceFor('web.cluster'), 'web');
    assert.equal((await get(porticos[0]!.admin, 'x', '/readyz')).status, 200);
  });

  test('created, changed and deleted objects reach routing', async () => {
    await createAll([ingress('late', { rules: [{ host: 'late.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await serviceFor('late.cluster')) === 'web', 10_000, 'created Ingress served');
    await net.patchNamespacedIngress(
      { name: 'late', namespace: 'default', body: [{ op: 'replace', path: '/spec/rules/0/http/paths/0/backend/service/name', value: 'other' }] },
    );
    await eventually(async () => (await serviceFor('late.cluster')) === 'other', 10_000, 'changed Ingress served');
    await net.deleteNamespacedIngress({ name: 'late', namespace: 'default' });
    await eventually(async () => (await serviceFor('late.cluster')) === 404, 10_000, 'deleted Ingress gone');
  });

  test('the leader writes the publish address to the status of served Ingresses only', async () => {
    await createAll([ingress('foreign', { className: 'someone-else', rules: [{ host: 'foreign.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await ingressStatus('web')).join() === '198.51.100.10', 5000, 'status written');
    assert.deepEqual(await ingressStatus('foreign'), []);
  });

  test('a status write the API server refuses is tried again, with no other change to prompt it', async () => {
    api.failNext(1, 500, (r) => r.verb === 'patch' && r.subresource === 'status' && r.name === 'refused');
    await createAll([ingress('refused', { rules: [{ host: 'refused.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await porticos[0]!.waitForLog((l) => l.msg === 'could not update Ingress status; will retry' && typeof l.retryInMs === 'number', 5000);
    await eventually(async () => (await ingressStatus('refused')).join() === '198.51.100.10', 5000, 'status written by the retry');
  });

  test('status is removed when an Ingress moves to another class', async () => {
    await createAll([ingress('mover', { rules: [{ host: 'mover.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await ingressStatus('mover')).length === 1, 5000, 'status written');
    await net.patchNamespacedIngress({ name: 'mover', namespace: 'default', body: [{ op: 'replace', path: '/spec/ingressClassName', value: 'someone-else' }] });
    await eventually(async () => (await ingressStatus('mover')).length === 0, 5000, 'status removed');
    assert.equal(await serviceFor('mover.cluster'), 404);
  });

  test('problems become Warning Events on the Ingress', async () => {
    await createAll([ingress('broken', { rules: [{ host: 'broken.cluster', paths: [{ path: '/', service: 'does-not-exist' }] }] })]);
    await eventually(async () => {
      const events = await core.listNamespacedEvent({ namespace: 'default' });
      return events.items.some((e) => e.involvedObject.name === 'broken' && e.type === 'Warning' && e.reason === 'ServiceNotFound');
    }, 5000, 'ServiceNotFound event');
    assert.equal(await serviceFor('broken.cluster'), 503);
  });

  test('dropped watches lose no change', async () => {
    api.dropWatches();
    await createAll([ingress('after-drop', { rules: [{ host: 'after-drop.cluster', paths: [{ path: '/', service: 'other' }] }] })]);
    await eventually(async () => (await serviceFor('after-drop.cluster')) === 'other', 5000, 'change after a dropped watch');
  });

  test('a 410 Gone (compacted history) re-lists and loses no change', async () => {
    api.dropWatches();
    api.compact();
    await createAll([ingress('after-compact', { rules: [{ host: 'after-compact.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    api.compact();
    api.dropWatches();
    await net.deleteNamespacedIngress({ name: 'after-drop', namespace: 'default' });
    await eventually(async () => (await serviceFor('after-compact.cluster')) === 'web' && (await serviceFor('after-drop.cluster')) === 404, 5000, 'changes around a 410');
  });

  test('while the API server is down, routing keeps serving; changes after it returns are applied', async () => {
    await api.goDown();
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await serviceFor('web.cluster'), 'web');
    assert.equal((await get(porticos[0]!.admin, 'x', '/readyz')).status, 200, 'still ready: it serves');
    const metrics = (await get(porticos[0]!.admin, 'x', '/metrics')).text;
    assert.match(metrics, /^portico_kubernetes_api_connected 0$/m);
    await api.comeUp();
    await createAll([ingress('after-outage', { rules: [{ host: 'after-outage.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await serviceFor('after-outage.cluster')) === 'web', 10_000, 'change after the outage');
  });

  test('with two replicas exactly one leads, and the other takes over when it dies', async () => {
    porticos.push(await startPortico(['--kubeconfig', kubeconfig, ...CLUSTER_FLAGS]));
    const [first, second] = porticos as [PorticoProcess, PorticoProcess];
    // Both serve traffic.
    await eventually(async () => (await get(second.http, 'web.cluster', '/')).status === 200, 5000, 'second replica serves');
    const leaders = () => porticos.filter((p) => p.child.exitCode === null && p.logs.filter((l) => l.msg === 'became leader').length > p.logs.filter((l) => l.msg === 'no longer leader').length);
    assert.equal(leaders().length, 1);
    assert.equal(leaders()[0], first);
    first.child.kill('SIGKILL');
    await second.waitForLog((l) => l.msg === 'became leader', 10_000);
    // The new leader writes status.
    porticos.shift();
    await createAll([ingress('after-failover', { rules: [{ host: 'after-failover.cluster', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await ingressStatus('after-failover')).join() === '198.51.100.10', 10_000, 'status by the new leader');
  });
});
