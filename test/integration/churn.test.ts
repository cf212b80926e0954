// Zero errors through churn (issue 12), small: requests keep flowing to one host while
// other Ingresses change, its own Ingress switches backends, and every pod of its
// Service is replaced, rolling. Every answer must be a 200 from a pod.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer, type EchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints, type Obj } from '../support/objects.ts';
import { get } from '../support/http.ts';

const HOST = 'steady.local';

function slices(name: string, pods: { port: number; ready: boolean; terminating?: boolean }[]): Obj[] {
  const [service] = serviceWithEndpoints(name, [pods[0]!.port]);
  return [
    service!,
    ...pods.map((p, i) => ({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${name}-${i}`, namespace: 'default', labels: { 'kubernetes.io/service-name': name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: p.port, protocol: 'TCP' }],
      endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: p.ready, serving: true, terminating: p.terminating ?? false } }],
    })),
  ];
}

describe('churn under load', () => {
  const dir = new ManifestDir();
  const pods: EchoServer[] = [];
  let portico: PorticoProcess;

  before(async () => {
    for (let i = 0; i < 3; i++) pods.push(await startEchoServer({ name: i < 2 ? 'web' : 'other' }));
    dir.write('base.yaml', [ingressClass('portico'), ...serviceWithEndpoints('other', [pods[2]!.port])]);
    dir.write('web.yaml', slices('web', [{ port: pods[0]!.port, ready: true }, { port: pods[1]!.port, ready: true }]));
    dir.write('steady.yaml', [ingress('steady', { rules: [{ host: HOST, paths: [{ path: '/', service: 'web' }] }] })]);
    for (let i = 0; i < 50; i++) dir.write(`other-${i}.yaml`, [ingress(`other-${i}`, { rules: [{ host: `o${i}.local`, paths: [{ path: '/', service: 'other' }] }] })]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    await portico?.stop();
    for (const p of pods) await p.close();
    dir.cleanup();
  });

  test('no request fails while routes, backends and pods change', async () => {
    let stop = false;
    const failures: string[] = [];
    let served = 0;
    // Four clients, each on its own connections, for the whole test.
    const clients = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const r = await get(portico.http, HOST, '/').catch((err: Error) => ({ status: 0, text: err.message }));
        if (r.status !== 200) failures.push(`${r.status} ${r.text.slice(0, 80)}`);
        served++;
      }
    });
    const tick = () => new Promise((r) => setTimeout(r, 15));
    // Other Ingresses change, and the loaded host switches backend and back.
    for (let i = 0; i < 60; i++) {
      dir.write(`other-${i % 50}.yaml`, [ingress(`other-${i % 50}`, { rules: [{ host: `o${i % 50}.local`, paths: [{ path: `/v${i}`, service: 'other' }] }] })]);
      if (i % 10 === 5) dir.write('steady.yaml', [ingress('steady', { rules: [{ host: HOST, paths: [{ path: '/', service: i % 20 === 5 ? 'other' : 'web' }] }] })]);
      await tick();
    }
    dir.write('steady.yaml', [ingress('steady', { rules: [{ host: HOST, paths: [{ path: '/', service: 'web' }] }] })]);
    // Rolling replacement of both pods of web: new ready, old terminating, old removed, old stopped.
    let current = [{ port: pods[0]!.port, ready: true }, { port: pods[1]!.port, ready: true }];
    for (const old of [pods[0]!, pods[1]!]) {
      const fresh = await startEchoServer({ name: 'web' });
      pods.push(fresh);
      current = [...current, { port: fresh.port, ready: true }];
      dir.write('web.yaml', slices('web', current));
      await new Promise((r) => setTimeout(r, 300));
      current = current.map((p) => (p.port === old.port ? { ...p, ready: false, terminating: true } : p));
      dir.write('web.yaml', slices('web', current));
      await new Promise((r) => setTimeout(r, 300));
      current = current.filter((p) => p.port !== old.port);
      dir.write('web.yaml', slices('web', current));
      await eventually(async () => !JSON.stringify((await get(portico.admin, 'localhost', '/routes')).json()).includes(`:${old.port}"`), 5000, 'the old pod left the table');
      await new Promise((r) => setTimeout(r, 300));
      await old.close();
    }
    await new Promise((r) => setTimeout(r, 300));
    stop = true;
    await Promise.all(clients);
    assert.deepEqual(failures, [], `${failures.length} of ${served} requests failed`);
    assert.ok(served > 100, `only ${served} requests were made`);
  });
});
