// Black-box: GRPCRoute in cluster mode against the test API server: GRPCRoutes are
// watched and served (gRPC over h2c on the Gateway's listener), the leader writes their
// status.parents through the status subresource, and the Gateway's listeners count them
// in attachedRoutes beside HTTPRoutes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeKubeApiServer } from '../support/kube-apiserver/index.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { serviceWithEndpoints } from '../support/objects.ts';
import { freePort, gateway, gatewayClass, grpcRoute, httpRoute } from '../support/gateway-objects.ts';
import { echoClient, grpc, startGrpcServer, unary, type EchoClient, type GrpcServer } from '../support/grpc.ts';

const CLUSTER_FLAGS = ['--publish-address', '198.51.100.10', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms'];

interface ParentStatus {
  parentRef: { name: string; sectionName?: string };
  controllerName: string;
  conditions: { type: string; status: string; reason: string; observedGeneration?: number }[];
}

/** Our entries of the GRPCRoute's status.parents, each as its conditions "Type=Status:Reason". */
function parents(api: FakeKubeApiServer, name: string): { parent: string; conditions: string[] }[] {
  const status = api.get('GRPCRoute', 'default', name)?.status as { parents?: ParentStatus[] } | undefined;
  return (status?.parents ?? []).map((p) => ({
    parent: `${p.controllerName} ${p.parentRef.name}/${p.parentRef.sectionName ?? ''}`,
    conditions: p.conditions.map((c) => `${c.type}=${c.status}:${c.reason}`),
  }));
}

describe('GRPCRoute in cluster mode', () => {
  let api: FakeKubeApiServer;
  let dir: string;
  let portico: PorticoProcess;
  let pod: GrpcServer;
  let client: EchoClient;
  let port: number;

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token', tls: true });
    dir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    pod = await startGrpcServer('echo');
    port = await freePort();
    const httpOnly = await freePort();
    for (const o of [
      ...serviceWithEndpoints('echo', [pod.port]),
      gatewayClass(),
      gateway('gw', [
        { name: 'grpc', port, protocol: 'HTTP' },
        { name: 'http-only', port: httpOnly, protocol: 'HTTP', allowedRoutes: { kinds: [{ kind: 'HTTPRoute' }] } },
      ]),
      grpcRoute('echo', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }], hostnames: ['grpc.cluster'], rules: [{ matches: [{ method: { service: 'test.Echo' } }], backendRefs: [{ name: 'echo', port: 80 }] }] }),
      grpcRoute('missing-backend', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }], hostnames: ['missing.cluster'], rules: [{ backendRefs: [{ name: 'no-such-service', port: 80 }] }] }),
      grpcRoute('wrong-listener', { parentRefs: [{ name: 'gw', sectionName: 'http-only' }], hostnames: ['wrong.cluster'], rules: [{ backendRefs: [{ name: 'echo', port: 80 }] }] }),
      httpRoute('web', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }], hostnames: ['web.cluster'], rules: [{ backendRefs: [{ name: 'echo', port: 80 }] }] }),
      // The HTTPRoute's hostname on the same listener: one of the two must be refused (created in the same second, the name decides).
      grpcRoute('x-clash', { parentRefs: [{ name: 'gw', sectionName: 'grpc' }], hostnames: ['web.cluster'], rules: [{ backendRefs: [{ name: 'echo', port: 80 }] }] }),
    ]) {
      api.apply(o);
    }
    portico = await startPortico(['--kubeconfig', api.writeKubeconfig(dir), ...CLUSTER_FLAGS]);
    client = echoClient(port, 'grpc.cluster');
  });

  after(async () => {
    client?.close();
    await portico?.stop();
    await pod?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a GRPCRoute from the API server serves gRPC calls on its listener', async () => {
    await eventually(async () => (await unary(client, 'unary', Buffer.from('hi'))).err === null, 10_000, 'the GRPCRoute serves');
    const { err, res } = await unary(client, 'unary', Buffer.from('hi'));
    assert.equal(err, null);
    assert.equal(res?.toString(), 'echo:/test.Echo/Unary:hi');
  });

  test('the leader writes status.parents: Accepted and ResolvedRefs, at the route\'s generation', async () => {
    const ours = 'portico.dev/gateway-controller gw/grpc';
    await eventually(async () => parents(api, 'echo').length > 0, 10_000, 'GRPCRoute status');
    assert.deepEqual(parents(api, 'echo'), [{ parent: ours, conditions: ['Accepted=True:Accepted', 'ResolvedRefs=True:ResolvedRefs'] }]);
    const route = api.get('GRPCRoute', 'default', 'echo')!;
    const written = (route.status as { parents: ParentStatus[] }).parents[0]!.conditions;
    assert.ok(written.every((c) => c.observedGeneration === route.metadata.generation));
    assert.ok(api.requests.some((r) => r.verb === 'patch' && r.subresource === 'status' && r.path.includes('/grpcroutes/echo/')));
  });

  test('a backendRef to a missing Service: Accepted, ResolvedRefs False with reason BackendNotFound', async () => {
    await eventually(async () => parents(api, 'missing-backend').length > 0, 10_000, 'GRPCRoute status');
    assert.deepEqual(parents(api, 'missing-backend'), [{ parent: 'portico.dev/gateway-controller gw/grpc', conditions: ['Accepted=True:Accepted', 'ResolvedRefs=False:BackendNotFound'] }]);
  });

  test('a listener that allows only HTTPRoutes does not accept a GRPCRoute (NotAllowedByListeners)', async () => {
    await eventually(async () => parents(api, 'wrong-listener').length > 0, 10_000, 'GRPCRoute status');
    const [entry] = parents(api, 'wrong-listener');
    assert.equal(entry!.parent, 'portico.dev/gateway-controller gw/http-only');
    assert.ok(entry!.conditions.includes('Accepted=False:NotAllowedByListeners'), entry!.conditions.join(', '));
  });

  test('a GRPCRoute on an HTTPRoute\'s hostname is refused there (HostnameConflict); the HTTPRoute keeps it', async () => {
    await eventually(async () => parents(api, 'x-clash').length > 0, 10_000, 'GRPCRoute status');
    const [entry] = parents(api, 'x-clash');
    assert.ok(entry!.conditions.includes('Accepted=False:HostnameConflict'), entry!.conditions.join(', '));
    const web = (api.get('HTTPRoute', 'default', 'web')!.status as { parents: ParentStatus[] }).parents[0]!;
    assert.ok(web.conditions.some((c) => c.type === 'Accepted' && c.status === 'True'));
  });

  test('the Gateway counts GRPCRoutes in attachedRoutes beside HTTPRoutes, and lists GRPCRoute in supportedKinds', async () => {
    type Listener = { name: string; attachedRoutes: number; supportedKinds: { kind: string }[] };
    const listeners = () => ((api.get('Gateway', 'default', 'gw')?.status as { listeners?: Listener[] } | undefined)?.listeners ?? []);
    await eventually(async () => listeners().length === 2, 10_000, 'Gateway status');
    const byName = new Map(listeners().map((l) => [l.name, l]));
    // On "grpc": the GRPCRoutes echo and missing-backend (accepted, one with a bad ref) and the HTTPRoute web; not x-clash.
    assert.equal(byName.get('grpc')!.attachedRoutes, 3);
    assert.deepEqual(byName.get('grpc')!.supportedKinds.map((k) => k.kind).sort(), ['GRPCRoute', 'HTTPRoute']);
    assert.equal(byName.get('http-only')!.attachedRoutes, 0);
    assert.deepEqual(byName.get('http-only')!.supportedKinds.map((k) => k.kind), ['HTTPRoute']);
  });

  test('a GRPCRoute deleted from the API server stops serving and leaves the count', async () => {
    api.remove('GRPCRoute', 'default', 'echo');
    await eventually(async () => (await unary(client, 'unary', Buffer.from('hi'))).err?.code === grpc.status.UNIMPLEMENTED, 10_000, 'the route is gone');
    type Listener = { name: string; attachedRoutes: number };
    await eventually(
      async () => ((api.get('Gateway', 'default', 'gw')!.status as { listeners: Listener[] }).listeners.find((l) => l.name === 'grpc')!.attachedRoutes === 2),
      10_000,
      'attachedRoutes follows',
    );
  });
});
