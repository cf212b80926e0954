// Black-box: scale-to-zero in cluster mode, two portico replicas (the real CLI; the
// follower with 2 worker processes) against
// the test API server, whose workload simulator plays the Deployment and EndpointSlice
// controllers: scaling a Deployment to N publishes, after a boot delay, an EndpointSlice
// whose address is a real local echo backend; scaling to 0 withdraws it.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import WebSocket from 'ws';
import { FakeKubeApiServer, type KubeObj } from '../support/kube-apiserver/index.ts';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ingress, ingressClass, type Obj } from '../support/objects.ts';
import { get, send, type Reply } from '../support/http.ts';
import { freePort } from '../support/ports.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

const CLUSTER_FLAGS = ['--publish-address', '198.51.100.10', '--lease-duration', '2s', '--renew-deadline', '1500ms', '--retry-period', '250ms', '--debounce', '0'];

function sleepyService(name: string, annotations: Record<string, string>): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', annotations: { 'portico.dev/scale-to-zero': 'true', ...annotations } },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 'http' }] },
  };
}

function deployment(name: string, replicas: number): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'example/app' }] } },
    },
  };
}

const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The tests use separate Services and run at once (they mostly wait on timers).
describe('scale-to-zero in a cluster, two replicas', { concurrency: true }, () => {
  let api: FakeKubeApiServer;
  let kubeconfigDir: string;
  let leader: PorticoProcess;
  let follower: PorticoProcess;
  const echoes: Echo[] = [];
  const simulations: { stop(): void }[] = [];

  const replicasOf = (name: string): number => (api.get('Deployment', 'default', name) as KubeObj & { spec: { replicas?: number } }).spec.replicas ?? 1;
  const scaleWrites = (name: string) =>
    api.requests.filter((r) => r.resource === 'deployments' && r.name === name && r.subresource === 'scale' && (r.verb === 'patch' || r.verb === 'update') && (r.status ?? 0) < 300);
  const serviceEvents = (name: string, reason: string) =>
    api.list('Event', 'default').filter((e) => {
      const ev = e as KubeObj & { involvedObject?: { kind?: string; name?: string }; reason?: string };
      return ev.involvedObject?.kind === 'Service' && ev.involvedObject.name === name && ev.reason === reason;
    });

  /** A sleepable app: Service, Deployment at `replicas`, an echo backend and the simulated controllers. */
  async function app(name: string, annotations: Record<string, string>, options: { replicas?: number; bootDelayMs?: number; port?: number; withoutBackend?: boolean; invalid?: boolean } = {}) {
    let port = options.port;
    if (port === undefined && !options.withoutBackend) {
      const echo = await startEchoServer({ name });
      echoes.push(echo);
      port = echo.port;
    }
    api.apply(sleepyService(name, annotations));
    api.apply(deployment(name, options.replicas ?? 1));
    const sim = api.simulateWorkload({
      kind: 'Deployment',
      namespace: 'default',
      name,
      service: name,
      portName: 'http',
      addresses: [{ ip: '127.0.0.1', port: port ?? 9 }],
      bootDelayMs: options.bootDelayMs ?? 100,
    });
    simulations.push(sim);
    if (!options.invalid) await known(name);
    return sim;
  }

  /** Both replicas track the Service (and the follower's workers have had time to get its routes). */
  async function known(name: string): Promise<void> {
    for (const p of [leader, follower]) {
      await eventually(async () => ((await get(p.admin, 'x', '/routes')).json().scaleToZero as { service: string }[]).some((s) => s.service === `default/${name}`), 15_000, `${name} tracked`);
    }
    await delay(200);
  }

  before(async () => {
    api = await FakeKubeApiServer.start({ token: 'test-token', tls: true });
    kubeconfigDir = mkdtempSync(join(tmpdir(), 'portico-kubeconfig-'));
    const kubeconfig = api.writeKubeconfig(kubeconfigDir);
    const hosts = ['idle', 'crowd', 'boot', 'shared', 'edge', 'long', 'socket', 'never', 'bad', 'ghost'];
    api.apply(ingressClass('portico'));
    api.apply(ingress('apps', { rules: hosts.map((h) => ({ host: `${h}.test`, paths: [{ path: '/', service: h }] })) }));
    leader = await startPortico(['--kubeconfig', kubeconfig, ...CLUSTER_FLAGS]);
    await leader.waitForLog((l) => l.msg === 'became leader');
    // The follower runs 2 workers: its traffic reaches the shared activity through the primary.
    follower = await startPortico(['--kubeconfig', kubeconfig, ...CLUSTER_FLAGS, '--workers', '2']);
  });

  after(async () => {
    for (const sim of simulations) sim.stop();
    await Promise.all([leader?.stop(), follower?.stop()]);
    await Promise.all(echoes.map((e) => e.close()));
    await api?.stop();
    rmSync(kubeconfigDir, { recursive: true, force: true });
  });

  test('an idle Service is scaled to 0 by the leader, its replica count noted; a request wakes it back to that count, body kept', async () => {
    await app('idle', { 'portico.dev/sleep-after': '1s' }, { replicas: 2 });
    await eventually(async () => replicasOf('idle') === 0, 20_000, 'scaled to 0');
    const workload = api.get('Deployment', 'default', 'idle') as KubeObj;
    assert.equal(workload.metadata.annotations?.['portico.dev/replicas-before-sleep'], '2');
    await eventually(async () => serviceEvents('idle', 'Sleeping').length === 1, 15_000, 'a Sleeping Event');
    // The endpoints are withdrawn: the next request is held and wakes it.
    await eventually(async () => ((await get(leader.admin, 'x', '/routes')).json().scaleToZero as { service: string; state: string }[]).some((s) => s.service === 'default/idle' && s.state === 'sleeping'), 15_000, 'shown sleeping');

    const body = randomBytes(100_000);
    const reply = await send(follower.http, { method: 'POST', host: 'idle.test', path: '/orders', body, timeoutMs: 20_000 });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json().bodySha256, createHash('sha256').update(body).digest('hex'));
    assert.equal(replicasOf('idle'), 2, 'woken to the noted count');
    await eventually(async () => serviceEvents('idle', 'Waking').length === 1, 15_000, 'a Waking Event');
  });

  test('200 concurrent held requests through both replicas: one scale write, every request answered', async () => {
    // Scaled to 0 by someone else: a request wakes it just the same (to 1: nothing noted).
    await app('crowd', { 'portico.dev/sleep-after': '1h' }, { replicas: 0, bootDelayMs: 300 });
    const requests: Promise<Reply>[] = [];
    for (let i = 0; i < 200; i++) {
      const port = i % 2 === 0 ? leader.http : follower.http;
      requests.push(i % 4 < 2 ? get(port, 'crowd.test', `/r/${i}`, { timeoutMs: 20_000 }) : send(port, { method: 'POST', host: 'crowd.test', path: `/r/${i}`, body: `n=${i}`, timeoutMs: 20_000 }));
    }
    const replies = await Promise.all(requests);
    replies.forEach((reply, i) => {
      assert.equal(reply.status, 200, `request ${i}: ${reply.text}`);
      assert.equal(reply.json().path, `/r/${i}`);
    });
    assert.equal(scaleWrites('crowd').length, 1, 'exactly one scale-up');
    assert.equal(replicasOf('crowd'), 1);
  });

  test('a pod that is ready before it listens: refused connections are retried, no 502', async () => {
    const port = await freePort();
    const sim = await app('boot', { 'portico.dev/sleep-after': '1h' }, { replicas: 0, bootDelayMs: 50, port });
    const pending = get(follower.http, 'boot.test', '/hello', { timeoutMs: 20_000 });
    await eventually(async () => replicasOf('boot') === 1, 15_000, 'scaled up');
    await delay(700); // the slice is published; the "pod" is not listening yet
    const echo = await startEchoServer({ name: 'boot', port });
    echoes.push(echo);
    const reply = await pending;
    assert.equal(reply.status, 200, reply.text);
    assert.ok(sim.scaleHistory.includes(1));
  });

  test('traffic through the follower alone keeps a Service awake; when it stops, the leader puts it to sleep', async () => {
    await app('shared', { 'portico.dev/sleep-after': '2s' });
    await eventually(async () => (await get(follower.http, 'shared.test', '/')).status === 200, 15_000, 'served');
    const until = Date.now() + 5000;
    while (Date.now() < until) {
      assert.equal((await get(follower.http, 'shared.test', '/')).status, 200);
      await delay(300);
    }
    assert.equal(replicasOf('shared'), 1, 'still awake after 2.5 × sleep-after of traffic through the follower');
    assert.equal(scaleWrites('shared').length, 0);
    await eventually(async () => replicasOf('shared') === 0, 20_000, 'asleep once idle');
    const sleptIt = (p: PorticoProcess) => p.logs.some((l) => typeof l.msg === 'string' && l.msg.startsWith('Service default/shared: no request'));
    await eventually(async () => sleptIt(leader), 15_000, 'the leader logs the sleep');
    assert.equal(sleptIt(follower), false, 'only the leader scales down');
  });

  test('a request at the moment of sleep is answered, and the Service comes back if it was needed', async () => {
    await app('edge', { 'portico.dev/sleep-after': '1s' });
    await eventually(async () => (await get(leader.http, 'edge.test', '/')).status === 200, 15_000, 'served');
    // Fire requests as the scale-down lands, and right after it.
    await eventually(async () => replicasOf('edge') === 0, 20_000, 'scaled to 0');
    const replies = await Promise.all([get(follower.http, 'edge.test', '/now', { timeoutMs: 20_000 }), delay(50).then(() => get(leader.http, 'edge.test', '/after', { timeoutMs: 20_000 }))]);
    for (const reply of replies) assert.equal(reply.status, 200, reply.text);
  });

  test('a long request in flight keeps its Service awake until it ends', async () => {
    await app('long', { 'portico.dev/sleep-after': '2s' });
    await eventually(async () => (await get(follower.http, 'long.test', '/')).status === 200, 15_000, 'served');
    const long = get(follower.http, 'long.test', '/slow?delay=5000ms', { timeoutMs: 20_000 });
    await delay(4500);
    assert.equal(replicasOf('long'), 1, 'awake while the request is in flight');
    assert.equal((await long).status, 200);
    await eventually(async () => replicasOf('long') === 0, 20_000, 'asleep after it ended');
  });

  test('an open WebSocket keeps its Service awake until it closes', async () => {
    await app('socket', { 'portico.dev/sleep-after': '2s' });
    const ws = new WebSocket(`ws://127.0.0.1:${follower.http}/chat`, { headers: { host: 'socket.test' } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    await delay(4500);
    assert.equal(replicasOf('socket'), 1, 'awake while the WebSocket is open');
    const echoed = new Promise<string>((resolve) => ws.once('message', (data) => resolve(String(data))));
    ws.send('still here');
    assert.match(await echoed, /still here/);
    ws.close();
    await eventually(async () => replicasOf('socket') === 0, 20_000, 'asleep after it closed');
  });

  test('wake-timeout: held requests get 503 with Retry-After and a WakeTimeout Event', async () => {
    // A Deployment that never becomes ready: scaled up, but no endpoint is ever published.
    api.apply(sleepyService('never', { 'portico.dev/wake-timeout': '1s' }));
    api.apply(deployment('never', 0));
    await known('never');
    const reply = await get(follower.http, 'never.test', '/');
    assert.equal(reply.status, 503);
    assert.ok(Number(reply.headers['retry-after']) > 0);
    assert.equal(replicasOf('never'), 1, 'the wake was asked for');
    await eventually(async () => serviceEvents('never', 'WakeTimeout').length === 1, 15_000, 'a WakeTimeout Event');
  });

  test('bad annotations and a missing scale target: Warning Events, and the Service is never put to sleep', async () => {
    // Problems are written as Events by the leader; with 2 s leases a loaded machine can
    // change leaders, and the new one writes the Event again: at least one is the promise.
    await app('bad', { 'portico.dev/sleep-after': 'soon' }, { invalid: true });
    await eventually(async () => serviceEvents('bad', 'InvalidAnnotation').length >= 1, 15_000, 'an InvalidAnnotation Event');
    await app('ghost', { 'portico.dev/sleep-after': '500ms', 'portico.dev/scale-target': 'deployment/missing' });
    await eventually(async () => serviceEvents('ghost', 'ScaleTargetNotFound').length >= 1, 15_000, 'a ScaleTargetNotFound Event').catch((err: Error) => {
      // What there was instead, for the next reader of a failure.
      const seen = api.list('Event', 'default').map((e) => {
        const ev = e as KubeObj & { involvedObject?: { name?: string }; reason?: string; reportingInstance?: string };
        return `${ev.involvedObject?.name}/${ev.reason}@${ev.reportingInstance}`;
      });
      throw new Error(`${err.message}; Events: ${seen.join(', ')}; scale reads of missing: ${api.requests.filter((r) => r.name === 'missing').length}`);
    });
    await delay(1500);
    assert.equal(replicasOf('bad'), 1);
    assert.equal(replicasOf('ghost'), 1);
    assert.equal(scaleWrites('bad').length + scaleWrites('ghost').length, 0);
  });
});
