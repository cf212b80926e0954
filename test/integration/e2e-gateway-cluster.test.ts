// Black-box: Gateway API in cluster mode against the test API server: Gateway kinds
// are watched when their CRDs are served, the leader writes status through the status
// subresource (and leaves other controllers' entries alone), and a cluster without
// the CRDs still serves Ingress.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';
import { get } from '../support/http.ts';

const CLUSTER_FLAGS = ['--publish-address', '198.51.100.10', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];
type Echo = Awaited<ReturnType<typeof startEchoServer>>;

/** Conditions of the route's status.parents[index], as "Type=Status:Reason". */
function parentConditions(api: FakeKubeApiServer, name: string, index: number): string[] {
  const status = api.get('HTTPRoute', 'default', name)?.status as { parents?: { conditions?: unknown }[] } | undefined;
  return conditions(status?.parents?.[index]?.conditions);
}

function conditions(list: unknown): string[] {
  return ((list ?? []) as { type: string; status: string; reason: string }[]).map((c) => `${c.type}=${c.status}:${c.reason}`);
}

describe('Gateway API in cluster mode', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let portico: PorticoProcess;
  let echo: Echo;
  let port: number;

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token', tls: true });
    dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    echo = await startEchoServer({ name: 'web' });
    port = await freePort();
    for (const o of [
      ...serviceWithEndpoints('web', [echo.port]),
      gatewayClass(),
      gateway('gw', [{ name: 'http', port, protocol: 'HTTP' }]),
      httpRoute('web', { parentRefs: [{ name: 'gw' }, { name: 'theirs' }], hostnames: ['web.cluster'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }),
    ]) {
      api.apply(o);
    }
    // Another controller's entry for its own Gateway: portico must keep it.
    const route = api.get('HTTPRoute', 'default', 'web')!;
    api.apply({ ...route, status: { parents: [{ parentRef: { name: 'theirs' }, controllerName: 'example.com/other', conditions: [{ type: 'Accepted', status: 'True', reason: 'Accepted', lastTransitionTime: '2026-01-01T00:00:00Z' }] }] } });
    portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), ...CLUSTER_FLAGS]);
  });

  after(async () => {
    await portico?.stop();
    await echo?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('serves HTTPRoutes on the Gateway listener port, and new routes as they are created', async () => {
    await eventually(async () => (await get(port, 'web.cluster', '/').catch(() => ({ status: 0 }))).status === 200, 10_000, 'the Gateway serves');
    api.apply(httpRoute('late', { parentRefs: [{ name: 'gw' }], hostnames: ['late.cluster'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }));
    await eventually(async () => (await get(port, 'late.cluster', '/')).status === 200, 5000, 'the new route serves');
  });

  test('the leader writes status: class Accepted, Gateway Programmed with its address, route parents with ours beside theirs', async () => {
    await eventually(async () => parentConditions(api, 'web', 1).includes('Accepted=True:Accepted'), 10_000, 'route status');
    assert.deepEqual(conditions((api.get('GatewayClass', undefined, 'portico')!.status as { conditions?: unknown }).conditions), ['Accepted=True:Accepted']);
    const gw = api.get('Gateway', 'default', 'gw')!;
    const status = gw.status as { addresses: unknown[]; conditions: unknown; listeners: { attachedRoutes: number; conditions: unknown }[] };
    assert.deepEqual(status.addresses, [{ type: 'IPAddress', value: '198.51.100.10' }]);
    assert.deepEqual(conditions(status.conditions), ['Accepted=True:Accepted', 'Programmed=True:Programmed']);
    assert.ok(status.listeners[0]!.attachedRoutes >= 1);
    assert.ok((status.conditions as { observedGeneration: number }[]).every((c) => c.observedGeneration === gw.metadata.generation));
    const parents = (api.get('HTTPRoute', 'default', 'web')!.status as { parents: { controllerName: string; parentRef: { name: string }; conditions: { lastTransitionTime: string }[] }[] }).parents;
    assert.deepEqual(parents.map((p) => `${p.controllerName} ${p.parentRef.name}`), ['example.com/other theirs', 'portico.dev/gateway-controller gw']);
    assert.equal(parents[0]!.conditions[0]!.lastTransitionTime, '2026-01-01T00:00:00Z');
    assert.ok(parents[1]!.conditions.every((c) => c.lastTransitionTime !== undefined));
  });

  test('a spec change bumps the generation, and the status follows it (GatewayObservedGenerationBump)', async () => {
    const before = api.get('Gateway', 'default', 'gw')!;
    const extra = await freePort();
    api.apply({ ...before, spec: { ...(before.spec as object), listeners: [...((before.spec as { listeners: unknown[] }).listeners), { name: 'more', port: extra, protocol: 'HTTP' }] } });
    const generation = api.get('Gateway', 'default', 'gw')!.metadata.generation!;
    assert.ok(generation > before.metadata.generation!);
    await eventually(
      async () => {
        const status = api.get('Gateway', 'default', 'gw')!.status as { conditions: { observedGeneration: number }[]; listeners: { name: string }[] };
        return status.conditions.every((c) => c.observedGeneration === generation) && status.listeners.some((l) => l.name === 'more');
      },
      10_000,
      'status at the new generation',
    );
    await eventually(async () => (await get(extra, 'web.cluster', '/').catch(() => ({ status: 0 }))).status === 200, 5000, 'the new listener serves');
  });

  test('status is written only when it changes', async () => {
    await eventually(async () => parentConditions(api, 'late', 0).includes('Accepted=True:Accepted'), 10_000, 'late route status');
    await new Promise((r) => setTimeout(r, 500));
    const writes = () => api.requests.filter((r) => r.subresource === 'status' && r.verb === 'patch' && r.group === 'gateway.networking.k8s.io').length;
    const before = writes();
    // An unrelated change makes portico rebuild; no status differs, so nothing is written.
    api.apply(ingressClass('unrelated', { controller: 'example.com/other' }));
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(writes(), before);
  });

  test('a route in sync whose status someone else rewrites is put right, while an unchanged one is left alone', async () => {
    await eventually(async () => parentConditions(api, 'late', 0).includes('Accepted=True:Accepted'), 10_000, 'late route status');
    // Another change first, so the writer has compared (and found in sync) both routes.
    api.apply(ingressClass('unrelated-2', { controller: 'example.com/other' }));
    await new Promise((r) => setTimeout(r, 500));
    const webParents = JSON.stringify((api.get('HTTPRoute', 'default', 'web')!.status as { parents: unknown }).parents);
    const late = api.get('HTTPRoute', 'default', 'late')!;
    const parents = (late.status as { parents: { conditions: { type: string; status: string; reason: string }[] }[] }).parents;
    api.apply({ ...late, status: { parents: parents.map((p) => ({ ...p, conditions: p.conditions.map((c) => (c.type === 'Accepted' ? { ...c, status: 'False', reason: 'Tampered' } : c)) })) } });
    await eventually(async () => parentConditions(api, 'late', 0).includes('Accepted=True:Accepted'), 10_000, 'portico restores its own parent entry');
    assert.equal(JSON.stringify((api.get('HTTPRoute', 'default', 'web')!.status as { parents: unknown }).parents), webParents, 'the other route was not rewritten');
  });
});

describe('cluster mode without the Gateway API CRDs', () => {
  test('starts, says so once, and serves Ingress', async () => {
    const api = await FakeKubeApiServer.start({ token: 't', tls: true, withoutCrds: true });
    const dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    const echo = await startEchoServer({ name: 'web' });
    let portico: PorticoProcess | undefined;
    try {
      for (const o of [ingressClass('portico'), ingress('web', { rules: [{ host: 'web.cluster', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [echo.port])]) api.apply(o);
      portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), ...CLUSTER_FLAGS]);
      await portico.waitForLog((l) => String(l.msg).startsWith('Gateway API CRDs not installed'), 5000);
      await eventually(async () => (await get(portico!.http, 'web.cluster', '/')).status === 200, 5000, 'Ingress serves');
      assert.ok(!api.requests.some((r) => r.group === 'gateway.networking.k8s.io' && r.verb === 'watch'));
    } finally {
      await portico?.stop();
      await echo.close();
      await api.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
