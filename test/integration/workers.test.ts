// Black-box: --workers 2. The primary translates once and ships the routing config;
// every worker serves every listener; a change reaches all of them; a killed worker
// is replaced while the other keeps serving; /metrics adds the workers up; SIGTERM
// drains every worker.
import http from 'node:http';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, settledCount, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';

const BIN = fileURLToPath(new URL('../../bin/portico.js', import.meta.url));

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

describe('--workers 2', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let echo: Echo;

  /** pids of the processes that logged access lines for `host`. */
  const servers = (host: string) => new Set(portico.logs.filter((l) => l.kind === 'access' && l.host === host).map((l) => l.pid as number));

  before(async () => {
    echo = await startEchoServer({ name: 'web' });
    dir.write('base.yaml', [ingressClass('portico'), ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }), ...serviceWithEndpoints('web', [echo.port])]);
    // A fixed port, as in production: the workers each bind it (SO_REUSEPORT), where port 0 goes through the primary.
    portico = await startPortico(['--manifests', dir.path, '--workers', '2', '--http-port', String(await freePort())]);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0, 'exits 0 on SIGTERM');
    await echo?.close();
    dir.cleanup();
  });

  test('both workers serve, and a new Ingress reaches both', async () => {
    const ready = portico.logs.find((l) => String(l.msg).startsWith('portico ready'))!;
    assert.equal(ready.workers, 2);
    for (let i = 0; i < 20; i++) assert.equal((await get(portico.http, 'web.local', '/')).status, 200);
    await eventually(async () => servers('web.local').size === 2, 5000, 'access lines from two workers');
    assert.ok(!servers('web.local').has(portico.child.pid!), 'the primary serves no traffic');

    dir.write('new.yaml', [ingress('new', { rules: [{ host: 'new.local', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await get(portico.http, 'new.local', '/')).status === 200, 5000, 'the new host serves');
    // Each request is a new connection, spread over the workers: all must know the route.
    for (let i = 0; i < 20; i++) assert.equal((await get(portico.http, 'new.local', '/')).status, 200);
    await eventually(async () => servers('new.local').size === 2, 5000, 'both workers served the new host');
  });

  test('an EndpointSlice change reaches both workers as an endpoint delta: no new table anywhere', async () => {
    const pods = [await startEchoServer({ name: 'moving' }), await startEchoServer({ name: 'moving' })];
    try {
      const slice = (pod: Echo) => ({
        apiVersion: 'discovery.k8s.io/v1',
        kind: 'EndpointSlice',
        metadata: { name: 'moving-pods', namespace: 'default', labels: { 'kubernetes.io/service-name': 'moving' } },
        addressType: 'IPv4',
        ports: [{ name: 'http', port: pod.port, protocol: 'TCP' }],
        endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true } }],
      });
      dir.write('moving.yaml', [
        ingress('moving', { rules: [{ host: 'moving.local', paths: [{ path: '/', service: 'moving' }] }] }),
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'moving', namespace: 'default' }, spec: { ports: [{ name: 'http', port: 80, targetPort: 'http' }] } },
      ]);
      dir.write('moving-slice.yaml', [slice(pods[0]!)]);
      const pod = async () => (await get(portico.http, 'moving.local', '/')).json<{ pod: string }>().pod;
      await eventually(async () => (await pod()) === `moving-${pods[0]!.port}`, 5000, 'the first pod serves');
      // Every rebuild of the files' first reads is logged (a partly written file can take two).
      const rebuilds = await settledCount(() => portico.logs.filter((l) => l.msg === 'route table updated').length);
      const metricsText = async () => (await get(portico.admin, 'localhost', '/metrics')).text;
      const updates = (text: string) => Number(/^portico_endpoint_updates_total (\d+)/m.exec(text)?.[1] ?? 0);
      const before = updates(await metricsText());

      dir.write('moving-slice.yaml', [slice(pods[1]!)]);
      await eventually(async () => (await pod()) === `moving-${pods[1]!.port}`, 5000, 'the second pod serves');
      // New connections spread over the workers: every one of them moved.
      for (let i = 0; i < 20; i++) assert.equal(await pod(), `moving-${pods[1]!.port}`);
      const upstream = `127.0.0.1:${pods[1]!.port}`;
      await eventually(async () => new Set(portico.logs.filter((l) => l.kind === 'access' && l.upstream === upstream).map((l) => l.pid)).size === 2, 5000, 'both workers reached the new pod');
      assert.equal(portico.logs.filter((l) => l.msg === 'route table updated').length, rebuilds, 'no route table was built');
      assert.equal(updates(await metricsText()), before + 1, 'one backend moved');
      const routes = JSON.parse((await get(portico.admin, 'localhost', '/routes')).text) as { hosts: Record<string, Record<string, { backend: { endpoints: string[] } }>> };
      assert.deepEqual(routes.hosts['moving.local']!['/']!.backend.endpoints, [upstream], '/routes shows the pod in service');

      // A worker that starts after the move (a replacement) gets the moved addresses before its config.
      const movedBy = new Set(portico.logs.filter((l) => l.kind === 'access' && l.upstream === upstream).map((l) => l.pid as number));
      const [victim] = [...movedBy];
      process.kill(victim!, 'SIGKILL');
      await portico.waitForLog((l) => String(l.msg).includes(`worker ${victim} exited`), 5000);
      await eventually(
        async () => {
          assert.equal(await pod(), `moving-${pods[1]!.port}`, 'every worker sends to the new pod');
          return portico.logs.some((l) => l.kind === 'access' && l.upstream === upstream && !movedBy.has(l.pid as number));
        },
        10_000,
        'the replacement worker reaches the new pod',
      );
    } finally {
      await Promise.all(pods.map((p) => p.close()));
    }
  });

  test('Gateway listeners are bound by every worker', async () => {
    const port = await freePort();
    dir.write('gateway.yaml', [
      gatewayClass(),
      gateway('gw', [{ name: 'http', port, protocol: 'HTTP' }]),
      httpRoute('gw-route', { parentRefs: [{ name: 'gw' }], hostnames: ['gw.local'], rules: [{ backendRefs: [{ name: 'web', port: 80 }] }] }),
    ]);
    await eventually(async () => (await get(port, 'gw.local', '/').catch(() => ({ status: 0 }))).status === 200, 5000, 'the Gateway port serves');
    for (let i = 0; i < 20; i++) assert.equal((await get(port, 'gw.local', '/')).status, 200);
    await eventually(async () => servers('gw.local').size === 2, 5000, 'both workers served the Gateway port');
  });

  test('a second portico on the port the workers share refuses to start; the first keeps serving', async () => {
    const second = spawn(process.execPath, [BIN, '--manifests', dir.path, '--workers', '2', '--http-port', String(portico.http), '--https-port', '0', '--admin-port', '0', '--bind', '127.0.0.1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    second.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    second.stdout!.resume();
    // One that started anyway would serve beside the first: stopped here, so the test fails rather than hangs.
    const started = setTimeout(() => second.kill('SIGKILL'), 20_000);
    const code = await new Promise<number | null>((resolve) => second.once('close', resolve));
    clearTimeout(started);
    assert.equal(code, 1, `exits 1 (stderr: ${stderr})`);
    assert.deepEqual(stderr.trim().split('\n'), [`portico: --http-port: cannot listen on 127.0.0.1:${portico.http}: address already in use`]);
    for (let i = 0; i < 20; i++) assert.equal((await get(portico.http, 'web.local', '/')).status, 200);
  });

  test('/metrics adds up the workers', async () => {
    const before = await requestsFor('new.local');
    for (let i = 0; i < 10; i++) await get(portico.http, 'new.local', '/');
    assert.equal(await requestsFor('new.local'), before + 10);
    assert.equal((await get(portico.admin, 'localhost', '/readyz')).status, 200);
  });

  test('a killed worker is replaced; the other keeps serving', async () => {
    const known = servers('web.local');
    // A live one (an earlier test replaced a worker too).
    const [victim] = [...known].filter((pid) => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    });
    process.kill(victim!, 'SIGKILL');
    await portico.waitForLog((l) => String(l.msg).includes(`worker ${victim} exited`), 5000);
    for (let i = 0; i < 10; i++) assert.equal((await get(portico.http, 'web.local', '/')).status, 200);
    // The replacement gets the whole config and serves too.
    await eventually(
      async () => {
        await get(portico.http, 'web.local', '/');
        return [...servers('web.local')].some((pid) => !known.has(pid));
      },
      10_000,
      'a new worker serves',
    );
  });

  async function requestsFor(host: string): Promise<number> {
    const text = (await get(portico.admin, 'localhost', '/metrics')).text;
    let sum = 0;
    for (const line of text.split('\n')) if (line.startsWith('portico_requests_total{') && line.includes(`host="${host}"`)) sum += Number(line.split(' ').at(-1));
    return sum;
  }
});

