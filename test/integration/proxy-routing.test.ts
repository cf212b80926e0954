// The proxy routes by host and path and forwards requests and responses faithfully.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { send, get } from '../support/http.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

describe('proxy: routing and forwarding', () => {
  let web: Backend;
  let api: Backend;
  let hop: Backend;
  let proxy: Proxy;
  const accessLog: { status: number; upstream: string; requestId: string; host: string; error: string }[] = [];

  before(async () => {
    web = await startBackend('web');
    api = await startBackend('api');
    // Answers with hop-by-hop headers that must not reach the client.
    hop = await startBackend('hop', (_req, res) => {
      res.writeHead(200, { connection: 'keep-alive, x-internal', 'x-internal': 'secret', 'keep-alive': 'timeout=5', 'x-kept': 'yes', 'set-cookie': ['a=1', 'b=2'] });
      res.end('hop');
    });
    proxy = await startProxy(
      routing(
        [
          route('web.test', '/', backend('web', [web.port])),
          route('web.test', '/api', backend('api', [api.port])),
          route('web.test', '/exact', backend('api', [api.port]), { pathType: 'Exact' }),
          route('*.wild.test', '/', backend('api', [api.port])),
          route('hop.test', '/', backend('hop', [hop.port])),
          route('missing.test', '/', backend('missing', [], { error: 'ServiceNotFound' })),
          route('empty.test', '/', backend('empty', [])),
        ],
        route('', '/', backend('web', [web.port])),
      ),
      { accessLog: (ctx, status, _bytes, _ms, upstream) => accessLog.push({ status, upstream, requestId: ctx.requestId, host: ctx.host, error: ctx.error }) },
    );
  });

  after(async () => {
    await proxy?.close();
    await Promise.all([web?.close(), api?.close(), hop?.close()]);
  });

  test('routes by host and path: longest prefix, exact, wildcard, default backend', async () => {
    assert.equal((await get(proxy.port, 'web.test', '/')).json().service, 'web');
    assert.equal((await get(proxy.port, 'web.test', '/api/users')).json().service, 'api');
    assert.equal((await get(proxy.port, 'web.test', '/apis')).json().service, 'web', 'prefix matches whole segments');
    assert.equal((await get(proxy.port, 'web.test', '/exact')).json().service, 'api');
    assert.equal((await get(proxy.port, 'web.test', '/exact/more')).json().service, 'web');
    assert.equal((await get(proxy.port, 'x.wild.test', '/')).json().service, 'api');
    assert.equal((await get(proxy.port, 'WEB.Test:8080', '/api')).json().service, 'api', 'host is matched case-insensitively, without port');
    assert.equal((await get(proxy.port, 'other.test', '/')).json().service, 'web', 'default backend');
  });

  test('404 when nothing matches; the access log names the host and path', async () => {
    const table = routing([route('only.test', '/app', backend('web', [web.port]))]);
    const errors: string[] = [];
    const p = await startProxy(table, { accessLog: (ctx) => void errors.push(ctx.error) });
    try {
      const r = await get(p.port, 'only.test', '/elsewhere');
      assert.equal(r.status, 404);
      assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
      assert.equal(r.text, 'no route for this host and path\n');
      assert.match(errors.join('|'), /no route for host only\.test path \/elsewhere/);
    } finally {
      await p.close();
    }
  });

  test('503 for a missing Service or no ready endpoints: the client gets the case, the access log says which', async () => {
    const missing = await get(proxy.port, 'missing.test', '/');
    assert.equal(missing.status, 503);
    assert.equal(missing.text, 'no backend available for this route\n');
    assert.match(accessLog.findLast((l) => l.host === 'missing.test')!.error, /service default\/missing not found/);
    const empty = await get(proxy.port, 'empty.test', '/');
    assert.equal(empty.status, 503);
    assert.equal(empty.text, 'no backend available for this route\n');
    assert.match(accessLog.findLast((l) => l.host === 'empty.test')!.error, /no ready endpoints for service default\/empty port 80/);
  });

  test('400 for dot segments and a bad request target', async () => {
    for (const path of ['/public/../admin', '/a/./b', '/a/%2e%2E/b']) {
      const r = await get(proxy.port, 'web.test', path);
      assert.equal(r.status, 400, path);
      assert.match(r.text, /segment/);
    }
    // A raw request with an authority-form target (only valid for CONNECT).
    const raw = await rawRequest(proxy.port, 'GET web.test:80 HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400 /);
    // OPTIONS * matches the default backend; undici cannot send "*": a 400, not a crash.
    const star = await rawRequest(proxy.port, 'OPTIONS * HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n');
    assert.match(star, /^HTTP\/1\.1 400 /);
    assert.equal((await get(proxy.port, 'web.test', '/')).status, 200, 'still serving');
  });

  test('an absolute-form target is routed by its authority, which the pod gets as Host (RFC 9112 3.2.2)', async () => {
    const raw = await rawRequest(proxy.port, 'GET http://Web.Test:8080/api/x?q=1 HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n', false);
    assert.match(raw, /^HTTP\/1\.1 200 /);
    const body = JSON.parse(raw.slice(raw.indexOf('{'), raw.lastIndexOf('}') + 1)) as { service: string; path: string; query: string; host: string; headers: Record<string, string> };
    assert.equal(body.service, 'api', 'web.test /api, not the default backend that Host: other.test would get');
    assert.equal(body.path, '/api/x', 'origin-form to the pod');
    assert.equal(body.query, 'q=1');
    assert.equal(body.host, 'Web.Test:8080');
    assert.equal(body.headers['x-forwarded-host'], 'Web.Test:8080');
    const http10 = await rawRequest(proxy.port, 'GET http://web.test/ HTTP/1.0\r\n\r\n', false);
    assert.equal(JSON.parse(http10.slice(http10.indexOf('{'), http10.lastIndexOf('}') + 1)).host, 'web.test', 'no Host header at all: the authority is sent');
    const userinfo = await rawRequest(proxy.port, 'GET http://evil.test@web.test/ HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n');
    assert.match(userinfo, /^HTTP\/1\.1 400 /);
  });

  test('method, path, query and Host are forwarded unchanged', async () => {
    const r = await send(proxy.port, { method: 'PATCH', host: 'Web.Test:8080', path: '/api/a/b%20c/?x=1&y=%2F&&z' });
    const body = r.json();
    assert.equal(body.method, 'PATCH');
    assert.equal(body.path, '/api/a/b%20c/');
    assert.equal(body.query, 'x=1&y=%2F&&z');
    assert.equal(body.host, 'Web.Test:8080');
  });

  test('X-Forwarded-* and X-Real-IP are set (a client\'s own replaced), X-Request-Id kept or generated', async () => {
    const r = await send(proxy.port, {
      host: 'web.test',
      headers: { 'x-forwarded-for': '203.0.113.7', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.test', 'x-real-ip': '203.0.113.8', forwarded: 'for=203.0.113.9;proto=https', 'x-forwarded-prefix': '/admin' },
    });
    const h = r.json().headers as Record<string, string>;
    assert.equal(h['x-forwarded-for'], '127.0.0.1', 'an untrusted client\'s chain is replaced');
    assert.equal(h['x-real-ip'], '127.0.0.1');
    assert.equal(h.forwarded, undefined);
    assert.equal(h['x-forwarded-prefix'], undefined);
    assert.equal(h['x-forwarded-proto'], 'http', 'client value replaced');
    assert.equal(h['x-forwarded-host'], 'web.test');
    assert.equal(h['x-forwarded-port'], String(proxy.port));
    assert.match(h['x-request-id'] ?? '', /^[\w-]{8,}$/);

    const second = (await get(proxy.port, 'web.test')).json().headers as Record<string, string>;
    assert.notEqual(second['x-request-id'], h['x-request-id'], 'ids differ between requests');
    assert.equal(second['x-forwarded-for'], '127.0.0.1');

    const kept = await send(proxy.port, { host: 'web.test', headers: { 'x-request-id': 'abc-123' } });
    assert.equal((kept.json().headers as Record<string, string>)['x-request-id'], 'abc-123');
    const logged = accessLog.find((l) => l.requestId === 'abc-123');
    assert.ok(logged, 'the access log hook saw the request');
    assert.equal(logged.status, 200);
    assert.equal(logged.upstream, `127.0.0.1:${web.port}`);
  });

  test('hop-by-hop request headers, and those named by Connection, are not forwarded', async () => {
    const r = await send(proxy.port, {
      host: 'web.test',
      headers: { connection: 'keep-alive, x-secret', 'x-secret': '1', 'keep-alive': 'timeout=5', te: 'trailers', 'proxy-connection': 'keep-alive', 'x-normal': 'yes' },
    });
    const h = r.json().headers as Record<string, string>;
    for (const name of ['x-secret', 'keep-alive', 'te', 'proxy-connection']) assert.equal(h[name], undefined, `${name} stripped`);
    assert.notEqual(h.connection, 'keep-alive, x-secret');
    assert.equal(h['x-normal'], 'yes');
  });

  test('hop-by-hop response headers are not passed back; repeated headers are', async () => {
    const r = await get(proxy.port, 'hop.test');
    assert.equal(r.text, 'hop');
    assert.equal(r.headers['x-internal'], undefined);
    assert.equal(r.headers['keep-alive'], undefined);
    assert.equal(r.headers['x-kept'], 'yes');
    assert.deepEqual(r.headers['set-cookie'], ['a=1', 'b=2']);
  });

  test('HEAD gets the headers without a body', async () => {
    const r = await send(proxy.port, { method: 'HEAD', host: 'web.test', path: '/' });
    assert.equal(r.status, 200);
    assert.equal(r.body.length, 0);
    assert.equal(r.headers['x-served-by'], 'web');
  });

  test('requests are counted in portico_requests_total by route and status', async () => {
    await get(proxy.port, 'web.test', '/api/count');
    const text = await proxy.registry.metrics();
    assert.match(text, /portico_requests_total\{namespace="default",ingress="test",host="web\.test",path="\/api",service="api",status="200"\} [1-9]/);
    assert.match(text, /portico_upstream_latency_seconds_count\{namespace="default",ingress="test",service="api"\} [1-9]/);
    assert.match(text, /portico_upstream_errors_total\{namespace="default",ingress="test",service="missing",kind="service_unavailable"\} 1/);
  });
});

/**
 * Sends `text` as is and reads until the server closes. With `halfClose` the client
 * ends its side right after; a request that goes to a pod must not (a FIN while the
 * answer is pending means the client left).
 */
function rawRequest(port: number, text: string, halfClose = true): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => (halfClose ? socket.end(text) : socket.write(text)));
    let out = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('end', () => resolve(out));
    socket.on('error', reject);
  });
}
