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
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
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
    const version = metric(await metrics(), 'portico_route_table_version');
    const rebuilds = portico.logs.filter((l) => l.msg === 'route table updated').length;
    // Someone else writes the status (the status subresource: spec and generation unchanged).
    await net.replaceNamespacedIngressStatus({
      name: 'web',
      namespace: 'default',
      body: { ...(await net.readNamespacedIngress({ name: 'web', namespace: 'default' })), status: { loadBalancer: { ingress: [{ ip: '203.0.113.7' }] } } },
    });
    await eventually(async () => (await status()).join() === PUBLISH, 10_000, 'portico restoring its address');
    // Both status writes came back through the watch: neither rebuilt the table.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(metric(await metrics(), 'portico_route_table_version'), version);
    assert.equal(portico.logs.filter((l) => l.msg === 'route table updated').length, rebuilds);
    assert.equal((await get(portico.http, 'web.updates')).status, 200);
  });
});
