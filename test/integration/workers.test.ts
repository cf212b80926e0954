// Black-box: --workers 2. The primary translates once and ships the routing config;
// every worker serves every listener; a change reaches all of them; a killed worker
// is replaced while the other keeps serving; /metrics adds the workers up.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get } from '../support/http.ts';
import { freePort, gateway, gatewayClass, httpRoute } from '../support/gateway-objects.ts';

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
    portico = await startPortico(['--manifests', dir.path, '--workers', '2']);
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

  test('/metrics adds up the workers', async () => {
    const before = await requestsFor('new.local');
    for (let i = 0; i < 10; i++) await get(portico.http, 'new.local', '/');
    assert.equal(await requestsFor('new.local'), before + 10);
    assert.equal((await get(portico.admin, 'localhost', '/readyz')).status, 200);
  });

  test('a killed worker is replaced; the other keeps serving', async () => {
    const known = servers('web.local');
    const [victim] = [...known];
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
