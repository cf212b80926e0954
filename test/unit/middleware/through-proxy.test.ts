// Policies parsed from annotations, compiled by the real route compiler and served by
// the real proxy and forwarder, in front of a real backend.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Problem } from '../../../src/model/config.ts';
import { parsePolicies } from '../../../src/middleware/registry.ts';
import { backend, route, routing, startBackend, startProxy, type Backend, type Proxy } from '../../integration/proxy-harness.ts';
import { send } from '../../support/http.ts';

describe('policies through the proxy', () => {
  let pod: Backend;
  let proxy: Proxy;

  before(async () => {
    pod = await startBackend('web');
    const problems: Problem[] = [];
    const policies = parsePolicies(
      {
        'portico.dev/max-body-size': '1k',
        'portico.dev/request-headers': 'X-Team: payments',
        'portico.dev/response-headers': 'X-Frame-Options: DENY',
        'portico.dev/rewrite-target': '/',
      },
      { kind: 'Ingress', namespace: 'default', name: 'test' },
      problems,
    );
    assert.deepEqual(problems, []);
    const b = backend('web', [pod.port]);
    proxy = await startProxy(routing([route('shop.example.com', '/api', b, { policies }), route('secure.example.com', '/', b, { tls: true })]));
  });
  after(async () => {
    await proxy?.close();
    await pod?.close();
  });

  test('a body over max-body-size: 413 from Content-Length, nothing reaches the pod', async () => {
    const before = pod.seen.length;
    const r = await send(proxy.port, { method: 'POST', host: 'shop.example.com', path: '/api/x', body: 'x'.repeat(2000) });
    assert.equal(r.status, 413);
    assert.equal(pod.seen.length, before);
  });

  test('a chunked body over max-body-size: 413', async () => {
    const r = await send(proxy.port, { method: 'POST', host: 'shop.example.com', path: '/api/x', headers: { 'transfer-encoding': 'chunked' }, body: 'x'.repeat(5000) });
    assert.equal(r.status, 413);
  });

  test('a body within the limit, request and response headers', async () => {
    const r = await send(proxy.port, { method: 'POST', host: 'shop.example.com', path: '/api/x', body: 'x'.repeat(1000) });
    assert.equal(r.status, 200);
    assert.equal(r.json<{ bodyLength: number }>().bodyLength, 1000);
    assert.equal(r.json<{ headers: Record<string, string> }>().headers['x-team'], 'payments');
    assert.equal(r.headers['x-frame-options'], 'DENY');
    // The pod's own headers pass beside the policy's (read from its raw pairs: the HTTP/1.1 client makes no record for the forwarder).
    assert.equal(r.headers['x-served-by'], 'web');
    assert.equal(r.headers['content-type'], 'application/json');
  });

  // These need the compiler to pass the route to composeChain (src/proxy/compile.ts).
  test('rewrite-target replaces the matched prefix', async () => {
    const r = await send(proxy.port, { host: 'shop.example.com', path: '/api/v1/x?q=1' });
    assert.equal(r.json<{ path: string; query: string }>().path, '/v1/x');
    assert.equal(r.json<{ path: string; query: string }>().query, 'q=1');
  });

  test('a host with TLS is redirected to HTTPS by default', async () => {
    const r = await send(proxy.port, { host: 'secure.example.com', path: '/a?b' });
    assert.equal(r.status, 308);
    assert.equal(r.headers.location, 'https://secure.example.com/a?b');
  });
});