describe('--workers 2 on SIGTERM', () => {
  test('every worker stops accepting, finishes its requests in flight, then portico exits 0', async () => {
    // A backend that holds every request until the test answers it.
    const held: http.ServerResponse[] = [];
    const backend = http.createServer((_req, res) => held.push(res));
    await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
    const dir = new ManifestDir();
    dir.write('slow.yaml', [
      ingressClass('portico'),
      ingress('slow', { rules: [{ host: 'slow.local', paths: [{ path: '/', service: 'slow' }] }] }),
      ...serviceWithEndpoints('slow', [(backend.address() as AddressInfo).port]),
    ]);
    let portico: PorticoProcess | undefined;
    try {
      portico = await startPortico(['--manifests', dir.path, '--workers', '2', '--shutdown-grace', '20s']);
      const proxy = portico;
      // Four connections, dealt round-robin: two in flight on each worker.
      const inFlight = Array.from({ length: 4 }, () =>
        get(proxy.http, 'slow.local', '/').then(
          (r) => `${r.status} ${r.text}`,
          (err: Error) => `failed: ${err.message}`,
        ),
      );
      await eventually(async () => held.length === 4, 5000, 'four requests held by the backend');

      const exited = proxy.stop();
      // The listen socket closes once every worker has stopped accepting.
      await eventually(
        () => get(proxy.http, 'other.local', '/', { timeoutMs: 1000 }).then(() => false, (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED'),
        10_000,
        'new connections refused',
      );
      for (const res of held) res.end('done');
      assert.deepEqual(await Promise.all(inFlight), ['200 done', '200 done', '200 done', '200 done']);
      assert.equal(await exited, 0, 'exits 0 once drained');
      const servers = new Set(proxy.logs.filter((l) => l.kind === 'access' && l.host === 'slow.local' && l.status === 200).map((l) => l.pid));
      assert.equal(servers.size, 2, 'both workers drained their requests and logged them');
    } finally {
      // Also when portico never got ready: the backend must close, or the test file hangs.
      portico?.child.kill('SIGKILL');
      for (const res of held) if (!res.writableEnded) res.end();
      backend.closeAllConnections();
      await new Promise((resolve) => backend.close(resolve));
      dir.cleanup();
    }
  });
});
