// Black-box, cluster mode: what a change costs, seen from outside. Status writes (portico's
// own, or someone else's) rebuild nothing; an EndpointSlice change reaches traffic
// without a new route table. Through the real CLI against the test API server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, settledCount, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

const PUBLISH = '198.51.100.10';

/** A metric's value from the Prometheus text (the sum over its series), 0 when absent. */
export function metric(text: string, name: string): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith(name + ' ') || line.startsWith(name + '{')) sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('cluster mode: changes that rebuild nothing', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let net: NetworkingV1Api;
  let portico: PorticoProcess;
  const echoes: Echo[] = [];
  const metrics = async () => (await get(portico.admin, 'localhost', '/metrics')).text;
  const status = async () => ((await net.readNamespacedIngress({ name: 'web', namespace: 'default' })).status?.loadBalancer?.ingress ?? []).map((e) => e.ip);

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token' });
    dir = mkdtempSync(join(tmpdir(), 'portico-updates-'));
    const kubeconfig = api.writeKubeconfig(dir);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    net = kc.makeApiClient(NetworkingV1Api);
    echoes.push(await startEchoServer({ name: 'web' }));
    for (const o of [ingressClass('portico'), ingress('web', { rules: [{ host: 'web.updates', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [echoes[0]!.port])]) api.apply(o);
    portico = await startPortico(['--kubeconfig', kubeconfig, '--publish-address', PUBLISH, '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms']);
  });

  after(async () => {
    await portico?.stop();
    await Promise.all(echoes.map((e) => e.close()));
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test("status writes translate nothing: portico's own, and someone else's (which portico puts right)", async () => {
    await eventually(async () => (await status()).includes(PUBLISH), 10_000, 'the publish address in the status');
    assert.equal((await get(portico.http, 'web.updates')).status, 200);
    const rebuilds = await settledCount(() => portico.logs.filter((l) => l.msg === 'route table updated').length);
    const version = metric(await metrics(), 'portico_route_table_version');
    // Someone else writes the status (the status subresource: spec and generation unchanged).
    await net.replaceNamespacedIngressStatus({
      name: 'web',
      namespace: 'default',
      body: { ...(await net.readNamespacedIngress({ name: 'web', namespace: 'default' })), status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } },
    });
    await eventually(async () => (await status()).join() === PUBLISH, 10_000, 'portico restoring its address');
    // Each pass logs one summary line at info, not one line per Ingress.
    await eventually(async () => portico.logs.filter((l) => l.msg === 'Ingress status written on 1 Ingress').length === 2, 10_000, 'a summary line per status pass');
    assert.equal(portico.logs.filter((l) => l.msg === 'Ingress status updated').length, 0, 'per-Ingress lines are debug');
    // Both status writes came back through the watch: neither rebuilt the table.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(metric(await metrics(), 'portico_route_table_version'), version);
    assert.equal(portico.logs.filter((l) => l.msg === 'route table updated').length, rebuilds);
    assert.equal((await get(portico.http, 'web.updates')).status, 200);
  });

  test('each new Ingress is translated once: its status write adds nothing, nor does a later full re-check', async () => {
    const translated = async () => metric(await metrics(), 'portico_ingresses_translated_total');
    const statusOf = async (name: string) => ((await net.readNamespacedIngress({ name, namespace: 'default' })).status?.loadBalancer?.ingress ?? []).map((e) => e.ip);
    const names = ['status-a', 'status-b', 'status-c'];
    const before = await translated();
    assert.ok(before >= 1, 'the first Ingress was translated');
    for (const name of names) api.apply(ingress(name, { rules: [{ host: `${name}.updates`, paths: [{ path: '/', service: 'web' }] }] }));
    for (const name of names) await eventually(async () => (await statusOf(name)).includes(PUBLISH), 10_000, `the publish address on ${name}`);
    for (const name of names) assert.equal((await get(portico.http, `${name}.updates`)).status, 200);
    // Time for the writes to come back through the watch.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await translated(), before + names.length, 'one translation per new Ingress, none per status write');
    // Another controller's IngressClass changes which classes exist: a new table, but no
    // Ingress names that class, so none is translated again (before, every Ingress was
    // checked, and each whose status portico wrote was translated again here).
    const version = metric(await metrics(), 'portico_route_table_version');
    api.apply(ingressClass('someone-else', { controller: 'example.com/other' }));
    await eventually(async () => metric(await metrics(), 'portico_route_table_version') > version, 10_000, 'the full re-check');
    assert.equal(await translated(), before + names.length, 'no Ingress translated again by the full re-check');
    for (const name of ['web', ...names]) assert.equal((await get(portico.http, `${name}.updates`)).status, 200);
  });

  test('an EndpointSlice change reaches traffic without a translation; losing every endpoint is still reported', async () => {
    const pods = [await startEchoServer({ name: 'moving' }), await startEchoServer({ name: 'moving' })];
    echoes.push(...pods);
    const slice = (ready: Echo[]) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'moving-pods', namespace: 'default', labels: { 'kubernetes.io/service-name': 'moving' } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: pods[0]!.port, protocol: 'TCP' }],
      endpoints: ready.map(() => ({ addresses: ['127.0.0.1'], conditions: { ready: true } })),
    });
    // One pod per slice port: pods[1] is reached through a second slice on its port.
    const secondSlice = (ready: boolean) => ({ ...slice([]), metadata: { ...slice([]).metadata, name: 'moving-pods-2' }, ports: [{ name: 'http', port: pods[1]!.port, protocol: 'TCP' }], endpoints: ready ? [{ addresses: ['127.0.0.1'], conditions: { ready: true } }] : [] });
    api.apply({ apiVersion: 'v1', kind: 'Service', metadata: { name: 'moving', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] } });
    api.apply(slice([pods[0]!]));
    api.apply(ingress('moving', { rules: [{ host: 'moving.updates', paths: [{ path: '/', service: 'moving' }] }] }));
    const pod = async () => {
      const r = await get(portico.http, 'moving.updates');
      return r.status === 200 ? r.json<{ pod: string }>().pod : r.status;
    };
    const routesEndpoints = async () => {
      const view = JSON.parse((await get(portico.admin, 'localhost', '/routes')).text) as { hosts: Record<string, Record<string, { backend: { endpoints: string[]; state: string } }>>; problems: { reason: string; object: { name: string } }[] };
      return { backend: view.hosts['moving.updates']!['/']!.backend, problems: view.problems.filter((p) => p.object.name === 'moving').map((p) => p.reason) };
    };
    await eventually(async () => (await pod()) === `moving-${pods[0]!.port}`, 5000, 'the first pod serves');
    const version = metric(await metrics(), 'portico_route_table_version');
    const updates = metric(await metrics(), 'portico_endpoint_updates_total');

    // A rolling replacement: the new pod joins, then the old one leaves.
    api.apply(secondSlice(true));
    api.apply(slice([]));
    await eventually(async () => (await pod()) === `moving-${pods[1]!.port}`, 5000, 'the second pod alone serves');
    for (let i = 0; i < 10; i++) assert.equal(await pod(), `moving-${pods[1]!.port}`);
    assert.equal(metric(await metrics(), 'portico_route_table_version'), version, 'no route table was built');
    assert.ok(metric(await metrics(), 'portico_endpoint_updates_total') >= updates + 1);
    assert.deepEqual(await routesEndpoints(), { backend: { service: 'default/moving', port: '80', endpoints: [`127.0.0.1:${pods[1]!.port}`], state: 'ok' }, problems: [] });
    const explained = JSON.parse((await get(portico.admin, 'localhost', '/routes/explain?url=' + encodeURIComponent('http://moving.updates/'))).text) as { route: { backends: { endpoints: string[] }[] } };
    assert.deepEqual(explained.route.backends[0]!.endpoints, [`127.0.0.1:${pods[1]!.port}`], 'explain shows the pod in service');

    // No ready endpoint left: a problem, as before (this one is translated), and 503.
    api.apply(secondSlice(false));
    await eventually(async () => (await pod()) === 503, 5000, '503 without endpoints');
    const down = await routesEndpoints();
    assert.equal(down.backend.state, 'NoEndpoints');
    assert.deepEqual(down.problems, ['NoEndpoints']);
    api.apply(slice([pods[0]!]));
    await eventually(async () => (await pod()) === `moving-${pods[0]!.port}`, 5000, 'back on the first pod');
    assert.deepEqual((await routesEndpoints()).problems, []);
  });
});
