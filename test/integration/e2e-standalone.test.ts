// Black-box: the portico CLI in standalone mode against real backends on loopback:
// hot reload, broken files, error statuses, WebSocket, large bodies, forwarded headers,
// admin endpoints.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { startEchoServer } from '../../examples/echo-server.ts';
import { eventually, startPortico, type PorticoProcess } from '../support/portico-process.ts';
import { ManifestDir, ingress, ingressClass, serviceWithEndpoints } from '../support/objects.ts';
import { get, send } from '../support/http.ts';
import { closedPort } from '../support/ports.ts';

type Echo = Awaited<ReturnType<typeof startEchoServer>>;

describe('standalone mode, black box', () => {
  const dir = new ManifestDir();
  let portico: PorticoProcess;
  let web: Echo;
  let api: Echo;
  let deadPort: number;

  before(async () => {
    web = await startEchoServer({ name: 'web' });
    api = await startEchoServer({ name: 'api' });
    deadPort = await closedPort();
    dir.write('class.yaml', [ingressClass('portico')]);
    dir.write('apps/web.yaml', [
      ingress('web', { rules: [{ host: 'web.local', paths: [{ path: '/', service: 'web' }] }] }),
      ...serviceWithEndpoints('web', [web.port]),
    ]);
    dir.write('apps/api.json', JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        ingress('api', { rules: [{ host: 'api.local', paths: [{ path: '/v1', service: 'api' }] }] }),
        ...serviceWithEndpoints('api', [api.port]),
        { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'ignored' }, spec: {} },
      ],
    }));
    dir.write('errors.yaml', [
      ingress('errors', {
        rules: [{
          host: 'errors.local',
          paths: [
            { path: '/no-service', service: 'missing' },
            { path: '/no-endpoints', service: 'empty' },
            { path: '/refused', service: 'dead' },
          ],
        }],
      }),
      ...serviceWithEndpoints('empty', [web.port], { ready: [false] }),
      ...serviceWithEndpoints('dead', [deadPort]),
    ]);
    portico = await startPortico(['--manifests', dir.path]);
  });

  after(async () => {
    assert.equal(await portico?.stop(), 0, 'exits 0 on SIGTERM');
    await web?.close();
    await api?.close();
    dir.cleanup();
  });

  test('routes by host and path, from YAML and from a JSON List with an unknown kind in it', async () => {
    assert.equal((await get(portico.http, 'web.local', '/anything')).json().service, 'web');
    assert.equal((await get(portico.http, 'api.local', '/v1/users')).json().service, 'api');
    assert.equal((await get(portico.http, 'api.local', '/v2')).status, 404);
  });

  test('method, path, query and Host are forwarded unchanged', async () => {
    const r = await send(portico.http, { method: 'PATCH', host: 'Web.Local:8080', path: '/a/b%20c/?x=1&y=%2F' });
    const body = r.json();
    assert.equal(body.method, 'PATCH');
    assert.equal(body.path, '/a/b%20c/');
    assert.equal(body.query, 'x=1&y=%2F');
    assert.equal(body.host, 'Web.Local:8080');
  });

  test('X-Forwarded-*, X-Real-IP and X-Request-Id are set; a client\'s own forwarding headers do not reach the pod', async () => {
    const r = await send(portico.http, {
      host: 'web.local',
      path: '/',
      headers: { 'x-forwarded-for': '203.0.113.7', 'x-real-ip': '203.0.113.8', forwarded: 'for=203.0.113.9', 'x-original-url': '/admin' },
    });
    const h = r.json().headers as Record<string, string>;
    assert.equal(h['x-forwarded-for'], '127.0.0.1', 'no trusted proxies: the spoofed chain is replaced');
    assert.equal(h['x-real-ip'], '127.0.0.1');
    assert.equal(h.forwarded, undefined);
    assert.equal(h['x-original-url'], undefined);
    assert.equal(h['x-forwarded-proto'], 'http');
    assert.equal(h['x-forwarded-host'], 'web.local');
    assert.match(h['x-request-id'] ?? '', /^[\w-]{8,}$/);
    const kept = await send(portico.http, { host: 'web.local', headers: { 'x-request-id': 'abc-123' } });
    assert.equal((kept.json().headers as Record<string, string>)['x-request-id'], 'abc-123');
  });

  test('hop-by-hop headers are not forwarded', async () => {
    const r = await send(portico.http, { host: 'web.local', headers: { connection: 'keep-alive, x-secret', 'x-secret': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'proxy-connection': 'keep-alive' } });
    const h = r.json().headers as Record<string, string>;
    for (const name of ['x-secret', 'keep-alive', 'te', 'proxy-connection']) assert.equal(h[name], undefined, `${name} stripped`);
  });

  test('404 without a route, 503 for a missing Service or no ready endpoint, 502 when the pod refuses', async () => {
    const none = await get(portico.http, 'nowhere.local', '/');
    assert.equal(none.status, 404);
    const missing = await get(portico.http, 'errors.local', '/no-service');
    assert.equal(missing.status, 503);
    assert.equal(missing.text, 'no backend available for this route\n', 'no Service name for the client');
    const empty = await get(portico.http, 'errors.local', '/no-endpoints');
    assert.equal(empty.status, 503);
    assert.equal(empty.text, 'no backend available for this route\n');
    const refused = await get(portico.http, 'errors.local', '/refused');
    assert.equal(refused.status, 502);
    for (const r of [none, missing, empty, refused]) assert.doesNotMatch(r.text, /\n\s+at /, 'no stack trace');
    // The detail is in the access log.
    const line = await portico.waitForLog((l) => l.kind === 'access' && l.path === '/no-service');
    assert.match(String(line.error), /missing/);
  });

  test('a 1 MiB POST body reaches the backend intact, and a 1 MiB response comes back intact', async () => {
    const payload = randomBytes(1024 * 1024);
    const r = await send(portico.http, { method: 'POST', host: 'web.local', path: '/upload', body: payload, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(r.status, 200);
    assert.equal(r.json().bodyLength, payload.length);
    assert.equal(r.json().bodySha256, createHash('sha256').update(payload).digest('hex'));
    const big = await get(portico.http, 'web.local', '/?size=1048576');
    assert.equal(big.status, 200);
    assert.equal(big.body.length, 1048576);
  });

  test('WebSocket connections are proxied', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${portico.http}/ws`, { headers: { host: 'web.local' } });
    const reply = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('hello through portico'));
      ws.on('message', (data) => resolve(data.toString()));
      ws.on('error', reject);
    });
    ws.close();
    assert.match(reply, /hello through portico/);
  });

  test('a new file is served, a changed one updated, a deleted one removed', async () => {
    dir.write('later/new.yaml', [ingress('later', { rules: [{ host: 'later.local', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await get(portico.http, 'later.local', '/')).status === 200, 5000, 'new Ingress served');
    dir.write('later/new.yaml', [ingress('later', { rules: [{ host: 'later.local', paths: [{ path: '/', service: 'api' }] }] })]);
    await eventually(async () => (await get(portico.http, 'later.local', '/')).json().service === 'api', 5000, 'changed Ingress served');
    dir.remove('later/new.yaml');
    await eventually(async () => (await get(portico.http, 'later.local', '/')).status === 404, 5000, 'deleted Ingress gone');
  });

  test('an Ingress naming an IngressClass that does not exist is one warning line; served once the class appears', async () => {
    dir.write('typo.yaml', [ingress('typo', { className: 'portcio', rules: [{ host: 'typo.local', paths: [{ path: '/', service: 'web' }] }] })]);
    const warned = await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('Ingress default/typo is not served'), 5000);
    assert.equal(warned.level, 'warn');
    assert.equal(warned.msg, 'Ingress default/typo is not served: spec.ingressClassName "portcio" names no IngressClass (portico serves: portico)');
    assert.equal((await get(portico.http, 'typo.local', '/')).status, 404);
    dir.write('typo-class.yaml', [ingressClass('portcio')]);
    await eventually(async () => (await get(portico.http, 'typo.local', '/')).status === 200, 5000, 'served once its class exists');
    const ignored = (await get(portico.admin, 'x', '/routes')).json().ignoredIngresses as { ingress: string }[];
    assert.ok(!ignored.some((i) => i.ingress === 'default/typo'), 'no longer listed as ignored');
    assert.equal(portico.logs.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('Ingress default/typo is not served')).length, 1, 'warned once');
    dir.remove('typo.yaml');
    dir.remove('typo-class.yaml');
    await eventually(async () => (await get(portico.http, 'typo.local', '/')).status === 404, 5000, 'removed');
  });

  test('a broken file is reported with file and line, keeps its last good objects, and affects nothing else', async () => {
    dir.write('fragile.yaml', [ingress('fragile', { rules: [{ host: 'fragile.local', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await get(portico.http, 'fragile.local', '/')).status === 200, 5000, 'fragile served');
    dir.write('fragile.yaml', 'apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata:\n  name: fragile\n  labels: [unclosed\n');
    const reported = await portico.waitForLog((l) => typeof l.msg === 'string' && l.msg.includes('fragile.yaml') && /:\d+/.test(l.msg), 5000);
    assert.match(reported.msg as string, /fragile\.yaml:\d+/);
    assert.equal((await get(portico.http, 'fragile.local', '/')).status, 200, 'last good version still served');
    assert.equal((await get(portico.http, 'web.local', '/')).status, 200, 'others unaffected');
    await eventually(
      async () => ((await get(portico.admin, 'x', '/routes')).json().problems as { message: string }[]).some((p) => /fragile\.yaml/.test(p.message)),
      5000,
      'the file problem listed in /routes',
    );
    dir.write('fragile.yaml', [ingress('fragile', { rules: [{ host: 'fragile.local', paths: [{ path: '/', service: 'api' }] }] })]);
    await eventually(async () => (await get(portico.http, 'fragile.local', '/')).json().service === 'api', 5000, 'fixed file applied');
    const problems = (await get(portico.admin, 'x', '/routes')).json().problems as { message: string }[];
    assert.ok(!problems.some((p) => /fragile\.yaml/.test(p.message)), 'and gone once fixed');
  });

  test('a request without a route gets an access-log line and is counted with empty route labels', async () => {
    assert.equal((await get(portico.http, 'nothing.test', '/x')).status, 404);
    const line = await portico.waitForLog((l) => l.kind === 'access' && l.host === 'nothing.test', 5000);
    assert.equal(line.status, 404);
    assert.equal(line.path, '/x');
    assert.ok(!('route' in line) && !('upstreamMs' in line), 'no route, no upstream time');
    const metrics = await get(portico.admin, 'x', '/metrics');
    assert.match(metrics.text, /^portico_requests_total\{namespace="",ingress="",host="",path="",service="",status="404"\} [1-9]/m);
  });

  test('the series of a deleted Ingress leave /metrics', async () => {
    dir.write('churn.yaml', [ingress('churn', { rules: [{ host: 'churn.local', paths: [{ path: '/', service: 'web' }] }] })]);
    await eventually(async () => (await get(portico.http, 'churn.local', '/')).status === 200, 5000, 'churn served');
    assert.match((await get(portico.admin, 'x', '/metrics')).text, /portico_requests_total\{[^}]*host="churn\.local"/);
    dir.remove('churn.yaml');
    await eventually(async () => (await get(portico.http, 'churn.local', '/')).status === 404, 5000, 'churn removed');
    const text = (await get(portico.admin, 'x', '/metrics')).text;
    assert.doesNotMatch(text, /ingress="churn"/);
    assert.match(text, /portico_requests_total\{[^}]*host="web\.local"/, 'other Ingresses keep theirs');
  });

  test('admin: healthz, readyz, metrics and routes', async () => {
    assert.equal((await get(portico.admin, 'x', '/healthz')).status, 200);
    assert.equal((await get(portico.admin, 'x', '/readyz')).status, 200);
    const metrics = await get(portico.admin, 'x', '/metrics');
    assert.equal(metrics.status, 200);
    for (const name of ['portico_requests_total', 'portico_upstream_latency_seconds', 'portico_upstream_errors_total', 'portico_route_table_routes', 'portico_route_table_rebuild_seconds', 'portico_config_problems']) {
      assert.match(metrics.text, new RegExp(`^${name}`, 'm'), `${name} exported`);
    }
    const routes = await get(portico.admin, 'x', '/routes');
    const dump = routes.json<{ hosts: Record<string, Record<string, { backend: { endpoints: string[] } }>> }>();
    assert.deepEqual(dump.hosts['web.local']?.['/']?.backend.endpoints, [`127.0.0.1:${web.port}`]);
  });
});
