// Black-box, cluster mode: --challenge-secret reads the Secret through the Kubernetes API
// (the test API server), so every replica signs challenges with the same key.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, DiscoveryV1Api, KubeConfig, NetworkingV1Api } from '@kubernetes/client-node';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { issueClearance, setChallengeKey } from '../../src/challenge/tokens.ts';

const KEY = Buffer.alloc(32, 77);

describe('cluster mode: the challenge key from a Secret in the API', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let portico: PorticoProcess;
  let echo: Awaited<ReturnType<typeof startEchoServer>>;

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token', tls: true });
    dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    const kubeconfig = api.writeKubeconfig(dir);
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const net = kc.makeApiClient(NetworkingV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const discovery = kc.makeApiClient(DiscoveryV1Api);
    echo = await startEchoServer({ name: 'web' });
    await net.createIngressClass({ body: ingressClass('portico') as never });
    await net.createNamespacedIngress({ namespace: 'default', body: ingress('web', { rules: [{ host: 'guarded.cluster', paths: [{ path: '/', service: 'web' }] }] }, { annotations: { 'portico.dev/under-attack': 'true' } }) as never });
    const [service, slice] = serviceWithEndpoints('web', [echo.port]);
    await core.createNamespacedService({ namespace: 'default', body: service as never });
    await discovery.createNamespacedEndpointSlice({ namespace: 'default', body: slice as never });
    await core.createNamespacedSecret({ namespace: 'edge', body: { metadata: { name: 'challenge', namespace: 'edge' }, type: 'Opaque', data: { key: KEY.toString('base64') } } });
    portico = await startPortico(['--kubeconfig', kubeconfig, '--challenge-secret', 'edge/challenge', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms']);
  });

  after(async () => {
    await portico?.stop();
    await echo?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a clearance signed with the Secret\'s key (as by another replica) lets the request through; none gets the challenge', async () => {
    setChallengeKey(KEY);
    const cookie = `portico_clearance=${issueClearance('guarded.cluster', Math.floor(Date.now() / 1000) + 60)}`;
    assert.equal((await get(portico.http, 'guarded.cluster', '/', { headers: { cookie } })).status, 200);
    const challenged = await get(portico.http, 'guarded.cluster', '/');
    assert.equal(challenged.status, 403);
    assert.match(challenged.text, /Checking your browser/);
  });
});
