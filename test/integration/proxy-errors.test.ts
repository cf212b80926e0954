// What the client sees when pods refuse, hang or are too many: 502/504, retries, 413, balance.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { get, send } from '../support/http.ts';
import { backend, closedPort, route, routing, startBackend, startProxy, type Backend, type Proxy } from './proxy-harness.ts';

describe('proxy: upstream failures', () => {
  const backends: Backend[] = [];
  let proxy: Proxy;
  let deadPort: number;
  let web: Backend;
  let slow: Backend;
  const pending: http.ServerResponse[] = [];

  before(async () => {
    web = await startBackend('web');
    // Never answers: the headers timeout fires.
    slow = await startBackend('slow', (_req, res) => {
      pending.push(res);
    });
    backends.push(web, slow);
    for (const name of ['a', 'b', 'c']) backends.push(await startBackend(name));
    deadPort = await closedPort();
    proxy = await startProxy(
      routing([
        route('refused.test', '/', backend('dead', [deadPort])),
        route('retry.test', '/', backend('retry', [deadPort, web.port])),
        route('slow.test', '/', backend('slow', [slow.port])),
        route('spread.test', '/', backend('spread', backends.slice(2).map((b) => b.port))),
        route('limited.test', '/', backend('web', [web.port])),
      ]),
      {
        timeouts: { connect: 2_000, responseHeaders: 300, idle: 2_000 },
        before: (ctx) => {
          if (ctx.host === 'limited.test') ctx.maxBodyBytes = 1024;
        },
      },
    );
  });

  after(async () => {
    for (const res of pending) res.destroy();
    await proxy?.close();
    await Promise.all(backends.map((b) => b.close()));
  });

  test('502 with a short text body when the only pod refuses connections', async () => {
    const r = await get(proxy.port, 'refused.test');
    assert.equal(r.status, 502);
    assert.equal(r.headers['content-type'], 'text/plain; charset=utf-8');
    assert.match(r.text, new RegExp(`connection refused by pod 127\\.0\\.0\\.1:${deadPort}`));
    assert.doesNotMatch(r.text, /\n\s+at /);
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="dead",kind="connect"\} [1-9]/);
  });

  test('a refused connection is retried once on another endpoint, body included', async () => {
    for (let i = 0; i < 4; i++) {
      const r = await send(proxy.port, { method: 'POST', host: 'retry.test', path: '/up', body: 'payload-' + i });
      assert.equal(r.status, 200, `request ${i}`);
      assert.equal(r.json().service, 'web');
      assert.equal(r.json().bodyLength, ('payload-' + i).length);
    }
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="retry",kind="connect"\} [1-9]/, 'the dead endpoint was tried');
  });

  test('504 when the pod does not answer in time', async () => {
    const r = await get(proxy.port, 'slow.test');
    assert.equal(r.status, 504);
    assert.match(r.text, /did not answer within 300 ms/);
    assert.match(await proxy.registry.metrics(), /portico_upstream_errors_total\{[^}]*service="slow",kind="timeout"\} [1-9]/);
  });

  test('load is spread over three endpoints', async () => {
    const counts: Record<string, number> = {};
    for (let i = 0; i < 30; i++) {
      const service = (await get(proxy.port, 'spread.test')).json().service as string;
      counts[service] = (counts[service] ?? 0) + 1;
    }
    assert.deepEqual(Object.keys(counts).sort(), ['a', 'b', 'c']);
    for (const [name, n] of Object.entries(counts)) assert.ok(n >= 5, `${name} got ${n} of 30`);
  });

  test('concurrent load is spread too', async () => {
    const replies = await Promise.all(Array.from({ length: 30 }, () => get(proxy.port, 'spread.test')));
    const services = new Set(replies.map((r) => r.json().service));
    assert.equal(services.size, 3);
  });

  test('413 for a Content-Length over the limit, before anything reaches the pod', async () => {
    const before = web.seen.length;
    const r = await send(proxy.port, { method: 'POST', host: 'limited.test', body: Buffer.alloc(2048) });
    assert.equal(r.status, 413);
    assert.match(r.text, /larger than the limit of 1024 bytes/);
    assert.equal(web.seen.length, before, 'the pod saw nothing');
    const small = await send(proxy.port, { method: 'POST', host: 'limited.test', body: Buffer.alloc(1000) });
    assert.equal(small.status, 200);
    assert.equal(small.json().bodyLength, 1000);
  });

  test('413 for a chunked body that streams past the limit', async () => {
    const r = await chunkedPost(proxy.port, 'limited.test', 20, 256);
    assert.equal(r.status, 413);
    assert.match(r.text, /larger than the limit of 1024 bytes/);
    const ok = await chunkedPost(proxy.port, 'limited.test', 3, 256);
    assert.equal(ok.status, 200);
    assert.equal(JSON.parse(ok.text).bodyLength, 768);
  });
});

/** POSTs `chunks` chunks of `size` bytes with Transfer-Encoding: chunked, a few ms apart. */
function chunkedPost(port: number, host: string, chunks: number, size: number): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ hostname: '127.0.0.1', port, method: 'POST', path: '/', headers: { host }, agent: false });
    let answered = false;
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, text }));
      res.on('error', reject);
    });
    // Once answered, a write error (the proxy closed the connection) is expected.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    let sent = 0;
    const next = () => {
      if (answered || req.destroyed) return;
      if (sent === chunks) return void req.end();
      sent++;
      req.write(Buffer.alloc(size, 120));
      setTimeout(next, 5);
    };
    next();
  });
}
