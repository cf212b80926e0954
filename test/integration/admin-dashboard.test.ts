// The admin listener's dashboard: its files, /dashboard/state and /routes/explain over
// real HTTP, and the same loopback / --admin-routes-allow rule as /routes.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Registry } from 'prom-client';
import { createAdminServer } from '../../src/admin/server.ts';
import { buildRouteTable, RouteTableHolder } from '../../src/routing/table.ts';
import { compileForTest, sampleConfig } from '../unit/admin/fixtures.ts';
import { send } from '../support/http.ts';

describe('admin dashboard', () => {
  let server: http.Server;
  let port: number;

  before(async () => {
    const holder = new RouteTableHolder(buildRouteTable(3, sampleConfig(), compileForTest));
    holder.ready = true;
    server = createAdminServer({ holder, registry: new Registry(), listeners: () => ({ http: 8080, https: 8443, admin: 9090 }), ingressHosts: (key) => (key === 'shop/legacy' ? ['legacy.example.org'] : []) });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('/ is the dashboard page; its script and style come from the same origin, under a strict CSP', async () => {
    const page = await send(port, { path: '/' });
    assert.equal(page.status, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'; script-src 'self'/);
    const scripts = [...page.text.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    assert.deepEqual(scripts.sort(), ['/dashboard/app.js', '/dashboard/favicon.svg', '/dashboard/style.css']);
    for (const path of scripts) {
      const file = await send(port, { path });
      assert.equal(file.status, 200, path);
      assert.ok(file.body.length > 100, path);
    }
    assert.match(String((await send(port, { path: '/dashboard/app.js' })).headers['content-type']), /javascript/);
  });

  test('/dashboard/state: table version, listeners, and every host with its totals', async () => {
    const r = await send(port, { path: '/dashboard/state' });
    assert.equal(r.status, 200);
    const state = r.json<{ version: number; listeners: Record<string, number>; hosts: Record<string, { requests: number }> }>();
    assert.equal(state.version, 3);
    assert.deepEqual(state.listeners, { http: 8080, https: 8443, admin: 9090 });
    assert.deepEqual(Object.keys(state.hosts).sort(), ['*', '*.example.com', 'shop.example.com']);
  });

  test('/routes/explain answers JSON for a match and for a miss; a missing url is a 400 that says how to ask', async () => {
    const hit = await send(port, { path: `/routes/explain?url=${encodeURIComponent('http://shop.example.com/api/v1')}` });
    assert.equal(hit.status, 200);
    assert.equal(hit.json<{ reason: string; route: { object: string } }>().route.object, 'shop/web');
    const down = await send(port, { path: `/routes/explain?url=${encodeURIComponent('shop.example.com/old/x')}` });
    assert.equal(down.json<{ reason: string }>().reason, 'no-endpoints');
    const legacy = await send(port, { path: `/routes/explain?url=${encodeURIComponent('legacy.example.org/')}` });
    assert.match(legacy.json<{ message: string }>().message, /shop\/legacy.*another controller/);
    const missing = await send(port, { path: '/routes/explain' });
    assert.equal(missing.status, 400);
    assert.match(missing.text, /url=/);
  });

  test('the dashboard, its state and explain are for loopback and --admin-routes-allow only', async () => {
    const holder = new RouteTableHolder(buildRouteTable(1, sampleConfig(), compileForTest));
    const guarded = createAdminServer({ holder, registry: new Registry(), routesAllowed: (ip) => ip.startsWith('10.9.') });
    const handler = guarded.listeners('request')[0] as (req: unknown, res: unknown) => void;
    const ask = (path: string, peer: string) =>
      new Promise<number>((resolve) => {
        handler({ method: 'GET', url: path, headers: {}, socket: { remoteAddress: peer } }, { writeHead: (status: number) => resolve(status), end: () => {} });
      });
    for (const path of ['/', '/dashboard/app.js', '/dashboard/state', '/routes/explain?url=a.test/']) {
      assert.equal(await ask(path, '10.1.2.3'), 403, path);
      assert.equal(await ask(path, '10.9.0.7'), 200, path);
      assert.equal(await ask(path, '127.0.0.1'), 200, path);
    }
  });
});
